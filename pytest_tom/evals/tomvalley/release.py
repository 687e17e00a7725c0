"""Where ToMValley's contexts come from: a local copy in either official layout, or a pinned download.

A local folder may hold the repository's `trial<N>/story.json` + `question_new.json` folders or the
Hugging Face `DynToM.json`, or both. No checksums are published, so the pin is a tree digest of the
pinned revision for the paper's 1,000 contexts and for all 1,161; a custom set is checked by structure.
Either way a cached copy is re-checked against its recorded sha256s before each use.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from pytest_tom.errors import TomConfigError, TomDataError
from pytest_tom.evals.tomvalley.data import ToMValleySample, context_samples
from pytest_tom.evals.tomvalley.local import FILES, SHOWN, check_complete, find_contexts, named, runs
from pytest_tom.fetch import MANIFEST, Limits, check_recorded, fetch_files, manifest_files, write_manifest
from pytest_tom.framework.base import DataSource
from pytest_tom.framework.release import Release

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
    def order(rel: str) -> tuple[int, int]:
        trial, name = rel.split("/")
        return int(trial[5:]), FILES.index(name)
    lines = "".join(f"{sums[rel]}  {rel}\n" for rel in sorted(sums, key=order))
    return hashlib.sha256(lines.encode()).hexdigest()


def load_folder(folder: Path, wanted: Sequence[int], label: str, *, partial: bool = False) -> list[ToMValleySample]:
    """The wanted contexts' samples in trial order; the copy must hold the whole selection (see `local`) unless `partial`."""
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
