"""Where a ToMATO file comes from, and how a copy is known to be whole and unchanged.

No sha256s are published, but the pinned git tree names each file by its blob id, so a download is
checked against that and its sha256 recorded for later re-checks. A local copy is checked by Table 8's
counts (a file cut short), then its pinned checksum (one edited in place), unless `partial=true`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_tom.errors import TomDataError
from pytest_tom.evals.tomato import data
from pytest_tom.evals.tomato.data import OFFICIAL_GIT_BLOBS, OFFICIAL_REVISION, OFFICIAL_SHA256, ToMATOSample, expected_counts
from pytest_tom.fetch import MANIFEST, REFETCH, Limits, check_recorded, fetch_files, read_manifest, write_manifest
from pytest_tom.framework.base import DataSource
from pytest_tom.framework.checks import check_sha256
from pytest_tom.framework.pinned import git_blob
from pytest_tom.framework.release import Release, partial_advice

PARTIAL_ADVICE = partial_advice("tomato")


def locate(source: DataSource, subset: str, source_url: str, pins: Mapping[str, str],
           *, limits: Limits | None = None) -> tuple[Path, bool]:
    """The path of the subset's file, and whether it is a verified download (the framework's `Release` order)."""
    name = data.SUBSETS[subset]
    local = (f"tomato/{data.FOLDER}", "tomato", data.FOLDER, "")
    roots = [source.root / sub if sub else source.root for sub in local] if source.root is not None else []
    present = sorted({p.name for c in roots for p in c.glob("tomato*.json")})
    hint = (f"; this folder holds {', '.join(present)}: choose it with --tom-set tomato.subset="
            f"{'|'.join(k for k, v in data.SUBSETS.items() if v in present)}") if present else ""
    folder, verified = Release(
        "tomato", local, lambda c: (c / name).is_file(), OFFICIAL_REVISION, lambda c: (c / name).exists(),
        lambda c: check_manifest(c / name, pins), lambda c: download(source_url, c / name, pins, limits=limits),
        f"There is no {name} (subset {subset!r}){hint}. Point --tom-data-dir (or TOM_DATA_DIR) at a folder holding "
        f"tomato/{data.FOLDER}/{name}, or pass --tom-download "
        f"to fetch it from github.com/nttmdlab-nlp/ToMATO at revision {OFFICIAL_REVISION[:12]} (checked against the "
        "git blob id published in the repository tree).", label="ToMATO",
    ).locate(source)
    return folder / name, verified


def manifest_path(target: Path) -> Path:
    return target.with_name(target.name + MANIFEST)


def download(source_url: str, target: Path, pins: Mapping[str, str], *, limits: Limits | None = None) -> None:
    """Fetch one file, check its git blob id (or pinned sha256), then record its sha256: a rejected one is never used."""
    url = source_url.rstrip("/") + "/" + target.name
    target.parent.mkdir(parents=True, exist_ok=True)
    manifest_path(target).unlink(missing_ok=True)
    digest = fetch_files(source_url, target.parent, {target.name: pins.get(target.name)}, limits=limits)[target.name]
    blob = OFFICIAL_GIT_BLOBS.get(target.name)
    if target.name not in pins and blob is not None and (got := git_blob(target)) != blob:
        target.unlink()
        raise TomDataError(f"checksum mismatch for {url}: its git blob id is {got}, not the {blob} of the pinned "
                           f"revision {OFFICIAL_REVISION[:12]}; refusing to use data that differs from the pinned "
                           "release", path=target)
    write_manifest(manifest_path(target), {"source": url, "sha256": digest})


def check_manifest(target: Path, pins: Mapping[str, str]) -> None:
    """Fail, naming the file and what to do, unless `target` is a verified download unchanged since."""
    recorded = read_manifest(manifest_path(target), target).get("sha256")
    want = pins.get(target.name)
    if want is not None and recorded != want:
        raise TomDataError(f"this downloaded copy was not checked against the sha256 {want}; {REFETCH}", path=target)
    check_recorded(target.parent, {target.name: recorded})


def load(path: Path, subset: str, pins: Mapping[str, str], *, verified: bool, partial: bool) -> list[ToMATOSample]:
    """Every question of the file at `path`; a local copy (not `partial`) must be the whole pinned file.

    Malformed records are reported first, then records outside the subset, then Table 8's
    counts and the pinned checksum (or the sha256 given for it).
    """
    samples = data.read_file(path)
    data.check_subset(samples, subset, path)
    if verified or partial:
        return samples
    want = pins.get(path.name)
    if want is not None and want != OFFICIAL_SHA256.get(path.name):
        check_sha256(path, want, benchmark="tomato", given=True, partial=False)  # the user's pin replaces counts
        return samples
    found, expected = data.counts(samples), expected_counts(subset)
    _check_counts(path, samples, found, expected)
    if path.name in OFFICIAL_SHA256:
        check_sha256(path, OFFICIAL_SHA256[path.name], benchmark="tomato", given=False, partial=False)
    elif path.name in OFFICIAL_GIT_BLOBS and (blob := git_blob(path)) != OFFICIAL_GIT_BLOBS[path.name]:
        raise TomDataError(f"this file's git blob id is {blob}, not the {OFFICIAL_GIT_BLOBS[path.name]} of the pinned "
                           f"revision {OFFICIAL_REVISION[:12]} (the checksum published for it): it was edited, "
                           "re-serialized or comes from another revision, and its scores would not be the release's. "
                           "Restore it, give its sha256 with --tom-set tomato.sha256, or pass --tom-set "
                           "tomato.partial=true (suite keyword partial=True) to run a deliberately changed copy",
                           path=path)
    return samples


def _check_counts(path: Path, samples: Sequence[ToMATOSample], found: Mapping[str, Mapping[str, int]],
                  expected: Mapping[str, Mapping[str, int]]) -> None:
    """Table 8's count of every mental state and order: a file cut short or trimmed is named with what it lacks."""
    wrong = [f"{row} {state}: {found[row][state]} of {n}" for row, cells in expected.items()
             for state, n in cells.items() if found[row][state] != n]
    if wrong:
        raise TomDataError(
            f"this is not the whole pinned ToMATO file ({len(samples)} questions; counts differ from the paper's "
            f"Table 8: {'; '.join(wrong[:6])}{'...' if len(wrong) > 6 else ''}); a file cut short or trimmed would "
            f"drop questions silently: {PARTIAL_ADVICE}", path=path)
