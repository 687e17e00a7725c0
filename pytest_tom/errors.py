"""One exception tree, so users can catch every pytest-tom failure with one clause."""

from __future__ import annotations


class TomError(Exception):
    """Base class of every error pytest-tom raises on purpose."""


class TomConfigError(TomError):
    """An option, URI or suite declaration that cannot work as given."""


class TomDependencyError(TomError):
    """An optional dependency (torch, openai, vllm...) is missing for what was asked."""


class TomDataError(TomError):
    """Benchmark data that is missing or malformed. The message always names the file, the record and the field, because
    a user facing 2,860 records needs to know which one to look at.
    """

    def __init__(self, message: str, *, path: object = None, record: object = None, field: str | None = None) -> None:
        where = (("file", path), ("record", record), ("field", None if field is None else repr(field)))
        prefix = ", ".join(f"{label} {value}" for label, value in where if value is not None)
        super().__init__(f"{prefix}: {message}" if prefix else message)
        self.path = path
        self.record = record
        self.field = field


class TomModelError(TomError):
    """A model backend failed to answer a request (after any retries)."""


class TomCacheError(TomConfigError):
    """The response cache file cannot be read: damaged, not a database, or unreadable. A `TomConfigError`, so the run
    layer stops the run once with a usage error instead of failing every item; the message names the file and the ways
    on (`--tom-no-cache`, or moving the file away).
    """

    def __init__(self, message: str, *, path: object) -> None:
        super().__init__(message)
        self.path = path


class TomCacheWarning(UserWarning):
    """The response cache cannot be written: answers stay in memory for this run only."""


class TomDeprecationWarning(UserWarning):
    """A spelling pytest-tom still accepts but will remove in the next release (e.g. `--tom-tombench-prompt`). Not a
    `DeprecationWarning`: a user's run (and this project's own tests, whose filters turn deprecations from pytest_tom
    into errors) must keep working on the old spelling for one release, with the notice shown, not hidden or raised.
    Filter it as `ignore::pytest_tom.errors.TomDeprecationWarning`.
    """
