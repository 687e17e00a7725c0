"""Issue 8, benchmark data: a damaged, partial or hostile source is one clear error, never a silent change.

Each test runs pytest as a user would (pytester) on a copy of the data with one
thing wrong, and checks the one message (file, record, field) and that no model
call was made. Servers are local (127.0.0.1); the pinned ToMBench release is
stood in for by the project's fixtures (their names, sha256s and row counts), so
the checks run without the real data; the `realdata` tests repeat the key cases
on the real release.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.file_server import Server

from pytest_tom import fetch
from pytest_tom.evals.fantom import data as fantom_data
from pytest_tom.evals.tombench import data as tombench_data

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
FBT = "False Belief Task.jsonl"

COUNTING_MODEL = r"""
import os

def answer(batch, settings):
    with open(os.environ["TOM_TEST_CALL_LOG"], "a") as log:
        log.write("x\n" * len(batch))
    return ["[[B]]" for _ in batch]
answer.tom_fingerprint = "counting-model"
"""


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def literal(text: str) -> str:
    """`text` for fnmatch_lines, its brackets (field paths like beliefQAs[0]) matched literally."""
    return text.replace("[", "[[]")


@pytest.fixture
def calls(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[[], int]:
    """A `python:counting_model:answer` model; the returned function counts the requests it answered."""
    pytester.makepyfile(counting_model=COUNTING_MODEL)
    pytester.syspathinsert()
    log = tmp_path / "calls.log"
    monkeypatch.setenv("TOM_TEST_CALL_LOG", str(log))
    return lambda: len(log.read_text().splitlines()) if log.exists() else 0


def asked(result: pytest.RunResult) -> int:
    """Questions that got an answer (passed or failed: the counting model always says "[[B]]")."""
    outcomes = result.parseoutcomes()
    return outcomes.get("passed", 0) + outcomes.get("failed", 0)


RUN = ("--tom-model=python:counting_model:answer", "--tom-no-cache", "-p", "no:cacheprovider", "--tb=short", "-q")


# --- ToMBench: the release's file list and row counts -----------------------------------------------------------


@pytest.fixture
def release(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A local copy of "the pinned release", here the fixtures' 5 files (42 items, 10 stories), pinned by monkeypatch."""
    files = sorted((FIXTURES / "tombench" / "data").glob("*.jsonl"))
    monkeypatch.setattr(tombench_data, "OFFICIAL_SHA256", {p.name: sha(p.read_bytes()) for p in files})
    monkeypatch.setattr(tombench_data, "OFFICIAL_ROWS", {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in files})
    root = tmp_path / "copy"
    shutil.copytree(FIXTURES / "tombench", root / "tombench")
    return root


def tombench(pytester: pytest.Pytester, root: Path, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--tom-benchmark=tombench", f"--tom-data-dir={root}", "--tom-set=tombench.tries=1", *RUN, *args)


def test_the_whole_release_runs_without_any_flag(pytester: pytest.Pytester, release: Path, calls: Callable[[], int]) -> None:
    result = tombench(pytester, release, "-m", "en and not coherence")
    assert asked(result) == 21
    assert calls() == 21


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (lambda d: (d / "Hidden Emotions.jsonl").write_text(""),
         "*Hidden Emotions.jsonl, record rows 1-2: the ToMBench release is incomplete: this file has 0 of 2 rows; *"),
        (lambda d: (d / FBT).write_text("".join((d / FBT).read_text(encoding="utf-8").splitlines(True)[:6]), encoding="utf-8"),
         "*False Belief Task.jsonl, record rows 7-12: the ToMBench release is incomplete: this file has 6 of 12 rows; *"),
        (lambda d: (d / FBT).unlink(), "*False Belief Task.jsonl: the ToMBench release is incomplete: this file is missing; *"),
        (lambda d: (d / FBT).rename(d / "false belief task.jsonl"),
         "*False Belief Task.jsonl: * this file is missing; 'false belief task.jsonl' in this folder is not a release file "
         "name (misnamed?)*"),
        (lambda d: [p.write_text("") for p in d.iterdir()],
         "*data: the ToMBench release is incomplete: 5 of its 5 files are missing or changed: 'False Belief Task.jsonl' has 0 "
         "of 12 rows; *'Strange Story Task.jsonl' has 0 of 2 rows; *"),
    ],
    ids=["empty file", "cut at a line boundary", "missing file", "misnamed file", "all files empty"],
)
def test_a_short_or_missing_release_file_is_one_clear_error(
    pytester: pytest.Pytester, release: Path, calls: Callable[[], int], damage: Callable[[Path], object], expected: str
) -> None:
    damage(release / "tombench" / "data")
    result = tombench(pytester, release)
    result.stderr.fnmatch_lines([expected + "--tom-set tombench.partial=true (suite keyword partial=True)*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR and calls() == 0


@pytest.mark.slow
def test_a_deliberately_partial_copy_runs_what_it_has_with_the_flag(
    pytester: pytest.Pytester, release: Path, calls: Callable[[], int]
) -> None:
    (release / "tombench" / "data" / FBT).unlink()  # 12 of the 21 English questions
    result = tombench(pytester, release, "--tom-set=tombench.partial=true", "-m", "en and not coherence")
    assert asked(result) == 9 and calls() == 9
    pytester.makepyfile(test_tom=f"""
        import pytest_tom
        suite = pytest_tom.suite("tombench", data_dir={str(release)!r}, languages="en", tries=1, partial=True)
    """)
    result = pytester.runpytest(*RUN, "-m", "not coherence", "test_tom.py")
    assert asked(result) == 9 and calls() == 18


def test_a_partial_copy_with_no_rows_at_all_still_fails(pytester: pytest.Pytester, release: Path, calls: Callable[[], int]) -> None:
    for p in (release / "tombench" / "data").iterdir():
        p.write_text("")
    result = tombench(pytester, release, "--tom-set=tombench.partial=true")
    result.stderr.fnmatch_lines(["*data: no ToMBench rows: every release file in this folder is empty*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR and calls() == 0


# --- bad values: one message naming file, record and field -------------------------------------------------------------


def _edit_row(path: Path, line: int, **fields: Any) -> None:
    rows = path.read_text(encoding="utf-8").splitlines()
    rec = json.loads(rows[line - 1])
    rec.update({k.replace("_NL_", "\n"): v for k, v in fields.items()})
    rows[line - 1] = json.dumps(rec, ensure_ascii=False)
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"答案_NL_ANSWER": "BC"}, "record line 2, field '答案\\nANSWER': gold answer 'BC' is not a letter A-D"),
        ({"OPTION-B": 7}, "record line 2, field 'OPTION-B': wrong type: expected text, got int 7"),
        ({"选项A": ["A. x"]}, "record line 2, field '选项A': wrong type: expected text, got list ['A. x']"),
        ({"QUESTION": 3.5}, "record line 2, field 'QUESTION': wrong type: expected text, got float 3.5"),
        ({"答案_NL_ANSWER": 1}, "record line 2, field '答案\\nANSWER': wrong type: expected a letter A-D as text, got int 1"),
    ],
    ids=["gold BC", "option a number", "option a list", "question a number", "gold a number"],
)
def test_a_bad_tombench_value_names_file_line_and_field(
    pytester: pytest.Pytester, release: Path, calls: Callable[[], int], fields: dict[str, Any], expected: str
) -> None:
    _edit_row(release / "tombench" / "data" / FBT, 2, **fields)
    result = tombench(pytester, release)
    result.stderr.fnmatch_lines([f"ERROR: pytest-tom: file *{FBT}, {literal(expected)}"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR and calls() == 0


def test_the_release_s_dirty_gold_a_dot_is_still_read_as_a(pytester: pytest.Pytester, release: Path, calls: Callable[[], int]) -> None:
    _edit_row(release / "tombench" / "data" / FBT, 2, **{"答案_NL_ANSWER": " B. "})
    # an edited file no longer has its pinned sha256: run it as a deliberately changed copy
    result = tombench(pytester, release, "-m", "en and not coherence", "--tom-set=tombench.partial=true")
    assert asked(result) == 21 and calls() == 21


# --- issue 20: whole-release checks, before any model request ----------------------------------------------------------


def _double_gold(path: Path, line: int) -> None:
    """Give row `line` its gold key twice, the second copy another letter (json.loads alone keeps the last)."""
    rows = path.read_text(encoding="utf-8").split("\n")
    rows[line - 1] = rows[line - 1][:-1] + ', "答案\\nANSWER": "A"}'
    path.write_text("\n".join(rows), encoding="utf-8")


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (lambda d: _double_gold(d / FBT, 2),
         f"*{FBT}, record line 2, field '答案\\nANSWER': the key '答案\\nANSWER' is given twice in one object*"),
        (lambda d: (d / FBT).write_text((d / FBT).read_text(encoding="utf-8").replace('ANSWER": "B"', 'ANSWER": "C"', 1),
                                        encoding="utf-8"),
         f"*{FBT}: the ToMBench release is incomplete: this file has sha256 *, not the pinned * (edited or re-serialized?*"),
    ],
    ids=["doubled gold key", "edited in place, rows intact"],
)
def test_a_damaged_release_is_refused_at_collection_with_no_model_request(
    pytester: pytest.Pytester, release: Path, calls: Callable[[], int], damage: Callable[[Path], object], expected: str
) -> None:
    damage(release / "tombench" / "data")
    result = tombench(pytester, release)
    result.stderr.fnmatch_lines([expected])  # a data error is a usage error: `ERROR: pytest-tom: ...` on stderr
    assert result.ret == pytest.ExitCode.USAGE_ERROR and calls() == 0
    assert asked(result) == 0


# --- FANToM: an empty file, an emptied set, a nested field --------------------------------------------------------------


def fantom_copy(tmp_path: Path, mutate: Callable[[list[dict[str, Any]]], object]) -> Path:
    rows = json.loads((FIXTURES / "fantom" / "fantom_v1.json").read_text())
    mutate(rows)
    (tmp_path / "f" / "fantom").mkdir(parents=True)
    (tmp_path / "f" / "fantom" / "fantom_v1.json").write_text(json.dumps(rows))
    return tmp_path / "f"


def fantom(pytester: pytest.Pytester, root: Path, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--tom-benchmark=fantom", f"--tom-data-dir={root}", "--tom-set=fantom.embedder=none", *RUN, *args)


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda d: d.clear(), "fantom_v1.json: no question sets: the file holds an empty list"),
        (lambda d: d[3].update(beliefQAs=[]),
         "fantom_v1.json, record #3 (set_id 1-0-1), field 'beliefQAs': no belief questions: every set of the release has "
         "some, *--tom-set fantom.partial=true*"),
        (lambda d: d[1].update(infoAccessibilityQAs_binary=[]),
         "fantom_v1.json, record #1 (set_id 0-0-1), field 'infoAccessibilityQAs_binary': no yes/no info-accessibility "
         "questions*"),
        (lambda d: d[0]["answerabilityQA_list"].update(correct_answer=[]),
         "fantom_v1.json, record #0 (set_id 0-0-0), field 'answerabilityQA_list.correct_answer': no character who knows*"),
        (lambda d: d[3]["beliefQAs"][0].update(correct_answer=5),
         "fantom_v1.json, record #3 (set_id 1-0-1), field 'beliefQAs[0].correct_answer': wrong type: expected text, got int 5"),
        (lambda d: d[2]["answerabilityQAs_binary"][1].pop("question"),
         "fantom_v1.json, record #2 (set_id 1-0-0), field 'answerabilityQAs_binary[1].question': missing or empty text"),
        (lambda d: d[0]["factQA"].update(correct_answer=""),
         "fantom_v1.json, record #0 (set_id 0-0-0), field 'factQA.correct_answer': missing or empty text"),
        (lambda d: d[4]["infoAccessibilityQA_list"].update(question=None),
         "fantom_v1.json, record #4 (set_id 1-1-0), field 'infoAccessibilityQA_list.question': missing or empty text"),
    ],
    ids=["empty list", "a set without beliefs", "a set without yes/no", "a list nobody knows", "belief answer a number",
         "yes/no question missing", "fact answer empty", "list question null"],
)
def test_a_bad_fantom_file_is_one_clear_error(
    pytester: pytest.Pytester, tmp_path: Path, calls: Callable[[], int], mutate: Callable[[list[dict[str, Any]]], object],
    expected: str,
) -> None:
    result = fantom(pytester, fantom_copy(tmp_path, mutate))
    result.stderr.fnmatch_lines([f"ERROR: pytest-tom: file *{literal(expected)}*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR and calls() == 0


@pytest.mark.slow
def test_a_trimmed_fantom_copy_needs_the_flag_and_then_asks_what_is_left(
    pytester: pytest.Pytester, tmp_path: Path, calls: Callable[[], int]
) -> None:
    whole = fantom(pytester, fantom_copy(tmp_path / "a", lambda d: None), "-m", "choice")
    trimmed = fantom_copy(tmp_path / "b", lambda d: d[3].update(beliefQAs=[]))
    assert fantom(pytester, trimmed, "-m", "choice").ret == pytest.ExitCode.USAGE_ERROR
    result = fantom(pytester, trimmed, "-m", "choice", "--tom-set=fantom.partial=true")
    # set 1-0-1 had 2 belief questions: 11 choice questions become 9, each asked once
    assert asked(whole) == 11
    assert asked(result) == 9
    assert calls() == 11 + 9


def test_a_bad_partial_value_is_a_usage_error(pytester: pytest.Pytester, release: Path) -> None:
    result = tombench(pytester, release, "--tom-set=tombench.partial=maybe")
    result.stderr.fnmatch_lines(["*tombench setting partial='maybe': expected true or false*"])
    assert result.ret != pytest.ExitCode.OK


# --- local servers: a mirror, a trickle, a bomb ---------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.close()


def tar_gz(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, payload in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
    return buf.getvalue()


def empty_dir(tmp_path: Path) -> Path:
    (tmp_path / "nothing").mkdir(exist_ok=True)
    return tmp_path / "nothing"


@pytest.mark.slow
def test_a_tombench_mirror_with_its_own_checksums_then_a_damaged_cache(
    pytester: pytest.Pytester, server: Server, tmp_path: Path, calls: Callable[[], int]
) -> None:
    files = {p.name: p.read_bytes() for p in (FIXTURES / "tombench" / "data").glob("*.jsonl")}
    for name, body in files.items():
        server.files["mirror/data/" + name.replace(" ", "%20")] = body
    manifest = tmp_path / "SHA256SUMS"
    manifest.write_text("".join(f"{sha(body)}  data/{name}\n" for name, body in files.items()), encoding="utf-8")
    args = ["--tom-benchmark=tombench", f"--tom-data-dir={empty_dir(tmp_path)}", f"--tom-cache-dir={tmp_path / 'cache'}",
            f"--tom-set=tombench.sha256={manifest}", f"--tom-set=tombench.source_url={server.url}/mirror/", "--tom-set=tombench.tries=1",
            "-m", "en and not coherence", *RUN]
    first = pytester.runpytest(*args, "--tom-download")
    assert asked(first) == 21 and calls() == 21
    assert len(server.requests) == 5
    # a later run reuses the verified copy; damage one file in the cache and it is refused, naming it
    [cached] = (tmp_path / "cache" / "data" / "tombench").glob("sha256-*/data")
    victim = cached / FBT
    victim.write_bytes(victim.read_bytes().replace(b'"B"', b'"C"', 1))
    damaged = pytester.runpytest(*args)
    damaged.stderr.fnmatch_lines([f"ERROR: pytest-tom: file {victim}: this downloaded copy no longer matches its pinned sha256 "
                                  f"{sha(files[FBT])} (got *): it was damaged or edited after the download; delete it, or "
                                  "pass --tom-download to fetch a verified copy again"])
    assert damaged.ret == pytest.ExitCode.USAGE_ERROR and calls() == 21 and len(server.requests) == 5
    # --tom-download fetches the damaged file again (one request), the others are kept
    again = pytester.runpytest(*args, "--tom-download")
    assert asked(again) == 21 and calls() == 42
    assert server.requests[5:] == ["mirror/data/False%20Belief%20Task.jsonl"]
    # a checksum list on the command line works too, and a wrong one is refused before anything is used
    wrong = ",".join(f"{name}={'0' * 64 if name == FBT else sha(body)}" for name, body in files.items())
    refused = pytester.runpytest(*[a for a in args if not a.startswith("--tom-set=tombench.sha256")], f"--tom-set=tombench.sha256={wrong}",
                                 "--tom-download")
    refused.stderr.fnmatch_lines([f"*{FBT}: checksum mismatch for {server.url}/mirror/data/False%20Belief%20Task.jsonl: "
                                  f"expected sha256 {'0' * 64}, got {sha(files[FBT])}*"])
    assert refused.ret == pytest.ExitCode.USAGE_ERROR and calls() == 42


@pytest.mark.slow
def test_a_local_copy_is_checked_against_custom_checksums(pytester: pytest.Pytester, tmp_path: Path) -> None:
    files = {p.name: p.read_bytes() for p in (FIXTURES / "tombench" / "data").glob("*.jsonl")}
    pins = ",".join(f"{name}={sha(body)}" for name, body in files.items())
    root = tmp_path / "copy"
    shutil.copytree(FIXTURES / "tombench", root / "tombench")
    ok = pytester.runpytest("--tom-benchmark=tombench", f"--tom-data-dir={root}", f"--tom-set=tombench.sha256={pins}",
                            "--collect-only", "-q", "-p", "no:cacheprovider")
    ok.stdout.fnmatch_lines(["*52 tests collected*"])
    _edit_row(root / "tombench" / "data" / FBT, 1, STORY="Another story.")
    bad = pytester.runpytest("--tom-benchmark=tombench", f"--tom-data-dir={root}", f"--tom-set=tombench.sha256={pins}",
                             "--collect-only", "-q", "-p", "no:cacheprovider")
    bad.stderr.fnmatch_lines([f"ERROR: pytest-tom: file *{FBT}: the ToMBench release is incomplete: this file has sha256 *, not the "
                              f"{sha(files[FBT])} given in --tom-set tombench.sha256*"])
    usage = pytester.runpytest("--tom-benchmark=tombench", f"--tom-data-dir={root}", "--tom-set=tombench.sha256=x.jsonl=abc")
    usage.stderr.fnmatch_lines(["*checksum of 'x.jsonl': expected a sha256 of 64 hex digits, got 'abc'*"])


@pytest.mark.slow
def test_a_fantom_mirror_with_its_own_checksum_then_a_damaged_cache(
    pytester: pytest.Pytester, server: Server, tmp_path: Path, calls: Callable[[], int]
) -> None:
    archive = tar_gz({"fantom/fantom_v1.json": (FIXTURES / "fantom" / "fantom_v1.json").read_bytes()})
    server.files["fantom.tar.gz"] = archive
    args = ["--tom-benchmark=fantom", f"--tom-data-dir={empty_dir(tmp_path)}", f"--tom-cache-dir={tmp_path / 'cache'}",
            "--tom-set=fantom.embedder=none", f"--tom-set=fantom.source_url={server.url}/fantom.tar.gz", "-m", "choice", *RUN]
    refused = pytester.runpytest(*args, "--tom-download")  # the pinned official checksum guards the mirror
    refused.stderr.fnmatch_lines([f"*checksum mismatch for {server.url}/fantom.tar.gz: expected sha256 "
                                  f"{fantom_data.OFFICIAL_SHA256}, got {sha(archive)}*"])
    args.append(f"--tom-set=fantom.sha256={sha(archive)}")
    first = pytester.runpytest(*args, "--tom-download")
    assert asked(first) == 11 and calls() == 11
    cached = tmp_path / "cache" / "data" / "fantom" / sha(archive)[:16] / "fantom_v1.json"
    cached.write_bytes(cached.read_bytes().replace(b"Linda", b"Lynda"))
    damaged = pytester.runpytest(*args)
    damaged.stderr.fnmatch_lines([f"ERROR: pytest-tom: file {cached}: this downloaded copy no longer matches the sha256 recorded when "
                                  "it was verified (*): it was damaged or edited after the download; delete it, or pass "
                                  "--tom-download to fetch a verified copy again"])
    assert damaged.ret == pytest.ExitCode.USAGE_ERROR and calls() == 11 and len(server.requests) == 2
    again = pytester.runpytest(*args, "--tom-download")
    assert asked(again) == 11 and calls() == 22
    assert server.requests == ["fantom.tar.gz"] * 3


@pytest.fixture
def small_limits(monkeypatch: pytest.MonkeyPatch) -> fetch.Limits:
    limits = fetch.Limits(timeout_s=5.0, deadline_s=0.05, max_bytes=4096, max_expanded=8192)
    monkeypatch.setattr(fetch, "LIMITS", limits)
    return limits


def test_a_trickling_server_hits_the_download_deadline(
    pytester: pytest.Pytester, server: Server, tmp_path: Path, small_limits: fetch.Limits
) -> None:
    result = pytester.runpytest("--tom-benchmark=fantom", f"--tom-data-dir={empty_dir(tmp_path)}", "--tom-set=fantom.embedder=none",
                                f"--tom-cache-dir={tmp_path / 'cache'}", "--tom-download",
                                f"--tom-set=fantom.source_url={server.url}/trickle", "-p", "no:cacheprovider")
    result.stderr.fnmatch_lines([f"ERROR: pytest-tom: file *fantom_v1.json: download of {server.url}/trickle took longer than its "
                                 "deadline of 0.05 s (* bytes received): the server is stalled or too slow*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR and server.requests == ["trickle"]
    assert [p.name for p in (tmp_path / "cache" / "data" / "fantom").rglob("*") if p.is_file()] == []  # no partial file left


@pytest.mark.slow
def test_an_oversized_download_and_an_archive_bomb_are_refused(
    pytester: pytest.Pytester, server: Server, tmp_path: Path, small_limits: fetch.Limits
) -> None:
    big = b"[" + b" " * 10_000 + b"]"
    server.files["big.json"] = big
    args = ["--tom-benchmark=fantom", f"--tom-data-dir={empty_dir(tmp_path)}", "--tom-set=fantom.embedder=none",
            f"--tom-cache-dir={tmp_path / 'cache'}", "--tom-download", "-p", "no:cacheprovider"]
    result = pytester.runpytest(*args, f"--tom-set=fantom.source_url={server.url}/big.json", f"--tom-set=fantom.sha256={sha(big)}")
    result.stderr.fnmatch_lines([f"*download of {server.url}/big.json announces 10002 bytes, over the cap of 4096 bytes*"])
    # 1 MiB of zeros compresses to about 1 KiB: under the download cap, far over the expansion cap
    bomb = tar_gz({"fantom/fantom_v1.json": b"\0" * (1 << 20)})
    assert len(bomb) < small_limits.max_bytes
    server.files["bomb.tar.gz"] = bomb
    result = pytester.runpytest(*args, f"--tom-set=fantom.source_url={server.url}/bomb.tar.gz", f"--tom-set=fantom.sha256={sha(bomb)}")
    result.stderr.fnmatch_lines(["*refusing to extract: the archive expands to more than 1.0 MiB, over the cap of 8192 bytes*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [p for p in (tmp_path / "cache" / "data" / "fantom").rglob("*") if p.is_file()] == []


# --- the real data -------------------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.realdata
def test_the_real_releases_pass_without_a_flag_and_a_cut_copy_does_not(
    pytester: pytest.Pytester, real_data_dir: Path, tmp_path: Path
) -> None:
    whole = pytester.runpytest("--tom-benchmark=tombench,fantom", f"--tom-data-dir={real_data_dir}", "--tom-set=fantom.embedder=none",
                               "--collect-only", "-q", "-p", "no:cacheprovider")
    whole.stdout.fnmatch_lines(["*8557 tests collected*"])  # ToMBench 5,720 + 1,868 stories; the FANToM sample's 969
    copy = tmp_path / "real"
    shutil.copytree(real_data_dir / "tombench", copy / "tombench")
    sst = copy / "tombench" / "data" / "Strange Story Task.jsonl"
    sst.chmod(0o644)
    sst.write_text("".join(sst.read_text(encoding="utf-8").splitlines(True)[:200]), encoding="utf-8")
    cut = pytester.runpytest("--tom-benchmark=tombench", f"--tom-data-dir={copy}", "--collect-only", "-q", "-p", "no:cacheprovider")
    cut.stderr.fnmatch_lines(["*Strange Story Task.jsonl, record rows 201-407: the ToMBench release is incomplete: this file "
                              "has 200 of 407 rows*"])


# --- issue 20: a data error is a usage error, shown under any --tb and -q, before any request -----------------------


def _tomvalley_without_trial51(tmp_path: Path) -> Path:
    record = json.loads((FIXTURES / "tomvalley" / "DynToM.json").read_text(encoding="utf-8"))["trial7002"]
    (tmp_path / "tv" / "tomvalley").mkdir(parents=True)
    (tmp_path / "tv" / "tomvalley" / "DynToM.json").write_text(json.dumps({f"trial{n}": record for n in (50, 52)}))
    return tmp_path / "tv"


SHOWN = (("--tb=no", "-q"), ("-qq",), ("--tb=line",), ("--tb=long", "-v"), ("--collect-only", "-q"))


@pytest.mark.parametrize("declared", ["--tom-benchmark", "test module"])
@pytest.mark.parametrize("shown", SHOWN, ids=[" ".join(s) for s in SHOWN])
def test_a_data_error_is_a_usage_error_under_any_tb_and_q(
    pytester: pytest.Pytester, tmp_path: Path, calls: Callable[[], int], declared: str, shown: tuple[str, ...]
) -> None:
    root = _tomvalley_without_trial51(tmp_path)
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")  # an ordinary test collected before the suite
    if declared == "test module":
        pytester.makepyfile(test_tom=f"import pytest_tom\nvalley = pytest_tom.suite('tomvalley', data_dir={str(root)!r})\n")
        args: tuple[str, ...] = ()
    else:
        args = ("--tom-benchmark=tomvalley", f"--tom-data-dir={root}")
    result = pytester.runpytest(*args, "--tom-model=python:counting_model:answer", "--tom-no-cache", "-p", "no:cacheprovider",
                                *shown)
    result.stderr.fnmatch_lines([f"ERROR: pytest-tom: file {root / 'tomvalley'}: the ToMValley copy lacks 1 context between "
                                 "trial50 and trial52, a run of the paper set: trial51 (removed, renamed or unreadable?); "
                                 "pass --tom-set tomvalley.partial=true*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR and calls() == 0
    out = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in out and "passed" not in out and len(out.splitlines()) < 25, out


def test_a_bad_record_is_named_under_tb_no_from_any_benchmark(pytester: pytest.Pytester, release: Path, calls: Callable[[], int]) -> None:
    _edit_row(release / "tombench" / "data" / FBT, 2, **{"OPTION-B": 7})
    result = pytester.runpytest("--tom-benchmark=tombench", f"--tom-data-dir={release}", "--tom-model=python:counting_model:answer",
                                "--tom-no-cache", "-p", "no:cacheprovider", "--tb=no", "-q")
    result.stderr.fnmatch_lines([f"ERROR: pytest-tom: file *{FBT}, record line 2, field 'OPTION-B': wrong type: expected text*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR and calls() == 0


def test_a_long_data_error_fits_one_screen() -> None:
    from pytest_tom.errors import TomDataError
    from pytest_tom.run.collect import MAX_LINES, load_error

    shown = load_error(TomDataError("\n".join(f"problem {i}" for i in range(100)), path="f.json")).splitlines()
    assert len(shown) == MAX_LINES and shown[0] == "pytest-tom: file f.json: problem 0" and shown[-1] == "... (81 more lines)"


@pytest.mark.slow
def test_a_data_error_under_xdist_is_the_same_usage_error(pytester: pytest.Pytester, tmp_path: Path, calls: Callable[[], int]) -> None:
    pytest.importorskip("xdist")
    root = _tomvalley_without_trial51(tmp_path)
    result = pytester.runpytest_subprocess("--tom-benchmark=tomvalley", f"--tom-data-dir={root}", "-n", "2", "--tb=no", "-q",
                                           "--tom-model=python:counting_model:answer", "--tom-no-cache", "-p", "no:cacheprovider")
    result.stderr.fnmatch_lines(["ERROR: pytest-tom: file *tomvalley: the ToMValley copy lacks 1 context * trial51 *"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR and calls() == 0
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
