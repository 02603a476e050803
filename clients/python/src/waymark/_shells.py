"""The only I/O of the clients: a blocking shell and an asyncio one that perform an operation's
steps (``_steps.py``), and the decorators that turn an operation into a client method of either
style, with the operation's parameters, types and docstring.

``start_run = blocking(_runs.start_run)`` in :class:`waymark.Client` is a method that runs the
operation to its end and returns its value; ``awaitable`` in :class:`waymark.AsyncClient` makes
it a coroutine; ``blocking_iter`` and ``async_iter`` do the same for operations that yield items
(an ``Iterator`` or an ``AsyncIterator``). The object the method is called on is the operation's
first argument and has the shell as ``_shell``.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Coroutine, Iterator
from typing import Any, Concatenate, ParamSpec, TypeVar

from grpc import aio

from waymark._steps import END, Done, Driver, Item, Items, Op, Read, Sleep, Step, Stream, Unary

_P = ParamSpec("_P")
_R = TypeVar("_R")
_T = TypeVar("_T")


class _Shell:
    def __init__(self, metadata: tuple[tuple[str, str], ...]) -> None:
        self._metadata = metadata  # sent with every call: the bearer token, if any


class SyncShell(_Shell):
    """Performs steps with grpcio's blocking stubs and ``time.sleep``."""

    def run(self, op: Op[_R]) -> _R:
        driver = Driver(op)
        while not isinstance(step := driver.advance(), Done):
            self._perform(driver, step)
        return step.value

    def iterate(self, op: Items[_T]) -> Iterator[_T]:
        driver = Driver(op)
        try:
            while not isinstance(step := driver.advance(), Done):
                if isinstance(step, Item):
                    yield step.value
                else:
                    self._perform(driver, step)
        finally:
            op.close()  # a caller that stops early (or fails) cancels the operation's stream

    def _perform(self, driver: Driver[Any], step: Step | Item[Any]) -> None:
        try:
            driver.answer(self._do(step))
        except BaseException as failure:  # noqa: B036 - raised again inside the operation
            driver.fail(failure)

    def _do(self, step: Step | Item[Any]) -> Any:
        if isinstance(step, Unary):
            return step.method(step.request, timeout=step.timeout, metadata=self._metadata, wait_for_ready=step.wait_for_ready)
        if isinstance(step, Stream):
            return step.method(step.request, timeout=step.timeout, metadata=self._metadata)
        if isinstance(step, Read):
            return next(step.call, END)
        if isinstance(step, Sleep):
            return time.sleep(step.seconds)
        raise TypeError(f"not a step of a blocking call: {step!r}")


class AsyncShell(_Shell):
    """Performs steps with grpc.aio's stubs and ``asyncio.sleep``."""

    async def run(self, op: Op[_R]) -> _R:
        driver = Driver(op)
        while not isinstance(step := driver.advance(), Done):
            await self._perform(driver, step)
        return step.value

    async def iterate(self, op: Items[_T]) -> AsyncGenerator[_T, None]:
        driver = Driver(op)
        try:
            while not isinstance(step := driver.advance(), Done):
                if isinstance(step, Item):
                    yield step.value
                else:
                    await self._perform(driver, step)
        finally:
            op.close()  # a caller that stops early (or fails) cancels the operation's stream

    async def _perform(self, driver: Driver[Any], step: Step | Item[Any]) -> None:
        try:
            driver.answer(await self._do(step))
        except BaseException as failure:  # noqa: B036 - raised again inside the operation
            driver.fail(failure)

    async def _do(self, step: Step | Item[Any]) -> Any:
        if isinstance(step, Unary):
            return await step.method(step.request, timeout=step.timeout, metadata=self._metadata, wait_for_ready=step.wait_for_ready)
        if isinstance(step, Stream):
            return step.method(step.request, timeout=step.timeout, metadata=self._metadata)
        if isinstance(step, Read):
            message = await step.call.read()
            return END if message is aio.EOF else message
        if isinstance(step, Sleep):
            return await asyncio.sleep(step.seconds)
        raise TypeError(f"not a step of an asyncio call: {step!r}")


def _like(method: Callable[..., Any], op: Callable[..., Any], returns: str) -> None:
    """Gives ``method`` the operation's name and docstring, and the signature it would have had
    written by hand (``self`` first, ``returns`` the style's return type around the operation's
    value), for ``help()`` and ``inspect``; static typing comes from the decorators' types."""
    functools.update_wrapper(method, op)
    signature = inspect.signature(op)
    first, *rest = signature.parameters.values()
    value = str(signature.return_annotation)
    value = value[value.index("[") + 1 : -1]  # Op[X] or Items[X] (the annotations are strings)
    method.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[first.replace(name="self", annotation=inspect.Parameter.empty), *rest],
        return_annotation=returns.format(value),
    )


def blocking(op: Callable[Concatenate[Any, _P], Op[_R]]) -> Callable[Concatenate[Any, _P], _R]:
    def method(self: Any, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        shell: SyncShell = self._shell
        return shell.run(op(self, *args, **kwargs))

    _like(method, op, "{}")
    return method


def blocking_iter(op: Callable[Concatenate[Any, _P], Items[_T]]) -> Callable[Concatenate[Any, _P], Iterator[_T]]:
    def method(self: Any, /, *args: _P.args, **kwargs: _P.kwargs) -> Iterator[_T]:
        shell: SyncShell = self._shell
        yield from shell.iterate(op(self, *args, **kwargs))  # closing the method's generator closes it

    _like(method, op, "Iterator[{}]")
    return method


# Each method is a coroutine function or an async generator function, as it was written by hand.


def awaitable(op: Callable[Concatenate[Any, _P], Op[_R]]) -> Callable[Concatenate[Any, _P], Coroutine[Any, Any, _R]]:
    async def method(self: Any, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        shell: AsyncShell = self._shell
        return await shell.run(op(self, *args, **kwargs))

    _like(method, op, "{}")
    return method


def async_iter(op: Callable[Concatenate[Any, _P], Items[_T]]) -> Callable[Concatenate[Any, _P], AsyncIterator[_T]]:
    async def method(self: Any, /, *args: _P.args, **kwargs: _P.kwargs) -> AsyncIterator[_T]:
        shell: AsyncShell = self._shell
        items = shell.iterate(op(self, *args, **kwargs))
        try:
            async for item in items:
                yield item
        finally:
            await items.aclose()  # no ``yield from`` here: the caller's aclose() ends the stream now

    _like(method, op, "AsyncIterator[{}]")
    return method
