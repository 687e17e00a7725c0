"""The typed field readers: each value a loader reads, or an error naming file, record and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_tom.errors import TomDataError
from pytest_tom.framework import fields

P = Path("x.jsonl")


def test_text_is_returned_as_written() -> None:
    assert fields.text({"q": " Where? "}, "q", P, "line 2") == " Where? "


@pytest.mark.parametrize(("value", "message"), [
    (None, "missing or empty text"), ("  ", "missing or empty text"),
    (7, "wrong type: expected text, got int 7"), (["a"], "wrong type: expected text, got list ['a']"),
])
def test_a_bad_text_names_file_record_and_field(value: object, message: str) -> None:
    with pytest.raises(TomDataError) as err:
        fields.text({"q": value}, "q", P, "line 2", "beliefQAs[0]")
    assert f"x.jsonl, record line 2, field 'beliefQAs[0].q': {message}" in str(err.value)


def test_a_long_wrong_value_is_cut() -> None:
    assert fields.wrong_type("text", list(range(100))).endswith("...")
    assert len(fields.shown("a" * 200)) == 60


def test_integer_refuses_bools_and_values_outside_allowed() -> None:
    assert fields.integer({"n": 2}, "n", P, "#0", (1, 2)) == 2
    assert fields.integer({"n": -5}, "n", P, "#0") == -5
    with pytest.raises(TomDataError, match="expected one of 1, 2, got 3"):
        fields.integer({"n": 3}, "n", P, "#0", (1, 2))
    with pytest.raises(TomDataError, match="expected an integer, got True"):
        fields.integer({"n": True}, "n", P, "#0")


def test_one_of_names_the_vocabulary() -> None:
    assert fields.one_of({"a": "accessible"}, "a", P, "#1", ("inaccessible", "accessible")) == "accessible"
    with pytest.raises(TomDataError, match="expected 'inaccessible' or 'accessible', got 'x'"):
        fields.one_of({"a": "x"}, "a", P, "#1", ("inaccessible", "accessible"))


def test_names_and_objects() -> None:
    assert fields.names({"c": ["Ann", "Bo"]}, "c", P, "#1") == ("Ann", "Bo")
    with pytest.raises(TomDataError, match="field 'q.c': expected a list of character names"):
        fields.names({"c": ["Ann", ""]}, "c", P, "#1", "q")
    assert fields.obj({"o": {"k": 1}}, "o", P, "#1") == {"k": 1}
    with pytest.raises(TomDataError, match="field 'o': expected an object, got list"):
        fields.obj({"o": []}, "o", P, "#1")


def test_flag_is_a_json_boolean_only() -> None:
    assert fields.flag({"observed": False}, "observed", P, "k1") is False
    for value in (0, 1, "true", None):
        with pytest.raises(TomDataError, match=r"record k1, field 'observed': expected true or false, got"):
            fields.flag({"observed": value}, "observed", P, "k1")


def test_keys_must_be_exactly_the_expected_ones() -> None:
    rec = {"question": "Q?", "answer": "A"}
    assert fields.keys(rec, ("answer", "question"), P, "k1[0]") is rec
    with pytest.raises(TomDataError, match=r"record k1\[0\]: expected exactly the keys answer, question; got answer, "
                                           r"question, type"):
        fields.keys({**rec, "type": "x"}, ("question", "answer"), P, "k1[0]")
    with pytest.raises(TomDataError, match="expected exactly the keys answer, question; got list"):
        fields.keys(["Q?", "A"], ("question", "answer"), P, "k1[0]")
