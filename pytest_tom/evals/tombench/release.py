"""Where the ToMBench release comes from, and whether all of it is there.

A missing or cut file would drop items silently, so a local copy is checked against the file list, row counts and
sha256s (or custom `sha256=` pins), unless `partial=true`; a cached download against its sha256s before each use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_tom.errors import TomDataError
from pytest_tom.evals.tombench import data
from pytest_tom.evals.tombench.data import ToMBenchSample
from pytest_tom.fetch import check_pinned, fetch_pinned, sha256_file
from pytest_tom.framework.base import DataSource
from pytest_tom.framework.release import Release as Where
from pytest_tom.framework.release import partial_advice, pins_key, pins_setting

PARTIAL_ADVICE = partial_advice("tombench")


@dataclass(frozen=True, slots=True)
class Release:
    """The files a run expects, with their sha256s, and their row counts when known (the pinned release)."""

    pins: Mapping[str, str]
    rows: Mapping[str, int] | None
    """None for custom checksums: a local copy is then checked by checksum instead."""
    cache_key: str
    """Folder of the download cache: the pinned revision, or a digest of custom checksums."""


def release(setting: str) -> Release:
    """The release a run expects: the pins (no setting), a `name=sha256,...` list, or a sha256sum manifest path."""
    pins = pins_setting(setting)
    if pins is None or pins == data.OFFICIAL_SHA256:
        return Release(dict(data.OFFICIAL_SHA256), dict(data.OFFICIAL_ROWS), data.OFFICIAL_REVISION)
    return Release(pins, None, pins_key(pins))


def locate(source: DataSource, source_url: str, rel: Release) -> tuple[Path, bool]:
    """The folder holding the release files (local, cached or fetched), and whether they are checksum-verified."""
    def holds(folder: Path) -> bool:
        return folder.is_dir() and any(folder.glob("*.jsonl"))

    return Where(
        "tombench", ("tombench/data", "data", ""), holds, f"{rel.cache_key}/data", holds,
        lambda c: check_pinned(c, rel.pins), lambda c: fetch_pinned(source_url.rstrip("/") + "/data/", rel.pins, c),
        "Point --tom-data-dir (or TOM_DATA_DIR) at a folder holding tombench/data/*.jsonl, or pass --tom-download to "
        f"fetch the official files at revision {data.OFFICIAL_REVISION[:12]} (sha256-checked). ToMBench is for "
        "evaluation only, never for training.", label="ToMBench").locate(source)


def load(folder: Path, languages: Sequence[str], rel: Release, *, verified: bool, partial: bool) -> list[ToMBenchSample]:
    """Every sample in `folder` by language, file, row; an unverified copy must be whole (rows, sha256s) unless `partial`.

    Malformed rows are reported first: they name file, line and field.
    """
    files = sorted(folder.glob("*.jsonl"))
    by_file = {f.name: data.load_file(f, languages) for f in files if f.name in rel.pins}
    rows = {name: len({s.extra.row for s in got}) for name, got in by_file.items()}
    samples = [s for got in by_file.values() for s in got]
    unknown = [f.name for f in files if f.name not in rel.pins]
    if not rows:
        example = "False Belief Task.jsonl" if "False Belief Task.jsonl" in rel.pins else min(rel.pins)
        raise TomDataError(f"no ToMBench release files in this folder (the release has {len(rel.pins)}, e.g. "
                           f"{example!r}){_misnamed(unknown)}", path=folder)
    if not partial and not verified:
        check_whole(folder, rel, rows, unknown)
    if not samples:
        raise TomDataError("no ToMBench rows: every release file in this folder is empty", path=folder)
    order = {lang: i for i, lang in enumerate(languages)}
    samples.sort(key=lambda s: (order[s.extra.language], s.extra.file, s.extra.row))
    return samples


def check_whole(folder: Path, rel: Release, rows: Mapping[str, int], unknown: Sequence[str]) -> None:
    """One error naming every missing, short or changed file of a copy that should be the whole release."""
    problems: list[tuple[Path, str | None, str]] = []  # (file, record, what is wrong)
    for name in sorted(rel.pins):
        path = folder / name
        expected, found = (rel.rows or {}).get(name), rows.get(name)
        if found is None:
            problems.append((path, None, "is missing"))
        elif expected is not None and found < expected:
            problems.append((path, _lines(found + 1, expected), f"has {found} of {expected} rows"))
        elif expected is not None and found > expected:
            problems.append((path, _lines(expected + 1, found), f"has {found} rows, not {expected} (another "
                                                                "revision? give its checksums with --tom-set tombench.sha256)"))
        elif (got := sha256_file(path)) != rel.pins[name]:
            # the rows are all there, but edited in place: a gold flipped, an option rewritten
            problems.append((path, None, f"has sha256 {got}, not the pinned {rel.pins[name]} (edited or re-serialized? "
                                         "give its checksums with --tom-set tombench.sha256)" if rel.rows is not None
                             else f"has sha256 {got}, not the {rel.pins[name]} given in --tom-set tombench.sha256"))
    if not problems:
        return
    hint = _misnamed(unknown)
    why = "a file emptied, cut short, trimmed, renamed or edited would drop or change its items silently"
    if len(problems) == 1:
        path, record, what = problems[0]
        raise TomDataError(f"the ToMBench release is incomplete: this file {what}{hint}; {why}: {PARTIAL_ADVICE}",
                           path=path, record=record)
    listed = "; ".join(f"{p.name!r} {what}" for p, _, what in problems)
    raise TomDataError(
        f"the ToMBench release is incomplete: {len(problems)} of its {len(rel.pins)} files are missing or changed: "
        f"{listed}{hint}; {why}: {PARTIAL_ADVICE}", path=folder)


def _misnamed(unknown: Sequence[str]) -> str:
    if not unknown:
        return ""
    verb = "is" if len(unknown) == 1 else "are"
    return f"; {', '.join(repr(n) for n in unknown)} in this folder {verb} not a release file name (misnamed?)"


def _lines(first: int, last: int) -> str:
    return f"row {first}" if first == last else f"rows {first}-{last}"
