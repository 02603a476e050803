"""Serving one task, the part of :class:`waymark.Worker` that runs a tool: its cancellation
(lost, deadline, shutdown), its heartbeats and its result, bounded by the shutdown grace."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal

import grpc
from google.protobuf import struct_pb2

from waymark import _schema
from waymark._json import from_value, to_value
from waymark._tools import DeclaredTool, NonRetryableError, Task, ToolError, task_failure
from waymark.errors import WaymarkError
from waymark.v1 import worker_service_pb2

if TYPE_CHECKING:
    from waymark.aio import AsyncClient

log = logging.getLogger("waymark.worker")

#: Seconds a result that came after the shutdown grace gets to be delivered (one short try).
_LATE_RESULT_TIMEOUT = 2.0


class _TaskServing:
    """What serving a task needs of the worker; :class:`waymark.Worker` provides it."""

    worker_id: str
    namespace: str
    _tools: dict[str, DeclaredTool]
    _stopping: asyncio.Event | None
    _grace_over: asyncio.Event | None

    async def _serve(self, client: AsyncClient, remote: worker_service_pb2.RemoteTask) -> None:
        assert self._stopping is not None
        deadline = remote.deadline.ToDatetime(tzinfo=timezone.utc) if remote.HasField("deadline") else None
        task = Task(
            id=remote.task_id, run_id=remote.run_id, tool=remote.tool, namespace=remote.namespace,
            idempotency_key=remote.idempotency_key, attempt=remote.attempt, deadline=deadline,
            traceparent=remote.traceparent or None,
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
            request.failure.CopyFrom(task_failure(failure))
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

    async def _invoke(self, tool: DeclaredTool | None, task: Task, remote: worker_service_pb2.RemoteTask) -> Any:
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
