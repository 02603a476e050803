"""Remote tools served from Python: functions that Waymark runs call durably
(``ctx.tool("charge_back", args)`` in a workflow, an agent's tools), over waymark.v1.WorkerService.

::

    worker = waymark.Worker("127.0.0.1:50051")

    @worker.tool(name="charge_back", mutating=True, description="Refunds an order")
    def charge_back(charge: Charge, task: waymark.Task) -> Refund:
        provider.refund(charge.order, charge.amount, idempotency_key=task.idempotency_key)
        ...

    worker.run()  # until SIGINT/SIGTERM or worker.stop()

A tool is a plain function (run in a thread) or an ``async def`` (run on the worker's event
loop). Its first parameter is the task's input, converted to its annotation (a pydantic model,
a dataclass, a TypedDict, ...; :mod:`waymark._schema`), which also gives the declared JSON
Schema; a second parameter, if it has one, receives the :class:`Task`: the idempotency key (the
same on every redispatch of the call), the attempt, the deadline and ``cancelled``, a
:class:`threading.Event` set when the task is lost to another worker, its deadline passes or the
worker stops. An ``async def`` tool is also cancelled (``asyncio.CancelledError``) then. Raise
:class:`NonRetryableError` for what a retry cannot fix; any other exception is retried by the
engine with the same idempotency key. docs/workers.md describes the protocol and guarantees.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import signal
import socket
import threading
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any, Literal, TypeVar, overload

import grpc

from waymark import _environment, _tools
from waymark._retry import Backoff, RetryPolicy
from waymark.aio import AsyncClient
from waymark.errors import WaymarkError
from waymark.v1 import worker_service_pb2

from waymark._serving import _TaskServing, _until
from waymark._tools import NonRetryableError, Task, ToolError  # re-exported: waymark.worker.Task

__all__ = ["NonRetryableError", "Task", "ToolError", "Worker"]

_F = TypeVar("_F", bound=Callable[..., Any])


# Codes that retrying the same registration or poll cannot change: Worker.run raises them.
_PERMANENT = frozenset({
    grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED,
    grpc.StatusCode.ALREADY_EXISTS, grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.OUT_OF_RANGE,
})

log = logging.getLogger("waymark.worker")


class Worker(_TaskServing):
    """Serves the tools registered with :meth:`tool`. The connection arguments are those of
    :class:`waymark.AsyncClient` (``tls``, ``server_name``, ``token``, ``namespace``,
    ``options``). ``worker_id`` is kept across reconnects (default host:pid-random); ``queue``
    is the group of workers the tools are served by; ``concurrency`` tasks run at once (each
    idle slot holds one long poll of ``poll_wait`` seconds); ``ttl`` (seconds) is how long the
    worker counts as live without a poll (default the server's, 60 s); ``backoff`` paces retries
    after a failed registration or poll (``give_up_after`` 0: retry for as long as the worker
    runs); ``shutdown_grace`` (seconds) is how long tasks in progress may take to finish once
    the worker stops before they are cancelled."""

    def __init__(
        self,
        address: str | None = None,
        *,
        tls: bool | grpc.ChannelCredentials | None = None,
        server_name: str | None = None,
        token: str | None = None,
        namespace: str | None = None,
        worker_id: str | None = None,
        queue: str = "",
        concurrency: int = 4,
        poll_wait: float = 20.0,
        ttl: float | None = None,
        backoff: Backoff = Backoff(initial=0.1, maximum=5.0, give_up_after=0),
        retry: RetryPolicy = RetryPolicy(),
        shutdown_grace: float = 10.0,
        options: Iterable[tuple[str, Any]] = (),
    ) -> None:
        self._client_args: dict[str, Any] = {
            "tls": tls, "server_name": server_name, "token": token, "namespace": namespace,
            "retry": retry, "options": tuple(options),
        }
        # The environment fills what the code leaves unset, as for the client (docs/clients.md).
        conn = _environment.resolve(address, tls=tls, server_name=server_name, token=token, namespace=namespace)
        self.address = conn.address
        self.namespace = conn.namespace
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}-{secrets.token_hex(2)}"
        self.queue = queue
        self.concurrency = max(1, concurrency)
        self.poll_wait = poll_wait
        self.ttl = ttl
        self.backoff = backoff
        self.shutdown_grace = shutdown_grace
        self._tools: dict[str, _tools.DeclaredTool] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        #: Set ``shutdown_grace`` after the stop: what still runs then (a tool, a result being
        #: delivered to a server that went away) is given up, so the worker exits in time.
        self._grace_over: asyncio.Event | None = None
        self._stop_requested = False

    # Registration

    @overload
    def tool(self, fn: _F, /) -> _F: ...

    @overload
    def tool(
        self,
        fn: None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        mutating: bool = True,
        policy: Literal["allow", "ask", "deny"] = "allow",
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
        timeout: float | timedelta | None = None,
        heartbeat_timeout: float | timedelta | None = None,
        max_attempts: int = 0,
    ) -> Callable[[_F], _F]: ...

    def tool(
        self,
        fn: _F | None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        mutating: bool = True,
        policy: Literal["allow", "ask", "deny"] = "allow",
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
        timeout: float | timedelta | None = None,
        heartbeat_timeout: float | timedelta | None = None,
        max_attempts: int = 0,
    ) -> _F | Callable[[_F], _F]:
        """Registers a function as a tool: ``@worker.tool`` or ``@worker.tool(name=...)``.

        ``name`` defaults to the function's name, ``description`` to its docstring. The input
        and output JSON Schemas come from the annotations of the first parameter and the return
        unless ``input_schema`` / ``output_schema`` are given. ``mutating=False`` lets the tool
        run in dry runs; ``policy`` "ask" parks the run on an approval before each call.
        ``timeout`` bounds a call in all (default the server's, 10 minutes), ``heartbeat_timeout``
        is how long a task may go without a heartbeat before the worker loses it (default 30 s),
        ``max_attempts`` the dispatches a call gets on retryable failures (default 3). Returns the
        function unchanged."""

        def register(f: _F) -> _F:
            tool = _tools.declare(
                f, name=name, description=description, mutating=mutating, policy=policy, input_schema=input_schema,
                output_schema=output_schema, timeout=timeout, heartbeat_timeout=heartbeat_timeout,
                max_attempts=max_attempts, queue=self.queue,
            )
            if tool.declaration.name in self._tools:
                raise ValueError(f"tool {tool.declaration.name} is registered twice")
            self._tools[tool.declaration.name] = tool
            return f

        return register(fn) if fn is not None else register

    # Running

    def run(self, *, handle_signals: bool = True) -> None:
        """Serves tasks until :meth:`stop` (or, with ``handle_signals``, SIGINT or SIGTERM),
        then stops polling, lets the tasks in progress finish within ``shutdown_grace``
        (cancelling the rest) and returns. Raises :class:`waymark.WaymarkError` when the server
        refuses the registration for good (an invalid declaration, no credentials, a server
        without WorkerService)."""

        async def main() -> None:
            if handle_signals and threading.current_thread() is threading.main_thread():
                loop = asyncio.get_running_loop()
                for sig in (signal.SIGINT, signal.SIGTERM):
                    loop.add_signal_handler(sig, self.stop)
            await self.run_async()

        asyncio.run(main())

    def stop(self) -> None:
        """Asks the worker to stop (from any thread, or a signal handler); returns at once."""
        self._stop_requested = True
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None:
            loop.call_soon_threadsafe(stopping.set)

    async def run_async(self) -> None:
        """:meth:`run` on the running event loop (no signal handlers: call :meth:`stop`)."""
        if not self._tools:
            raise ValueError("no tools registered")
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        self._grace_over = asyncio.Event()
        if self._stop_requested:
            self._stopping.set()
        _log_to_stderr_unless_configured()
        client = AsyncClient(self.address, **self._client_args)
        grace = asyncio.ensure_future(self._grace_after_stop())
        try:
            await self._register(client)
            slots = [asyncio.ensure_future(self._slot(client)) for _ in range(self.concurrency)]
            try:
                await asyncio.gather(*slots)
            except BaseException:
                for s in slots:
                    s.cancel()
                await asyncio.gather(*slots, return_exceptions=True)
                raise
        finally:
            grace.cancel()
            await client.close()
            self._loop = None

    async def _retrying(self, what: str, call: Callable[[], Any]) -> Any:
        """Awaits ``call()`` until it succeeds, fails for good, the worker stops (returns None)
        or ``give_up_after`` passes."""
        assert self._stopping is not None
        began = asyncio.get_running_loop().time()
        attempt = 0
        while not self._stopping.is_set():
            try:
                return await _until(self._stopping, call())
            except WaymarkError as err:
                if err.code in _PERMANENT:
                    raise
                give_up = self.backoff.give_up_after
                if give_up and asyncio.get_running_loop().time() - began > give_up:
                    raise
                wait = self.backoff.delay(attempt)
                attempt += 1
                log.warning("worker %s: %s failed (%s); retrying in %.2f s", self.worker_id, what, err, wait)
                await _until(self._stopping, asyncio.sleep(wait))
        return None

    async def _register(self, client: AsyncClient) -> None:
        request = worker_service_pb2.RegisterWorkerRequest(
            namespace=self.namespace, worker_id=self.worker_id, tools=[t.declaration for t in self._tools.values()]
        )
        if self.ttl is not None:
            request.worker_ttl.CopyFrom(_tools.duration(self.ttl))
        response = await self._retrying("register", lambda: client._call("RegisterWorker", client.workers.RegisterWorker, request, None))
        if response is not None:
            self.worker_id = response.worker_id
            log.info("worker %s registered %s (queue %r) at %s", self.worker_id, ", ".join(self._tools), self.queue, self.address)

    async def _slot(self, client: AsyncClient) -> None:
        assert self._stopping is not None
        while not self._stopping.is_set():
            request = worker_service_pb2.PollTaskRequest(
                namespace=self.namespace, worker_id=self.worker_id, queue=self.queue, wait=_tools.duration(self.poll_wait)
            )

            async def poll() -> Any:
                try:
                    return await client._call("PollTask", client.workers.PollTask, request, self.poll_wait + 10)
                except WaymarkError as err:
                    if err.code != grpc.StatusCode.NOT_FOUND:
                        raise
                    log.warning("worker %s: the server does not know this worker; registering again", self.worker_id)
                    await self._register(client)
                    return worker_service_pb2.PollTaskResponse()

            response = await self._retrying("poll", poll)
            if response is not None and response.HasField("task"):
                await self._serve(client, response.task)


    async def _grace_after_stop(self) -> None:
        assert self._stopping is not None and self._grace_over is not None
        await self._stopping.wait()
        await asyncio.sleep(self.shutdown_grace)
        self._grace_over.set()


def _log_to_stderr_unless_configured() -> None:
    """The worker's lines on stderr when the application configured no logging, as Go's
    slog.Default() and the TypeScript worker write them: a worker that says nothing when it
    starts looks like one that serves nothing. Configured logging (any handler on the way to
    the root logger) is left alone."""
    if log.hasHandlers():
        return
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    log.addHandler(handler)
    if log.level == logging.NOTSET:
        log.setLevel(logging.INFO)


