"""Where the SimpleToM release comes from, and how a copy is known to be whole and unchanged.

No official sha256s exist and known copies are re-serialized, so the default pin is structural (four
configs, 1,147 rows each, three questions per story); a download's sha256s are recorded and re-checked
before each use. Checksums given with `sha256=` check downloads and local copies instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from pytest_tom.errors import TomConfigError, TomDataError
from pytest_tom.evals.simpletom import data
from pytest_tom.evals.simpletom.data import OFFICIAL_ROWS, SimpleToMSample
from pytest_tom.fetch import MANIFEST, REFETCH, Limits, check_recorded, fetch_files, manifest_files, sha256_file, write_manifest
from pytest_tom.framework.release import Release, pins_key, pins_setting


def parse_setting(value: str) -> dict[str, str] | None:
    """The `sha256` setting: None (structural pin), `config=sha256,...`, or a sha256sum manifest path."""
    pins = pins_setting(value, key=_config_of, what=f"<config>/{data.FILE}")
    if pins is None:
        return None
    unknown = sorted(set(pins) - set(data.CONFIGS))
    if unknown:
        raise TomConfigError(f"checksums: {unknown[0]!r} is not a SimpleToM config ({', '.join(data.CONFIGS)})")
    missing = [c for c in data.CONFIGS if c not in pins]
    if missing:
        raise TomConfigError(f"checksums: no sha256 for {', '.join(missing)} (give all four configs)")
    return pins


def _config_of(listed: PurePosixPath) -> str:
    parts = listed.parts
    return parts[-2] if len(parts) >= 2 and parts[-1] == data.FILE else parts[-1]


def release(source_url: str, pins: Mapping[str, str] | None, *, limits: Limits | None = None) -> Release:
    """A local copy first (checked by `load`), then the download cache (re-checked against its manifest), then a download."""
    return Release(
        "simpletom", ("simpletom", ""), lambda c: any(data.path_of(c, config).is_file() for config in data.CONFIGS),
        data.OFFICIAL_REVISION if pins is None else pins_key(pins),
        lambda c: (c / MANIFEST).is_file() or any(data.path_of(c, config).exists() for config in data.CONFIGS),
        lambda c: check_manifest(c, pins), lambda c: download(source_url, c, pins, limits=limits),
        f"Point --tom-data-dir (or TOM_DATA_DIR) at a folder holding simpletom/<config>/{data.FILE} for "
        f"{', '.join(data.CONFIGS)}, or pass --tom-download to fetch them from the Hugging Face dataset allenai/SimpleToM "
        f"at revision {data.OFFICIAL_REVISION[:12]} (checked for completeness; SimpleToM is for evaluation only, never for "
        "training).", label="SimpleToM")


def download(base_url: str, dest: Path, pins: Mapping[str, str] | None, *, limits: Limits | None = None) -> None:
    """Fetch the four configs into `dest`, check them, then record their sha256s: a rejected copy is never used."""
    base = base_url.rstrip("/") + "/"
    (dest / MANIFEST).unlink(missing_ok=True)
    digests = fetch_files(base, dest, {f"{c}/{data.FILE}": pins[c] if pins else None for c in data.CONFIGS}, limits=limits)
    rel = data.read_release(dest)  # a malformed record names the downloaded file, line and field
    try:
        data.check_whole(rel, expect_rows=None if pins else OFFICIAL_ROWS)
    except TomDataError as exc:
        raise TomDataError(f"the download from {base} is not the pinned SimpleToM release ({exc}); it is not used",
                           path=dest) from None
    write_manifest(dest / MANIFEST, {
        "source": base, "checked": "sha256 pins" if pins else "structure (row counts, three questions per story)",
        "files": digests})


def check_manifest(folder: Path, pins: Mapping[str, str] | None) -> None:
    """Fail, naming the file and what to do, unless `folder` is a verified download that has not changed since."""
    recorded = manifest_files(folder)
    for config in data.CONFIGS:
        want = recorded.get(f"{config}/{data.FILE}")
        if pins is not None and want != pins[config]:
            raise TomDataError(f"this downloaded copy was not checked against the sha256 {pins[config]} given in "
                               f"--tom-set simpletom.sha256; {REFETCH}", path=data.path_of(folder, config))
        if want is None:
            raise TomDataError(f"this downloaded copy has no recorded sha256; {REFETCH}", path=data.path_of(folder, config))
    check_recorded(folder, {f"{c}/{data.FILE}": recorded[f"{c}/{data.FILE}"] for c in data.CONFIGS})


def load(folder: Path, pins: Mapping[str, str] | None, *, verified: bool, partial: bool) -> list[SimpleToMSample]:
    """Every sample of the copy in `folder`; a local copy (not `partial`) must be whole and match custom pins.

    Malformed records are reported first (file, line, field), then missing configs and rows.
    """
    rel = data.read_release(folder)
    if not verified and not partial:
        data.check_whole(rel, expect_rows=None if pins else OFFICIAL_ROWS)
        if pins is not None:
            for config in data.CONFIGS:
                got = sha256_file(data.path_of(folder, config))
                if got != pins[config]:
                    raise TomDataError(f"the SimpleToM release is not the one given in --tom-set simpletom.sha256: this file "
                                       f"has sha256 {got}, not {pins[config]}: {data.PARTIAL_ADVICE}",
                                       path=data.path_of(folder, config))
    return data.samples(rel)
