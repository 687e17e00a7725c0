"""Issue 15's speed levers: answer-contract stops, shared-prefix reuse, GPU batch sizing.

Each lever must leave every parsed answer unchanged: the stops are checked
against the parsers' own functions (parse(full) == parse(answer cut at the
stop), for any text), prefix reuse against the plain path on tiny random
models (identical greedy tokens), batch sizing with made-up memory figures
(no GPU needed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_tom.evals.simpletom.prompts import DIRECT_STOPS
from pytest_tom.evals.simpletom.scoring import parse_answer
from pytest_tom.evals.tomato.prompts import PromptConfig as ToMATOConfig
from pytest_tom.evals.tomato.scoring import extract
from pytest_tom.models._common import cut_at_stops
from pytest_tom.models._prefix import plan, sharing_order
from pytest_tom.models.hf.batching import AdaptiveBatches, CapacityProbe, fitting_batch
from pytest_tom.request import GenerationSettings, Message, Request
from pytest_tom.scoring.choice import bracketed_label, bracketed_stops

# Texts built from the pieces the parsers look for, so that stops, near-misses and overrides all occur.
PIECES = ["[[A]]", "[[B]]", "[[C]]", "[[D]]", "[A]", "[B]", "[C]", "[D]", "[,]", "[[", "]]", "[", "]", "(A)", "(B)",
          "(C)", "(A", "(B", "A", "B", "C", "D", "answer", "Answer:", "the answer is", " ", "\n", "x", ",", ")", "("]
texts = st.lists(st.sampled_from(PIECES), max_size=14).map("".join)


# -- answer-contract stops -------------------------------------------------------------------------------


class TestCutAtStops:
    def test_kept_and_excluded_stops(self) -> None:
        assert cut_at_stops("So [[A]] because", (), ("[[A]]",)) == "So [[A]]"
        assert cut_at_stops("a\nb [[A]]", ("\n",), ("[[A]]",)) == "a"
        assert cut_at_stops("[[A]]\nmore", ("\n",), ("[[A]]",)) == "[[A]]"
        assert cut_at_stops("no stop here", ("\n",), ("[[A]]",)) == "no stop here"

    def test_the_stop_completed_first_decides(self) -> None:
        # "[B]" is complete before "[[B]]" would be: a backend halts there.
        assert cut_at_stops("x [[B]] y", (), ("[[B]]", "[B]")) == "x [[B]"


@settings(max_examples=400, deadline=None)
@given(texts)
@pytest.mark.parametrize("mode", ["official", "lenient", "strict"])
@pytest.mark.parametrize("n_options", [2, 4])
def test_tombench_stop_never_changes_the_reading(mode: str, n_options: int, text: str) -> None:
    stops = bracketed_stops(mode)
    assert bracketed_label(cut_at_stops(text, (), stops), mode, n_options) == bracketed_label(text, mode, n_options)


def test_tombench_reads_by_label_priority_so_only_the_first_label_settles_it() -> None:
    """Why the stop is "[[A]]" alone: a later "[[A]]" overrides an earlier "[[B]]" (upstream's rule)."""
    assert bracketed_stops("lenient") == bracketed_stops("official") == ("[[A]]",)
    assert bracketed_stops("strict") == ()
    assert bracketed_label("[[B]] no, [[A]]", "lenient", 4) == "A" != bracketed_label("[[B]]", "lenient", 4)


@settings(max_examples=400, deadline=None)
@given(texts)
def test_simpletom_direct_stop_never_changes_the_reading(text: str) -> None:
    assert parse_answer(cut_at_stops(text, (), DIRECT_STOPS), cot=False) == parse_answer(text, cot=False)


def test_simpletom_chain_of_thought_has_no_stop() -> None:
    """A chain of thought is read after its LAST "the answer is": stopping at any "(A)" could change it."""
    from pytest_tom.evals.simpletom import SimpleToM

    assert parse_answer("the answer is (A). Wait, the answer is (B)", cot=True) == "B"
    cot = SimpleToM({"intervention": "cot"}).config
    from pytest_tom.evals.simpletom.prompts import MENTAL_STATE, build_request
    from pytest_tom.sample import Choice

    choices = (Choice("A", "yes"), Choice("B", "no"))
    assert build_request("story", "q?", choices, cot, "behavior").settings.stop_after == ()
    assert build_request("story", "q?", choices, cot, MENTAL_STATE).settings.stop_after == ()  # the released CoT run
    direct_ms = SimpleToM({"intervention": "cot", "cot_mental_state": "false"}).config  # the paper's section 5.3
    assert build_request("story", "q?", choices, direct_ms, MENTAL_STATE).settings.stop_after == DIRECT_STOPS


@settings(max_examples=400, deadline=None)
@given(texts)
@pytest.mark.parametrize("mode", ["first", "official", "last"])
def test_tomato_stop_never_changes_the_reading(mode: str, text: str) -> None:
    stops = ToMATOConfig(extraction=mode).stops
    assert extract(cut_at_stops(text, (), stops), mode) == extract(text, mode)


def test_tomato_stops_follow_the_extraction() -> None:
    assert ToMATOConfig().stops == ("[A]", "[B]", "[C]", "[D]")
    assert ToMATOConfig(extraction="official").stops[-1] == "[,]"
    assert ToMATOConfig(extraction="last").stops == ()
    assert ToMATOConfig(stop_at_answer=False).stops == ()
    assert ToMATOConfig().settings(0).stop_after == ToMATOConfig().stops


def test_tombench_requests_carry_the_stop_unless_turned_off() -> None:
    from pytest_tom.evals.tombench import ToMBench

    assert ToMBench({}).config.stops == ("[[A]]",)
    assert ToMBench({"stop_at_answer": "false"}).config.stops == ()
    assert ToMBench({"extraction": "strict"}).config.stops == ()
    assert ToMBench({}).describe()["settings"]["stop_at_answer"] == "true"


def test_the_stop_is_in_the_cache_key_only_when_set() -> None:
    msgs = (Message("user", "x"),)
    plain = Request(messages=msgs, settings=GenerationSettings(max_new_tokens=8))
    stopped = Request(messages=msgs, settings=GenerationSettings(max_new_tokens=8, stop_after=("[[A]]",)))
    assert "stop_after" not in plain.to_dict()["settings"]  # keys of requests without it are unchanged
    assert stopped.to_dict()["settings"]["stop_after"] == ["[[A]]"] and stopped.key != plain.key


# -- shared-prefix planning --------------------------------------------------------------------------------


def test_sharing_order_puts_shared_prefixes_together_longest_first() -> None:
    system = list(range(100, 120))
    story_a, story_b = list(range(200, 260)), list(range(300, 330))
    seqs = [system + story_b + [1], system + story_a + [2], system + story_b + [3], system + story_a + [4], [7, 8]]
    order = sharing_order(seqs)
    assert order[:2] in ([1, 3], [3, 1]) and set(order[2:4]) == {0, 2} and order[4] == 4


def test_plan_shares_the_base_and_the_groups_and_saves_positions() -> None:
    system = list(range(100, 120))
    story_a, story_b = list(range(200, 260)), list(range(300, 350))
    seqs = [system + story_a + [1, 1], system + story_a + [2], system + story_b + [3], system + story_b + [4, 4, 4]]
    p = plan(seqs)
    assert p is not None and p.base == 20 and p.cost < p.plain_cost
    assert [members for _, members in p.groups] == [(0, 1), (2, 3)]
    assert [prefix for prefix, _ in p.groups] == [80, 70]
    assert plan([[1, 2, 3], [4, 5, 6]]) is None  # nothing shared: the plain path
    assert plan([[1, 2, 3]]) is None


# -- GPU batch sizing ---------------------------------------------------------------------------------------


def test_fitting_batch_grows_to_the_largest_power_of_two_that_fits() -> None:
    gib = 1 << 30
    # 64 rows peaked at 8 GiB over the weights; each row needs 1/8 GiB, twice that at the full token budget.
    got = fitting_batch(64, rows=64, peak=10 * gib, base=2 * gib, width=500, generated=0, max_new=500,
                        available=70 * gib)
    assert got == 128  # 70 GiB * 0.85 / 0.25 GiB = 238 rows -> 128
    assert fitting_batch(64, rows=64, peak=10 * gib, base=2 * gib, width=500, generated=500, max_new=500,
                         available=70 * gib) == 256
    assert fitting_batch(64, rows=64, peak=60 * gib, base=2 * gib, width=500, generated=500, max_new=500,
                         available=10 * gib) == 64  # never shrinks: out-of-memory does that
    assert fitting_batch(64, rows=64, peak=2 * gib, base=2 * gib, width=1, generated=1, max_new=1,
                         available=gib) == 64


class _FakeCuda:
    """torch.cuda's memory counters, scripted: 1 GiB of weights, a batch that peaks 64 MiB per row."""

    def __init__(self) -> None:
        self.allocated = 1 << 30
        self.peak = self.allocated

    def reset_peak_memory_stats(self, device: Any) -> None:
        self.peak = self.allocated

    def memory_allocated(self, device: Any) -> int:
        return self.allocated

    def max_memory_allocated(self, device: Any) -> int:
        return self.peak

    def memory_reserved(self, device: Any) -> int:
        return self.peak

    def mem_get_info(self, device: Any) -> tuple[int, int]:
        return 40 << 30, 80 << 30


class _FakeTorch:
    def __init__(self) -> None:
        self.cuda = _FakeCuda()


def test_the_probe_grows_once_and_out_of_memory_still_halves() -> None:
    fake = _FakeTorch()
    probe = CapacityProbe(fake, "cuda")
    batches = AdaptiveBatches(4, lambda: None)
    batches.grow = probe.fitting
    sizes: list[int] = []
    oom_once = [True]

    def fn(items: list[int]) -> list[int]:
        sizes.append(len(items))
        if len(items) > 64 and oom_once[0]:
            oom_once[0] = False
            raise RuntimeError("CUDA out of memory")
        probe.before(len(items), 100, 28)
        fake.cuda.peak = fake.cuda.allocated + len(items) * (64 << 20)
        probe.after(28)
        return [i * 10 for i in items]

    out = list(batches.run(list(range(300)), fn))
    assert [r for _, r in out] == [i * 10 for i in range(300)]
    # 40 GiB free + 0.25 GiB reserved-but-unused, * 0.85 / 64 MiB = 547 rows -> 512; then one OOM halves to 256.
    assert sizes[:3] == [4, 296, 148] and batches.grown_from == 4 and batches.backoffs == 1
    assert probe.describe()["chosen"] == 512 and probe.describe()["peak_per_row_mib"] == 64.0


# -- on tiny random models ------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=["llama", "gpt2"])
def tiny(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from helpers.tiny_models import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / request.param, arch=request.param)  # type: ignore[no-any-return]


def _shared_requests(max_new_tokens: int = 12, **settings: Any) -> list[Request]:
    story = "Anne puts the ball in the basket and leaves. Sally moves it to the box. "
    out = []
    for q in range(4):
        for t in range(3):
            user = story * (1 + q % 2) + f"Question {q}{'?' * q}. Options {t}: " + "ab"[t % 2] * (t + 1)
            out.append(Request(messages=(Message("system", "You answer ToM questions carefully."), Message("user", user)),
                               settings=GenerationSettings(max_new_tokens=max_new_tokens, **settings)))
    out.append(Request(messages=(Message("user", "short"),),
                       settings=GenerationSettings(max_new_tokens=max_new_tokens, **settings)))
    return out


def test_prefix_reuse_gives_the_plain_paths_greedy_tokens(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_tom.models import make_model
    from pytest_tom.models._prefix import takes_cache_objects

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    requests = _shared_requests()
    texts = {}
    for on in ("false", "true"):
        model = make_model(f"hf:{tiny}?batch_size=8&prefix_cache={on}")
        texts[on] = [r.text for r in model.generate(requests)]
        assert model.describe()["prefix_cache"] is (on == "true")
        shared = model.shared_prefix_tokens
        takes_cache = takes_cache_objects(model.model)
        model.close()
    # transformers < 4.47 has architectures (GPT-2) that take only legacy tuple caches: they keep the plain path.
    assert (shared > 0) is takes_cache, "the shared path ran where the model takes a cache object, and only there"
    assert len(set(texts["true"])) > 3, "distinct, non-trivial answers"
    assert texts["true"] == texts["false"]


def test_an_answer_contract_stop_keeps_the_stop_and_cuts_the_rest(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_tom.models import make_model

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = make_model(f"hf:{tiny}?batch_size=4")
    free = model.generate(_shared_requests(16))
    stop = next(r.text[3:5] for r in free if r.text and len(r.text) > 6)
    stopped = model.generate(_shared_requests(16, stop_after=(stop,)))
    for a, b in zip(free, stopped, strict=True):
        assert b.text == cut_at_stops(a.text or "", (), (stop,))
        assert b.usage["completion_tokens"] <= a.usage["completion_tokens"]
    assert any(b.usage["completion_tokens"] < a.usage["completion_tokens"] for a, b in zip(free, stopped, strict=True))
    model.close()
