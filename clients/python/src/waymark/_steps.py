"""What an operation asks its client to do, so that each operation is written once for the
blocking and the asyncio client (docs: clients/python/README.md "Development").

An operation is a generator: it builds its requests, yields a step for each piece of I/O (one
attempt of a unary call, opening a stream, reading its next message, a wait), receives the answer
(or has the failure raised where it yielded), and returns what the method returns. An operation
that iterates (a listing, an event stream) also yields ``Item``s for its caller. ``_shells.py``
performs the steps, blocking or awaited; nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, Union

from waymark._retry import Backoff, RetryPolicy

_R = TypeVar("_R")
_T = TypeVar("_T")


@dataclass(frozen=True)
class Unary:
    """One attempt of a unary call: ``method`` is the stub's (or the health check's) callable.
    The answer is the response message."""

    method: Callable[..., Any]
    request: Any
    timeout: float | None
    wait_for_ready: bool | None = None


@dataclass(frozen=True)
class Stream:
    """Opens a server stream; the answer is the call, which ``Read`` reads and ``cancel()`` ends."""

    method: Callable[..., Any]
    request: Any
    timeout: float | None


@dataclass(frozen=True)
class Read:
    """The next message of an open stream; the answer is the message, or ``END`` once the server
    ended the stream."""

    call: Any


@dataclass(frozen=True)
class Sleep:
    seconds: float


@dataclass(frozen=True)
class Item(Generic[_T]):
    """A value for the caller of an iterating operation (a run of a listing, an event)."""

    value: _T


class _End:
    def __repr__(self) -> str:
        return "END"


END = _End()
"""What ``Read`` answers at the end of a stream, and ``next_item`` after the last item."""

Step = Union[Unary, Stream, Read, Sleep]
Op = Generator[Step, Any, _R]
"""An operation that returns an ``_R``."""
Items = Generator[Union[Step, Item[_T]], Any, None]
"""An operation that yields ``_T``s to its caller."""


class Core(Protocol):
    """What the operations read of the client they run for (``ClientCore`` and its stubs)."""

    namespace: str
    timeout: float | None
    backoff: Backoff
    retry: RetryPolicy
    wait_for_ready: bool
    _address: str

    @property
    def runs(self) -> Any: ...

    @property
    def signals(self) -> Any: ...

    def _health_check(self) -> Any: ...


@dataclass
class Done(Generic[_R]):
    value: _R


class Driver(Generic[_R]):
    """Steps through one operation for whoever performs its steps: ``advance`` gives the next step
    (or item, or ``Done``), after ``answer`` or ``fail`` said how the previous one went."""

    def __init__(self, op: Generator[Any, Any, _R]) -> None:
        self.op = op
        self._answer: Any = None
        self._failure: BaseException | None = None

    def advance(self) -> Step | Item[Any] | Done[_R]:
        failure, self._failure = self._failure, None
        try:
            step: Step | Item[Any] = self.op.throw(failure) if failure is not None else self.op.send(self._answer)
        except StopIteration as stop:
            return Done(stop.value)
        return step

    def answer(self, value: Any) -> None:
        self._answer = value

    def fail(self, failure: BaseException) -> None:
        """The step raised ``failure``: it is raised in the operation where it yielded the step,
        so the operation's own ``try``/``except`` handles it as if it had made the call."""
        self._answer, self._failure = None, failure


def next_item(driver: Driver[None]) -> Generator[Step, Any, Any]:
    """Within an operation, the next item of another one (``END`` after its last): its steps pass
    through to the shell, and their answers and failures back to it."""
    while True:
        step = driver.advance()
        if isinstance(step, Done):
            return END
        if isinstance(step, Item):
            return step.value
        try:
            driver.answer((yield step))
        except BaseException as failure:  # noqa: B036 - handed to the inner operation, which re-raises it
            driver.fail(failure)
