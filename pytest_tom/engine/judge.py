"""The model a judge request goes to: the one --tom-judge names, else `NoJudge` (see `pytest_tom.framework.judge`)."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_tom.models import make_model
from pytest_tom.models.base import Model
from pytest_tom.request import Request, Response


class NoJudge(Model):
    """No --tom-judge: every judge request gets an answer without text, so each benchmark keeps its own verdict."""

    uri = "none"

    def fingerprint(self) -> str:
        return "no-judge"

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        return [Response() for _ in requests]


def judge_model(uri: str | None) -> Model:
    """The judge a run asks: the model `uri` names (any --tom-model URI), or `NoJudge`."""
    return make_model(uri) if uri else NoJudge()
