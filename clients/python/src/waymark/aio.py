"""The asyncio client: the same operations as :class:`waymark.Client` (_runs.py, _signals.py,
_flows.py), awaitable."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import grpc
from grpc import aio

from waymark import _follow, _forks, _runs, _signals, _tokens, _unary
from waymark._core import ClientCore
from waymark._flows import AsyncFlows
from waymark._mcp import AsyncMcpServers
from waymark._schedules import AsyncSchedules
from waymark._shells import AsyncShell, async_iter, awaitable
from waymark.v1 import run_service_pb2_grpc, signal_service_pb2_grpc, worker_service_pb2_grpc

_T = TypeVar("_T")

__all__ = ["AsyncClient", "AsyncFlows", "AsyncMcpServers", "AsyncSchedules"]


class AsyncClient(ClientCore):
    """An asyncio client; see :class:`waymark.Client` for the arguments. Create it inside a
    running event loop and use ``async with``, or ``await client.close()``. With
    ``connect_timeout``, ``async with`` (or ``await client.wait_ready(...)``) waits for a
    connection and raises :class:`waymark.Unavailable` when none comes in time."""

    _channels = aio
    _channel: aio.Channel

    def _attach(self, connect_timeout: float | None) -> None:
        self._shell = AsyncShell(self._metadata)
        self.runs = run_service_pb2_grpc.RunServiceStub(self._channel)
        self.signals = signal_service_pb2_grpc.SignalServiceStub(self._channel)
        self.workers = worker_service_pb2_grpc.WorkerServiceStub(self._channel)
        self.connect_timeout = connect_timeout
        self.flows = AsyncFlows(self)
        self.mcp = AsyncMcpServers(self)
        self.schedules = AsyncSchedules(self)

    async def close(self) -> None:
        await self._channel.close(grace=None)

    async def __aenter__(self) -> AsyncClient:
        if self.connect_timeout is not None:
            try:
                await self.wait_ready(self.connect_timeout)
            except BaseException:
                await self.close()
                raise
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    wait_ready = awaitable(_unary.wait_ready)

    async def _call(self, name: str, method: Callable[..., Awaitable[_T]], request: Any, timeout: float | None) -> _T:
        """One call of RPC ``name`` with the retries of docs/clients.md (the worker's calls), typed
        by the stub's method."""
        response: _T = await self._shell.run(_unary.call(self, name, method, request, timeout))
        return response

    # Runs
    start_run = awaitable(_runs.start_run)
    get_run = awaitable(_runs.get_run)
    list_runs = async_iter(_runs.list_runs)
    purge_runs = awaitable(_runs.purge_runs)
    journal = async_iter(_runs.journal)
    events = async_iter(_follow.events)
    result = awaitable(_runs.result)
    resume = awaitable(_runs.resume)
    preview_resume = awaitable(_runs.preview_resume)
    cancel = awaitable(_runs.cancel)
    list_workflows = awaitable(_runs.list_workflows)
    provenance = awaitable(_runs.provenance)
    tokens = async_iter(_tokens.tokens)

    # Forks and comparing runs (docs/forks.md)
    fork = awaitable(_forks.fork)
    preview_fork = awaitable(_forks.preview_fork)
    compare_runs = awaitable(_forks.compare_runs)

    # Signals and approvals
    send_signal = awaitable(_signals.send_signal)
    list_approvals = async_iter(_signals.list_approvals)
    get_approval = awaitable(_signals.get_approval)
    approve = awaitable(_signals.approve)
    deny = awaitable(_signals.deny)
