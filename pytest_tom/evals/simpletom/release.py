"""Where the SimpleToM release comes from, and how a copy is known to be whole and unchanged.

The official files' sha256s are not published with the release, and the copies this project
was developed against are re-serialized (their bytes differ from the official `test.jsonl`
files), so the default pin is structural, not a checksum: a copy must hold the four configs
with the pinned revision's row counts (1,147 each) and every story its three questions. A
download is checked the same way, then its sha256s are written to a manifest next to it, and
the cached copy is re-checked against that manifest before every later use (as FANToM's
archive is). A user who knows the official checksums (or mirrors another revision) gives
them with `sha256=`: downloads and local copies are then checked against them.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from pytest_tom.errors import TomConfigError, TomDataError
from pytest_tom.framework.base import DataSource
from pytest_tom.evals.simpletom.data import (
    CONFIGS,
    FILE,
    OFFICIAL_REVISION,
    OFFICIAL_ROWS,
    PARTIAL_ADVICE,
    SimpleToMSample,
    check_whole,
    path_of,
    read_release,
    samples,
)
from pytest_tom.fetch import MANIFEST, REFETCH, Limits, cached_or_fetched, download_verified, parse_pins, read_pins, sha256_file


def parse_setting(value: str) -> dict[str, str] | None:
    """The `sha256` setting: None (structural pin), `config=sha256,...`, or a sha256sum manifest path."""
    text = str(value or "").strip()
    if not text:
        return None
    pins = parse_pins(text) if "=" in text else read_manifest(Path(text).expanduser())
    unknown = sorted(set(pins) - set(CONFIGS))
    if unknown:
        raise TomConfigError(f"checksums: {unknown[0]!r} is not a SimpleToM config ({', '.join(CONFIGS)})")
    missing = [c for c in CONFIGS if c not in pins]
    if missing:
        raise TomConfigError(f"checksums: no sha256 for {', '.join(missing)} (give all four configs)")
    return pins


def read_manifest(path: Path) -> dict[str, str]:
    """A sha256sum-format file (`<sha256>  <config>/test.jsonl` per line) as config -> sha256."""
    return read_pins(path, key=_config_of, what="<config>/test.jsonl")


def _config_of(listed: PurePosixPath) -> str:
    parts = listed.parts
    return parts[-2] if len(parts) >= 2 and parts[-1] == FILE else parts[-1]


def cache_key(pins: Mapping[str, str] | None) -> str:
    """Folder of the download cache: the pinned revision, or a digest of custom checksums."""
    if pins is None:
        return OFFICIAL_REVISION
    digest = hashlib.sha256("\n".join(f"{v}  {k}" for k, v in sorted(pins.items())).encode()).hexdigest()
    return f"sha256-{digest[:16]}"


def locate(source: DataSource, source_url: str, pins: Mapping[str, str] | None,
           *, limits: Limits | None = None) -> tuple[Path, bool]:
    """The folder holding the configs, and whether it is a verified download.

    A local copy comes first (checked by `load`), then the download cache (re-checked here
    against its manifest), then a fresh download when allowed.
    """
    candidates = [source.root / "simpletom", source.root] if source.root is not None else []
    for c in candidates:
        if any(path_of(c, config).is_file() for config in CONFIGS):
            return c, False
    cached = source.cache_dir / "simpletom" / cache_key(pins)
    present = (cached / MANIFEST).is_file() or any(path_of(cached, c).exists() for c in CONFIGS)
    if cached_or_fetched(present, lambda: check_manifest(cached, pins),
                         lambda: download(source_url, cached, pins, limits=limits), download=source.download):
        return cached, True
    where = ", ".join(str(c) for c in candidates) or "(no --tom-data-dir given)"
    raise TomDataError(
        f"SimpleToM data not found; looked in {where}. Point --tom-data-dir (or TOM_DATA_DIR) at a folder holding "
        f"simpletom/<config>/{FILE} for {', '.join(CONFIGS)}, or pass --tom-download to fetch them from the Hugging "
        f"Face dataset allenai/SimpleToM at revision {OFFICIAL_REVISION[:12]} (checked for completeness; SimpleToM "
        "is for evaluation only, never for training)."
    )


def download(base_url: str, dest: Path, pins: Mapping[str, str] | None, *, limits: Limits | None = None) -> None:
    """Fetch the four configs into `dest`, check them, and record their sha256s in a manifest.

    Files land via temporary files; the manifest is written last, and only for a copy that
    passed the checks, so an interrupted or rejected download is never used.
    """
    base = base_url.rstrip("/") + "/"
    (dest / MANIFEST).unlink(missing_ok=True)
    digests: dict[str, str] = {}
    for config in CONFIGS:
        target = path_of(dest, config)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=target.parent, prefix=".part-")
        os.close(fd)
        tmp = Path(name)
        try:
            digests[config] = download_verified(f"{base}{config}/{FILE}", pins[config] if pins else None, tmp, target,
                                                limits=limits)
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
    rel = read_release(dest)  # a malformed record names the downloaded file, line and field
    try:
        check_whole(rel, expect_rows=None if pins else OFFICIAL_ROWS)
    except TomDataError as exc:
        raise TomDataError(f"the download from {base} is not the pinned SimpleToM release ({exc}); it is not used",
                           path=dest) from None
    body = {"source": base, "checked": "sha256 pins" if pins else "structure (row counts, three questions per story)",
            "files": {f"{c}/{FILE}": digests[c] for c in CONFIGS}}
    fd, name = tempfile.mkstemp(dir=dest, prefix=".part-")
    os.close(fd)
    try:
        Path(name).write_text(json.dumps(body, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(name, dest / MANIFEST)
    finally:
        Path(name).unlink(missing_ok=True)


def check_manifest(folder: Path, pins: Mapping[str, str] | None) -> None:
    """Fail, naming the file and what to do, unless `folder` is a verified download that has not changed since."""
    try:
        recorded = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))["files"]
        if not isinstance(recorded, dict):
            raise TypeError
    except (OSError, ValueError, KeyError, TypeError):
        raise TomDataError(f"this downloaded copy has no readable record of a verified download ({MANIFEST}), so it "
                           f"cannot be checked; {REFETCH}", path=folder) from None
    for config in CONFIGS:
        path = path_of(folder, config)
        want = recorded.get(f"{config}/{FILE}")
        if pins is not None and want != pins[config]:
            raise TomDataError(f"this downloaded copy was not checked against the sha256 {pins[config]} given in "
                               f"--tom-set simpletom.sha256; {REFETCH}", path=path)
        if not path.is_file():
            raise TomDataError(f"this file of a verified download is missing; {REFETCH}", path=path)
        got = sha256_file(path)
        if got != want:
            raise TomDataError(f"this downloaded copy no longer matches the sha256 recorded when it was verified "
                               f"({want}, now {got}): it was damaged or edited after the download; {REFETCH}", path=path)


def load(folder: Path, pins: Mapping[str, str] | None, *, verified: bool, partial: bool) -> list[SimpleToMSample]:
    """Every sample of the copy in `folder`, after checking that it is whole (unless `partial` or `verified`).

    Malformed records are reported first (file, line, field); then a local copy must hold every
    config with the pinned row counts and three questions per story, or, with custom checksums,
    match them.
    """
    rel = read_release(folder)
    if not verified and not partial:
        check_whole(rel, expect_rows=None if pins else OFFICIAL_ROWS)
        if pins is not None:
            for config in CONFIGS:
                got = sha256_file(path_of(folder, config))
                if got != pins[config]:
                    raise TomDataError(f"the SimpleToM release is not the one given in --tom-set simpletom.sha256: this file "
                                       f"has sha256 {got}, not {pins[config]}: {PARTIAL_ADVICE}",
                                       path=path_of(folder, config))
    return samples(rel)
