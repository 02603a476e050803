"""The asyncio client: the same operations as :class:`waymark.Client`, awaitable."""

from __future__ import annotations

import builtins
import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from datetime import timedelta
from typing import Any, TypeVar, cast

import grpc
from grpc import aio

from waymark import _environment, _follow, _requests, _responses, _retry
from waymark._retry import Backoff, RetryPolicy
from waymark._follow import Reconnect
from waymark.enums import DriftRecovery, RunStatus
from waymark.errors import Unavailable, WaymarkError, error_from_rpc
from waymark._core import ClientCore
from waymark._signals import AsyncSignalCalls
from waymark._flows import AsyncFlows
from waymark.v1 import (
    flow_service_pb2,
    flow_service_pb2_grpc,
    run_pb2,
    run_service_pb2,
    run_service_pb2_grpc,
    signal_service_pb2,
    signal_service_pb2_grpc,
    worker_service_pb2_grpc,
)

__all__ = ["AsyncClient", "AsyncFlows"]

_T = TypeVar("_T")


class AsyncClient(ClientCore, AsyncSignalCalls):
    """An asyncio client; see :class:`waymark.Client` for the arguments. Create it inside a
    running event loop and use ``async with``, or ``await client.close()``. With
    ``connect_timeout``, ``async with`` (or ``await client.wait_ready(...)``) waits for a
    connection and raises :class:`waymark.Unavailable` when none comes in time."""

    def __init__(
        self,
        address: str | None = None,
        *,
        tls: bool | grpc.ChannelCredentials | None = None,
        server_name: str | None = None,
        token: str | None = None,
        namespace: str | None = None,
        timeout: float | None = 30.0,
        backoff: Backoff = Backoff(),
        retry: RetryPolicy = RetryPolicy(),
        connect_timeout: float | None = None,
        wait_for_ready: bool = False,
        options: Iterable[tuple[str, Any]] = (),
    ) -> None:
        self._channel = cast(aio.Channel, self._open(
            aio, address, tls=tls, server_name=server_name, token=token, namespace=namespace, timeout=timeout,
            backoff=backoff, retry=retry, wait_for_ready=wait_for_ready, options=options,
        ))
        self.runs = run_service_pb2_grpc.RunServiceStub(self._channel)
        self.signals = signal_service_pb2_grpc.SignalServiceStub(self._channel)
        self.workers = worker_service_pb2_grpc.WorkerServiceStub(self._channel)
        self.connect_timeout = connect_timeout
        self.flows = AsyncFlows(self)

    async def wait_ready(self, timeout: float) -> None:
        """The readiness check; see :meth:`waymark.Client.wait_ready`."""
        check = self._health_check()
        try:
            response = await check(_requests.readiness_request(), timeout=timeout, metadata=self._metadata)
        except grpc.RpcError as err:
            raise _responses.not_ready(self._address, timeout, error_from_rpc(err)) from err
        if not _responses.serving(response):
            raise _responses.not_ready(self._address, timeout, None)

    async def _connected(self, timeout: float | None) -> bool:
        """Waits (at most ``timeout`` seconds) until the channel has a connection; see
        :meth:`waymark.Client._connected`."""
        check = self._health_check()
        try:
            await check(_requests.readiness_request(), timeout=timeout, metadata=self._metadata, wait_for_ready=True)
        except grpc.RpcError as err:
            return error_from_rpc(err).code != grpc.StatusCode.DEADLINE_EXCEEDED
        return True

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

    async def _call(self, name: str, method: Callable[..., Awaitable[_T]], request: Any, timeout: float | None) -> _T:
        """One call of RPC ``name``, retried as docs/clients.md says (see _retry.Retrier)."""
        retrier = _retry.Retrier(self.retry, timeout, self.timeout)
        if not _retry.repeatable(name, request) and self.retry.budget > 0:
            # Sent once, but not into a connection that is down (see Client._call).
            wait_for = retrier.connect_timeout()
            if not await self._connected(wait_for):
                raise _retry.not_sent(f"within {wait_for:.1f} s")
            retrier.policy = RetryPolicy(budget=0)
        while True:
            try:
                return await method(request, timeout=retrier.attempt_timeout(), metadata=self._metadata, wait_for_ready=self.wait_for_ready)
            except grpc.RpcError as err:
                error = error_from_rpc(err)
                if _retry.wrong_state_after_retry(name, retrier, error):
                    run = await self.get_run(request.run_id, timeout=retrier.attempt_timeout())
                    return run_service_pb2.ResumeRunResponse(run=run.run)  # type: ignore[return-value]
                wait = retrier.next_wait(error)
                if wait is None:
                    raise error from err
            await asyncio.sleep(wait)

    # Runs

    async def start_run(
        self,
        workflow: str,
        input: Any = None,
        *,
        idempotency_key: str | None = None,
        wait: bool = False,
        labels: Mapping[str, str] | None = None,
        budget_usd: float | None = None,
        dry_run: bool = False,
        run_timeout: float | timedelta | None = None,
        timeout: float | None = None,
    ) -> run_service_pb2.StartRunResponse:
        """Starts a run of ``workflow`` with a JSON ``input``.

        With ``wait`` the server executes it right away and answers once it ends or parks (give
        a ``timeout`` long enough). An ``idempotency_key`` already used returns the first run,
        with ``created`` false; without one the client makes one up for this call, so its own
        retries never start a second run. ``run_timeout`` (seconds or a ``timedelta``) is the
        run's own timeout: not finished that long after it started, it fails with reason
        ``run_timed_out``; it replaces the workflow definition's. ``timeout`` bounds this call only.
        """
        request = _requests.start_run(
            self.namespace,
            workflow,
            input,
            idempotency_key=idempotency_key,
            wait=wait,
            labels=labels,
            budget_usd=budget_usd,
            dry_run=dry_run,
            run_timeout=run_timeout,
        )
        response = await self._call("StartRun", self.runs.StartRun, request, timeout)
        return _responses.started(response, request, generated=idempotency_key is None)

    async def get_run(self, run_id: str, *, timeout: float | None = None) -> run_service_pb2.GetRunResponse:
        """A run and, when it is suspended, what it waits for (``waiting_on``)."""
        request = run_service_pb2.GetRunRequest(namespace=self.namespace, run_id=run_id)
        return await self._call("GetRun", self.runs.GetRun, request, timeout)

    async def list_runs(
        self,
        *,
        statuses: Iterable[int] = (),
        workflow: str = "",
        labels: Mapping[str, str] | None = None,
        parent_run_id: str = "",
        page_size: int = 0,
        timeout: float | None = None,
    ) -> AsyncIterator[run_pb2.Run]:
        """Iterates over matching runs, newest first, fetching pages as the loop advances
        (``statuses``: :class:`waymark.RunStatus` values; ``timeout`` bounds each page)."""
        request = _requests.list_runs(
            self.namespace,
            statuses=statuses,
            workflow=workflow,
            labels=labels,
            parent_run_id=parent_run_id,
            page_size=page_size,
        )
        while True:
            page = await self._call("ListRuns", self.runs.ListRuns, request, timeout)
            for run in page.runs:
                yield run
            if not page.next_page_token:
                return
            request.page_token = page.next_page_token

    async def journal(
        self, run_id: str, *, after_seq: int | None = None, page_size: int = 0, timeout: float | None = None
    ) -> AsyncIterator[run_pb2.JournalEntry]:
        """Iterates over a run's journal in seq order (after ``after_seq`` when given)."""
        request = _requests.get_journal(self.namespace, run_id, after_seq, page_size)
        while True:
            page = await self._call("GetJournal", self.runs.GetJournal, request, timeout)
            for entry in page.entries:
                yield entry
            if not page.next_page_token:
                return
            request.page_token = page.next_page_token

    async def events(
        self,
        run_id: str,
        *,
        after_seq: int | None = None,
        follow_suspended: bool = False,
        on_reconnect: Callable[[Reconnect], None] | None = None,
        timeout: float | None = None,
    ) -> AsyncIterator[run_pb2.RunEvent]:
        """Yields a run's events: its history, then live events until it ends (or parks, unless
        ``follow_suspended``).

        When the connection drops or the server answers UNAVAILABLE (a restart, a rollout) it
        reconnects by itself with backoff, resuming after the last seq it yielded, so every event
        arrives exactly once and in seq order. ``on_reconnect`` gets a :class:`waymark.Reconnect`
        (attempt, after_seq, error) before each reconnect. Other failures raise the typed error; so does a stretch of
        ``backoff.give_up_after`` seconds with neither a successful reconnect nor an event
        (:class:`waymark.Unavailable`). ``timeout`` bounds the whole stream (DEADLINE_EXCEEDED).
        Closing the generator cancels the stream.
        """
        follow = _follow.Follow(self.backoff, after_seq, timeout)
        while True:
            error = await self._reconnected(run_id, follow) if follow.reconnecting else None
            if error is None:
                call = self.runs.StreamRunEvents(
                    _requests.stream_events(self.namespace, run_id, follow.last, follow_suspended),
                    timeout=follow.stream_timeout(),
                    metadata=self._metadata,
                )
                try:
                    async for response in call:
                        if follow.fresh(response.event):
                            yield response.event
                except grpc.RpcError as err:
                    error = error_from_rpc(err)
                    if not _follow.reconnectable(error):
                        raise error from err
                finally:
                    call.cancel()
                if error is None:
                    return  # the server ended the stream: the run ended (or parked)
            step = follow.failed(error)
            if step is None:
                raise follow.gave_up(self._address)
            reconnect, wait = step
            if on_reconnect is not None:
                on_reconnect(reconnect)
            await asyncio.sleep(wait)

    async def _reconnected(self, run_id: str, follow: _follow.Follow) -> WaymarkError | None:
        """Opens a reconnect; see :meth:`waymark.Client._reconnected`."""
        try:
            # wait_for_ready: the probe waits for a connection, within the give-up window.
            await self.runs.GetRun(
                run_service_pb2.GetRunRequest(namespace=self.namespace, run_id=run_id),
                timeout=follow.connect_timeout(),
                metadata=self._metadata,
                wait_for_ready=True,
            )
        except grpc.RpcError as err:
            error = error_from_rpc(err)
            if _follow.reconnectable(error) or error.code == grpc.StatusCode.DEADLINE_EXCEEDED:
                return error
        follow.answered()
        return None

    async def result(self, run_id: str, *, timeout: float | None = None) -> Any:
        """Waits for the run to end, following its events (through reconnects, and while it is
        parked), and returns its output as plain JSON. Raises :class:`waymark.RunFailed` when it
        failed or was cancelled; ``timeout`` bounds the wait."""
        deadline = _follow.Deadline(timeout)
        run = (await self.get_run(run_id, timeout=deadline.remaining())).run
        if RunStatus(run.status).terminal:
            return _responses.run_outcome(run_id, run.status, run.output, run.error)
        async for event in self.events(run_id, after_seq=run.next_seq - 1, follow_suspended=True, timeout=deadline.remaining()):
            change = event.status_changed
            if event.WhichOneof("body") == "status_changed" and RunStatus(change.status).terminal:
                return _responses.run_outcome(run_id, change.status, change.output, change.error)
        run = (await self.get_run(run_id, timeout=deadline.remaining())).run
        return _responses.run_outcome_or_still(run_id, run)

    async def resume(
        self,
        run_id: str,
        invalidate: Iterable[int] = (),
        *,
        drift_recovery: int = DriftRecovery.UNSPECIFIED,
        timeout: float | None = None,
    ) -> run_service_pb2.ResumeRunResponse:
        """Makes a suspended or failed run execute again; ``invalidate`` unpins entries by seq.

        ``drift_recovery`` (:class:`waymark.DriftRecovery` ``RESTART`` or ``ABANDON``) recovers a
        run that raised :class:`waymark.FlowDrift`; with RESTART the response's ``restarted_as``
        is the new run. Not retried once sent (a repeat would execute the run again).
        """
        request = _requests.resume_run(
            self.namespace, run_id, dry_run=False, invalidate=invalidate, drift_recovery=drift_recovery
        )
        return await self._call("ResumeRun", self.runs.ResumeRun, request, timeout)

    async def preview_resume(
        self, run_id: str, invalidate: Iterable[int] = (), *, timeout: float | None = None
    ) -> run_pb2.ResumePreview:
        """What :meth:`resume` would do, computed with no live calls and nothing written."""
        request = _requests.resume_run(
            self.namespace, run_id, dry_run=True, invalidate=invalidate, drift_recovery=DriftRecovery.UNSPECIFIED
        )
        return (await self._call("ResumeRun", self.runs.ResumeRun, request, timeout)).preview

    async def cancel(self, run_id: str, reason: str = "", *, timeout: float | None = None) -> run_pb2.Run:
        """Cancels a run; cancelling a finished run returns it unchanged."""
        request = run_service_pb2.CancelRunRequest(namespace=self.namespace, run_id=run_id, reason=reason)
        return (await self._call("CancelRun", self.runs.CancelRun, request, timeout)).run

    async def list_workflows(self, *, timeout: float | None = None) -> list[run_pb2.Workflow]:
        request = run_service_pb2.ListWorkflowsRequest(namespace=self.namespace)
        return list((await self._call("ListWorkflows", self.runs.ListWorkflows, request, timeout)).workflows)

    async def provenance(self, run_id: str, *, timeout: float | None = None) -> run_service_pb2.RunProvenance:
        """What the run's agents answered and the model calls and tool results each answer drew
        on, and the same for each child run."""
        request = run_service_pb2.GetRunProvenanceRequest(namespace=self.namespace, run_id=run_id)
        return (await self._call("GetRunProvenance", self.runs.GetRunProvenance, request, timeout)).provenance

