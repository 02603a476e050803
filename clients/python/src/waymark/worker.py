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
import inspect
import logging
import os
import secrets
import signal
import socket
import threading
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Literal, TypeVar, overload

import grpc
from google.protobuf import duration_pb2, struct_pb2

from waymark import _calls, _environment, _schema
from waymark._calls import Backoff, RetryPolicy
from waymark._json import from_value, to_value
from waymark.aio import AsyncClient
from waymark.errors import WaymarkError
from waymark.v1 import worker_service_pb2

__all__ = ["NonRetryableError", "Task", "ToolError", "Worker"]

_F = TypeVar("_F", bound=Callable[..., Any])

_POLICIES = {
    "allow": worker_service_pb2.TOOL_POLICY_ALLOW,
    "ask": worker_service_pb2.TOOL_POLICY_ASK,
    "deny": worker_service_pb2.TOOL_POLICY_DENY,
}

# Codes that retrying the same registration or poll cannot change: Worker.run raises them.
_PERMANENT = frozenset({
    grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED,
    grpc.StatusCode.ALREADY_EXISTS, grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.OUT_OF_RANGE,
})

log = logging.getLogger("waymark.worker")

#: Seconds a result that came after the shutdown grace gets to be delivered (one short try).
_LATE_RESULT_TIMEOUT = 2.0


class ToolError(Exception):
    """A tool's failure with what the engine should do about it: ``name`` is the error name the
    workflow sees (default: the exception's class name), ``non_retryable`` fails the call at
    once, ``retry_after`` (seconds) is the least wait before the next attempt (a rate limit)."""

    non_retryable: bool = False

    def __init__(self, message: str, *, name: str | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.name = name
        self.retry_after = retry_after


class NonRetryableError(ToolError):
    """Retrying cannot help (a declined card, an unknown order): the call fails at once and the
    workflow sees a NonRetryableError. ``raise NonRetryableError("...") from err`` keeps the cause."""

    non_retryable = True


@dataclass
class Task:
    """The remote tool call a tool is serving."""

    id: str
    run_id: str
    tool: str
    namespace: str
    #: The same on every redispatch of the call: pass it to the downstream API.
    idempotency_key: str
    #: 1 for the first dispatch, one more per redispatch.
    attempt: int
    #: When the call times out (UTC); None when the server sent none.
    deadline: datetime | None
    #: Set when the tool should stop: see ``cancel_reason``. Wait on it (``cancelled.wait(1)``)
    #: or check ``cancelled.is_set()`` between steps.
    cancelled: threading.Event = field(default_factory=threading.Event)
    #: Why ``cancelled`` was set: "lost" (dispatched to another worker, or closed: the result
    #: would be refused), "deadline" or "shutdown" (the worker stopped and the grace passed).
    cancel_reason: Literal["lost", "deadline", "shutdown"] | None = None


@dataclass
class _Tool:
    declaration: worker_service_pb2.ToolDeclaration
    fn: Callable[..., Any]
    input_type: Any
    wants_task: bool
    is_async: bool


class Worker:
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
        self._tools: dict[str, _Tool] = {}
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
            tool_name = name or f.__name__
            if tool_name in self._tools:
                raise ValueError(f"tool {tool_name} is registered twice")
            hints = _type_hints(f)
            params = [p for p in inspect.signature(f).parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            if not params or len(params) > 2:
                raise TypeError(f"tool {tool_name} must take the input, and optionally the task: f(input) or f(input, task)")
            input_type = hints.get(params[0].name, Any)
            declaration = worker_service_pb2.ToolDeclaration(
                name=tool_name,
                description=description if description is not None else inspect.cleandoc(f.__doc__ or ""),
                input_schema=to_value(input_schema if input_schema is not None else _schema.schema_of(input_type)),
                output_schema=to_value(output_schema if output_schema is not None else _schema.schema_of(hints.get("return", Any))),
                mutating=mutating,
                policy=_POLICIES[policy],
                max_attempts=max_attempts,
                queue=self.queue,
            )
            if timeout is not None:
                declaration.timeout.CopyFrom(_duration(timeout))
            if heartbeat_timeout is not None:
                declaration.heartbeat_timeout.CopyFrom(_duration(heartbeat_timeout))
            self._tools[tool_name] = _Tool(declaration, f, input_type, len(params) == 2, inspect.iscoroutinefunction(f))
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
            request.worker_ttl.CopyFrom(_duration(self.ttl))
        response = await self._retrying("register", lambda: client._call("RegisterWorker", client.workers.RegisterWorker, request, None))
        if response is not None:
            self.worker_id = response.worker_id
            log.info("worker %s registered %s (queue %r) at %s", self.worker_id, ", ".join(self._tools), self.queue, self.address)

    async def _slot(self, client: AsyncClient) -> None:
        assert self._stopping is not None
        while not self._stopping.is_set():
            request = worker_service_pb2.PollTaskRequest(
                namespace=self.namespace, worker_id=self.worker_id, queue=self.queue, wait=_duration(self.poll_wait)
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

    async def _serve(self, client: AsyncClient, remote: worker_service_pb2.RemoteTask) -> None:
        assert self._stopping is not None
        deadline = remote.deadline.ToDatetime(tzinfo=timezone.utc) if remote.HasField("deadline") else None
        task = Task(
            id=remote.task_id, run_id=remote.run_id, tool=remote.tool, namespace=remote.namespace,
            idempotency_key=remote.idempotency_key, attempt=remote.attempt, deadline=deadline,
        )
        tool = self._tools.get(remote.tool)
        runner = asyncio.ensure_future(self._invoke(tool, task, remote))

        def cancel(reason: Literal["lost", "deadline", "shutdown"]) -> None:
            if task.cancel_reason is None:
                task.cancel_reason = reason
                task.cancelled.set()
                if tool is not None and tool.is_async:
                    runner.cancel()

        loop = asyncio.get_running_loop()
        timer = None
        if deadline is not None:
            left = (deadline - datetime.now(timezone.utc)).total_seconds()
            timer = loop.call_later(max(left, 0), cancel, "deadline")
        beats = asyncio.ensure_future(self._heartbeat(client, remote, task, runner, cancel))
        grace = asyncio.ensure_future(self._grace(runner, cancel))
        log.info("worker %s: task %s (%s, attempt %d) started", self.worker_id, task.id, task.tool, task.attempt)
        output: Any = None
        failure: BaseException | None = None
        try:
            output = await asyncio.shield(runner)
        except asyncio.CancelledError:
            if not runner.done() or task.cancel_reason is None:
                raise  # the worker itself is being cancelled
            failure = asyncio.CancelledError()
        except Exception as err:  # every tool error is reported
            failure = err
        finally:
            if timer is not None:
                timer.cancel()
            beats.cancel()
            grace.cancel()
        if task.cancel_reason == "lost":
            log.warning("worker %s: task %s was lost while the tool ran; its result is dropped", self.worker_id, task.id)
            return
        if task.cancel_reason is not None and failure is not None:
            # Stopped by the deadline or the shutdown: a failure would only say so. The claim
            # lapses (or the call times out) and the engine decides. A result is still returned.
            log.warning("worker %s: task %s stopped (%s) before it finished; not reported", self.worker_id, task.id, task.cancel_reason)
            return
        request = worker_service_pb2.CompleteTaskRequest(
            namespace=self.namespace, worker_id=self.worker_id, task_id=remote.task_id, fencing_token=remote.fencing_token
        )
        if failure is not None:
            request.failure.CopyFrom(_failure(failure))
            log.info("worker %s: task %s failed: %s", self.worker_id, task.id, failure)
        else:
            value = to_value(output)
            request.output.CopyFrom(value if value is not None else struct_pb2.Value(null_value=struct_pb2.NULL_VALUE))
        assert self._grace_over is not None
        try:
            if self._grace_over.is_set():
                # A tool that ignored its cancellation and returned after the grace: one short try.
                response = await client._call("CompleteTask", client.workers.CompleteTask, request, _LATE_RESULT_TIMEOUT)
            else:
                # Retried while the server cannot be reached, but not past the shutdown grace: a
                # worker told to stop exits in time even when its server went away (the claim
                # lapses and the task is dispatched again with the same key).
                response = await _until(self._grace_over, client._call("CompleteTask", client.workers.CompleteTask, request, 60))
        except WaymarkError as err:
            if err.code == grpc.StatusCode.ABORTED:
                log.warning("worker %s: result of task %s refused: the task was lost (%s)", self.worker_id, task.id, err)
            else:
                log.error("worker %s: result of task %s not delivered (%s); it will be dispatched again", self.worker_id, task.id, err)
            return
        if response is None:
            log.error("worker %s: result of task %s not delivered within the shutdown grace; it will be dispatched again", self.worker_id, task.id)
            return
        if not response.applied:
            log.info("worker %s: result of task %s not applied: the call was closed already", self.worker_id, task.id)

    async def _invoke(self, tool: _Tool | None, task: Task, remote: worker_service_pb2.RemoteTask) -> Any:
        if tool is None:
            raise ToolError(f"this worker does not serve {remote.tool}", name="ToolNotServed")
        try:
            value = _schema.convert(tool.input_type, from_value(remote.input))
        except (TypeError, ValueError, KeyError) as err:
            raise NonRetryableError(f"the input of {remote.tool} does not fit its type: {err}", name="InvalidInput") from err
        args = (value, task) if tool.wants_task else (value,)
        result = await tool.fn(*args) if tool.is_async else await asyncio.to_thread(tool.fn, *args)
        return _schema.dump(result)

    async def _heartbeat(self, client: AsyncClient, remote: worker_service_pb2.RemoteTask, task: Task,
                         runner: asyncio.Future[Any], cancel: Callable[[Literal["lost"]], None]) -> None:
        timeout = remote.heartbeat_timeout.ToTimedelta().total_seconds() if remote.HasField("heartbeat_timeout") else 30.0
        every = max(timeout / 3, 0.01)
        request = worker_service_pb2.HeartbeatRequest(
            namespace=self.namespace, worker_id=self.worker_id, task_id=remote.task_id, fencing_token=remote.fencing_token
        )
        while not runner.done():
            await asyncio.sleep(every)
            try:
                await client._call("Heartbeat", client.workers.Heartbeat, request, every)
            except WaymarkError as err:
                if err.code == grpc.StatusCode.ABORTED:
                    log.warning("worker %s: heartbeat of task %s refused: the task was lost", self.worker_id, task.id)
                    cancel("lost")
                    return
                log.warning("worker %s: heartbeat of task %s failed (%s); retrying", self.worker_id, task.id, err)

    async def _grace(self, runner: asyncio.Future[Any], cancel: Callable[[Literal["shutdown"]], None]) -> None:
        assert self._grace_over is not None
        await self._grace_over.wait()
        if not runner.done():
            cancel("shutdown")

    async def _grace_after_stop(self) -> None:
        assert self._stopping is not None and self._grace_over is not None
        await self._stopping.wait()
        await asyncio.sleep(self.shutdown_grace)
        self._grace_over.set()


async def _until(stopping: asyncio.Event, awaitable: Any) -> Any:
    """Awaits ``awaitable`` unless ``stopping`` is set first (then cancels it and returns None)."""
    work = asyncio.ensure_future(awaitable)
    stop = asyncio.ensure_future(stopping.wait())
    try:
        await asyncio.wait({work, stop}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
    if work.done():
        return work.result()
    work.cancel()
    await asyncio.gather(work, return_exceptions=True)
    return None


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


def _failure(err: BaseException) -> worker_service_pb2.TaskFailure:
    failure = worker_service_pb2.TaskFailure(name=type(err).__name__, message=str(err))
    if isinstance(err, ToolError):
        failure.name = err.name or ("Error" if type(err) in (ToolError, NonRetryableError) else type(err).__name__)
        failure.non_retryable = err.non_retryable
        if err.retry_after is not None:
            failure.retry_after.CopyFrom(_duration(err.retry_after))
    return failure


def _duration(seconds: float | timedelta) -> duration_pb2.Duration:
    d = duration_pb2.Duration()
    d.FromTimedelta(seconds if isinstance(seconds, timedelta) else timedelta(seconds=seconds))
    return d


def _type_hints(f: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(f)
    except (NameError, TypeError):
        return dict(getattr(f, "__annotations__", {}))
