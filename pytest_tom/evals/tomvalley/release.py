"""Where ToMValley's contexts come from: a local copy in either official layout, or a pinned download.

A local folder may hold the repository's `trial<N>/story.json` + `question_new.json` folders or the
Hugging Face `DynToM.json`, or both. No checksums are published, so the pin is a tree digest of the
pinned revision for the paper's 1,000 contexts and for all 1,161; a custom set is checked by structure.
Either way a cached copy is re-checked against its recorded sha256s before each use.

A local copy must hold every `trial<N>` context once, each whole: one removed, found twice (`trial077/` and
`trial77`, or a doubled key), missing its story file, or a release file whose keys were renamed is an error naming
file, context and field. It must hold every context of an explicit set, a gapless run of a named set, and every
trial a file's name declares; `partial=true` waives this.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import Any

from pytest_tom.errors import TomConfigError, TomDataError
from pytest_tom.evals.tomvalley.data import ToMValleySample, context_samples
from pytest_tom.fetch import MANIFEST, Limits, check_recorded, fetch_files, manifest_files, write_manifest
from pytest_tom.framework.base import DataSource
from pytest_tom.framework.checks import loads, read_json, read_text
from pytest_tom.framework.release import Release

FILES = ("story.json", "question_new.json")
RECORD_KEYS = ("stage", "question")
_TRIAL = re.compile(r"^trial([0-9]+)$")
_TRIAL_LIKE = re.compile(r"^\s*trial[\s_-]?[0-9]+\s*$", re.IGNORECASE)
_DECLARED = re.compile(r"trials?[_-]?([0-9]+)-([0-9]+)", re.IGNORECASE)
SHOWN = 8  # missing contexts (or runs of them) named in one message; the rest are counted


def trial_number(name: str) -> int | None:
    """N of `trial<N>` (leading zeros allowed: `trial077` is context 77); None for any other name."""
    m = _TRIAL.match(name)
    return int(m.group(1)) if m else None


@dataclass(frozen=True, slots=True)
class Found:
    """One context of a local copy: its record (`{"stage": ..., "question": ...}`) and where it was read."""

    number: int
    spelling: str  # as the copy spells it (`trial077`); its id is always `trial<N>`
    record: Mapping[str, Any]
    where: str

    @property
    def cid(self) -> str:
        return f"trial{self.number}"


def _add(found: dict[int, Found], ctx: Found) -> None:
    other = found.get(ctx.number)
    if other is not None:
        raise TomDataError(f"context {ctx.cid} is in both {other.where} (as {other.spelling!r}) and {ctx.where} (as "
                           f"{ctx.spelling!r}); it would be counted twice: keep one copy")
    found[ctx.number] = ctx


def _from_folder(n: int, trial: Path) -> Found:
    """A `trial<N>/` folder: both files, or an error saying which is missing and what is there instead."""
    paths = [trial / name for name in FILES]
    absent = [p.name for p in paths if not p.is_file()]
    if absent:
        held = sorted(p.name for p in trial.iterdir()) if trial.is_dir() else []
        raise TomDataError(
            f"context {trial.name} has no {' and no '.join(absent)} (expected {FILES[0]}, the story, and {FILES[1]}, "
            f"the questions as evaluated); the folder holds {', '.join(held) or 'nothing'}: without "
            f"{'them' if len(absent) > 1 else 'it'} the context would be dropped silently",
            path=trial)
    story, questions = (loads(read_text(p), p, record=trial.name) for p in paths)  # a doubled key names the trial
    return Found(n, trial.name, {"stage": story, "question": questions}, str(trial))


def _is_release(data: Any) -> bool:
    """A top-level object with a `trial<N>`-like key, or a value with a 'stage' or 'question' key: a release file."""
    if not isinstance(data, dict) or not data:
        return False
    return any(_TRIAL_LIKE.match(str(k)) for k in data) or any(
        isinstance(v, dict) and any(k in v for k in RECORD_KEYS) for v in data.values())


def _from_file(path: Path, data: Mapping[str, Any]) -> Iterable[Found]:
    for key, record in data.items():
        n = trial_number(str(key))
        if n is None:
            raise TomDataError(f"context id {key!r} is not 'trial<N>'", path=path, record=key)
        if not isinstance(record, dict):
            raise TomDataError(f"expected an object with the keys 'stage' (the story) and 'question' (the questions), "
                               f"found {type(record).__name__}", path=path, record=key)
        absent = [k for k in RECORD_KEYS if k not in record]
        if absent:
            held = ", ".join(repr(k) for k in record) or "no key at all"
            raise TomDataError(f"expected the keys 'stage' (the story) and 'question' (the questions); "
                               f"{' and '.join(repr(k) for k in absent)} {'is' if len(absent) == 1 else 'are'} "
                               f"missing, found {held}", path=path, record=key, field=absent[0])
        yield Found(n, str(key), record, str(path))


def find_contexts(folder: Path) -> dict[int, Found]:
    """Every context in `folder` (`trial<N>/` folders anywhere below it, release files at its top), each once."""
    found: dict[int, Found] = {}
    trials = ((trial_number(p.name), p) for p in folder.rglob("trial*") if p.is_dir())
    for n, trial in sorted(((n, p) for n, p in trials if n is not None), key=lambda t: (t[0], str(t[1]))):
        _add(found, _from_folder(n, trial))
    for path in sorted(folder.glob("*.json")):
        if path.name == MANIFEST:
            continue
        data = read_json(path)  # a doubled key names the top-level key: the context
        if _is_release(data):
            for ctx in _from_file(path, data):
                _add(found, ctx)
    return found


def runs(numbers: Sequence[int]) -> list[str]:
    """`[77, 150, 151, 152]` -> `["trial77", "trial150-152"]`."""
    spans = [[n for _, n in run] for _, run in groupby(enumerate(sorted(numbers)), lambda t: t[1] - t[0])]
    return [f"trial{s[0]}" if len(s) == 1 else f"trial{s[0]}-{s[-1]}" for s in spans]


def named(numbers: Sequence[int]) -> str:
    spans = runs(numbers)
    shown = ", ".join(spans[:SHOWN])
    return shown + (f" and {len(spans) - SHOWN} more runs" if len(spans) > SHOWN else "")


def check_complete(folder: Path, found: Mapping[int, Found], wanted: Sequence[int], label: str, *, named_set: bool,
                   partial: bool) -> None:
    """Every context the selection needs from this copy is here, or an error naming the missing ones."""
    if partial:
        return
    keep = set(wanted)
    have = sorted(n for n in found if n in keep)
    if not have:
        return  # nothing of the set at all: the caller says what is here instead
    if named_set:  # a local copy may hold part of a named set, without gaps
        span = set(range(have[0], have[-1] + 1)) & keep
        missing, why = sorted(span - set(have)), f"between trial{have[0]} and trial{have[-1]}, a run of the {label} set"
    else:
        missing, why = sorted(keep - set(have)), f"selected with --tom-set tomvalley.contexts={label}"
    if missing:
        raise TomDataError(
            f"the ToMValley copy lacks {len(missing)} context{'s' if len(missing) > 1 else ''} {why}: {named(missing)} "
            f"(removed, renamed or unreadable?); pass --tom-set tomvalley.partial=true (suite keyword partial=True) "
            f"to run a deliberately partial copy", path=folder)
    for path in sorted(folder.glob("*.json")):
        m = _DECLARED.search(path.stem)
        if m is None:
            continue
        declared = set(range(int(m.group(1)), int(m.group(2)) + 1)) & keep
        gone = sorted(n for n in declared if n not in found)
        if gone:
            raise TomDataError(
                f"the file's name declares trials {int(m.group(1))}-{int(m.group(2))}, and the copy lacks "
                f"{len(gone)} of them: {named(gone)} (removed or renamed?); pass --tom-set tomvalley.partial=true "
                "(suite keyword partial=True) to run a deliberately partial copy", path=path)


OFFICIAL_REVISION = "0d6c91363fdbca22282f2a391ea3e5c52ead2c36"
OFFICIAL_BASE_URL = f"https://raw.githubusercontent.com/GAIR-NLP/DynToM/{OFFICIAL_REVISION}/synthesize_data/script/data"
SETS: Mapping[str, range] = {"paper": range(50, 1050), "all": range(50, 1211)}
"""Named context sets: the paper's main tables use trials 50-1049; the repository has 50-1210."""
TREE_DIGESTS: Mapping[str, str] = {
    "paper": "a316a8927a6d29ef27d1aab7a27fb3a4d08b14515842fb231d693efc105c743e",
    "all": "3c5c9875df655a68074f675887c880630c233b990bed1f2fd5f624630ee7fc93",
}
_RANGE = re.compile(r"^([0-9]+)(?:-([0-9]+))?$")
WORKERS = 8


def parse_contexts(value: str) -> tuple[str, tuple[int, ...]]:
    """The `contexts` setting: "paper", "all", or trial numbers and ranges ("50-149,200")."""
    text = str(value).strip().lower()
    if text in SETS:
        return text, tuple(SETS[text])
    numbers: set[int] = set()
    for part in filter(None, (p.strip() for p in text.split(","))):
        m = _RANGE.match(part)
        if not m:
            raise TomConfigError(f"tomvalley setting contexts={value!r}: {part!r} is not a trial number or range "
                                 "(e.g. 'paper', 'all' or '50-149,200')")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi < lo:
            raise TomConfigError(f"tomvalley setting contexts={value!r}: range {part!r} runs backwards")
        numbers.update(range(lo, hi + 1))
    if not numbers:
        raise TomConfigError(f"tomvalley setting contexts={value!r} selects no context")
    return text, tuple(sorted(numbers))


def tree_digest(sums: Mapping[str, str]) -> str:
    """sha256 of "<sha256>  trial<N>/<file>" lines in trial order: one pin for a whole set of files."""
    ordered = sorted(sums, key=lambda rel: (int(rel.split("/")[0][5:]), FILES.index(rel.split("/")[1])))
    lines = "".join(f"{sums[rel]}  {rel}\n" for rel in ordered)
    return hashlib.sha256(lines.encode()).hexdigest()


def load_folder(folder: Path, wanted: Sequence[int], label: str, *, partial: bool = False) -> list[ToMValleySample]:
    """The wanted contexts' samples in trial order; the copy must hold the whole selection unless `partial`."""
    found = find_contexts(folder)
    check_complete(folder, found, wanted, label, named_set=label in SETS, partial=partial)
    keep = set(wanted)
    picked = sorted(n for n in found if n in keep)
    if not picked:
        have = sorted(found)
        if have:
            raise TomDataError(f"no ToMValley context of the selected set ({label}) is here; it holds {len(have)} others "
                               f"({named(have)}): choose them with --tom-set tomvalley.contexts="
                               f"{','.join(run.removeprefix('trial') for run in runs(have))}", path=folder)
        held = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
        raise TomDataError(
            "no ToMValley context here: expected trial<N>/ folders holding story.json + question_new.json, or a "
            "release file (DynToM.json) of the shape {\"trial<N>\": {\"stage\": ..., \"question\": ...}}; the folder "
            f"holds {', '.join(held[:SHOWN]) or 'nothing'}" + (f" and {len(held) - SHOWN} more" if len(held) > SHOWN else ""),
            path=folder)
    return [s for n in picked for s in context_samples(found[n].cid, found[n].record, found[n].where)]


def locate(source: DataSource, label: str, wanted: Sequence[int], base_url: str,
           *, limits: Limits | None = None) -> Path:
    """The folder to load: a local copy first, then the verified download cache, then a fresh download."""
    return Release(
        "tomvalley", ("tomvalley", ""),
        lambda c: c.is_dir() and (any(c.glob("*.json")) or any(any(c.rglob(f"trial*/{name}")) for name in FILES)),
        f"{OFFICIAL_REVISION[:12]}/{_set_dir(label)}", lambda c: (c / MANIFEST).is_file(),
        lambda c: check_recorded(c, manifest_files(c)), lambda c: download(base_url, c, label, wanted, limits=limits),
        "Point --tom-data-dir (or TOM_DATA_DIR) at a folder holding tomvalley/ with trial<N>/story.json + "
        "question_new.json folders (GAIR-NLP/DynToM) or the DynToM.json release file, or pass --tom-download to fetch "
        f"the pinned revision {OFFICIAL_REVISION[:12]}.", label="ToMValley").locate(source)[0]


def _set_dir(label: str) -> str:
    return label if label in SETS else "custom-" + hashlib.sha256(label.encode()).hexdigest()[:12]


def download(base_url: str, dest: Path, label: str, wanted: Iterable[int], *, limits: Limits | None = None) -> None:
    """Fetch `trial<N>/{story,question_new}.json` for every wanted context, then verify the set and record it."""
    sums = fetch_files(base_url, dest, {f"trial{n}/{name}": None for n in wanted for name in FILES}, limits=limits,
                       workers=WORKERS)
    digest = tree_digest(sums)
    pinned = TREE_DIGESTS.get(label)
    if pinned is not None and digest != pinned:
        raise TomDataError(f"the downloaded {label} set's tree digest is {digest}, not the pinned {pinned}: the "
                           "source differs from the pinned release; refusing to use it", path=dest)
    if pinned is None:
        load_folder(dest, list(wanted), label)  # a custom set is checked by structure before it is recorded
    write_manifest(dest / MANIFEST, {"source": base_url, "revision": OFFICIAL_REVISION, "contexts": label,
                                     "tree_digest": digest, "pinned": pinned is not None, "files": sums})
