"""The asyncio client: the same operations as :class:`waymark.Client`, awaitable."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar

import grpc
from grpc import aio

from waymark import _calls
from waymark._calls import Backoff
from waymark.errors import WaymarkError, error_from_rpc
from waymark.v1 import (
    run_pb2,
    run_service_pb2,
    run_service_pb2_grpc,
    signal_service_pb2,
    signal_service_pb2_grpc,
)

__all__ = ["AsyncClient"]

_T = TypeVar("_T")


class AsyncClient:
    """An asyncio client; see :class:`waymark.Client` for the arguments. Create it inside a
    running event loop and use ``async with``, or ``await client.close()``."""

    def __init__(
        self,
        address: str = _calls.DEFAULT_ADDRESS,
        *,
        tls: bool | grpc.ChannelCredentials = False,
        token: str | None = None,
        namespace: str = "",
        timeout: float | None = 30.0,
        backoff: Backoff = Backoff(),
        wait_for_ready: bool = False,
        options: Iterable[tuple[str, Any]] = (),
    ) -> None:
        channel_options = [*_calls.CHANNEL_OPTIONS, *options]
        creds = _calls.credentials(tls)
        self._channel = (
            aio.secure_channel(address, creds, options=channel_options)
            if creds is not None
            else aio.insecure_channel(address, options=channel_options)
        )
        self.namespace = namespace
        self.timeout = timeout
        self.backoff = backoff
        self.wait_for_ready = wait_for_ready
        self._metadata = _calls.metadata(token)
        self.runs = run_service_pb2_grpc.RunServiceStub(self._channel)
        self.signals = signal_service_pb2_grpc.SignalServiceStub(self._channel)

    async def close(self) -> None:
        await self._channel.close(grace=None)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def _call(self, method: Callable[..., Awaitable[_T]], request: Any, timeout: float | None = None) -> _T:
        try:
            return await method(request, timeout=timeout if timeout is not None else self.timeout, metadata=self._metadata, wait_for_ready=self.wait_for_ready)
        except grpc.RpcError as err:
            raise error_from_rpc(err) from err

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
        timeout: float | None = None,
    ) -> run_service_pb2.StartRunResponse:
        """Starts a run; see :meth:`waymark.Client.start_run`."""
        request = _calls.start_run(
            self.namespace,
            workflow,
            input,
            idempotency_key=idempotency_key,
            wait=wait,
            labels=labels,
            budget_usd=budget_usd,
            dry_run=dry_run,
        )
        return await self._call(self.runs.StartRun, request, timeout)

    async def get_run(self, run_id: str) -> run_service_pb2.GetRunResponse:
        return await self._call(self.runs.GetRun, run_service_pb2.GetRunRequest(namespace=self.namespace, run_id=run_id))

    async def list_runs(
        self,
        *,
        statuses: Iterable[run_pb2.RunStatus.ValueType] = (),
        workflow: str = "",
        labels: Mapping[str, str] | None = None,
        parent_run_id: str = "",
        page_size: int = 0,
    ) -> AsyncIterator[run_pb2.Run]:
        """Iterates (``async for``) over matching runs, newest first, page by page."""
        request = _calls.list_runs(
            self.namespace,
            statuses=statuses,
            workflow=workflow,
            labels=labels,
            parent_run_id=parent_run_id,
            page_size=page_size,
        )
        while True:
            page = await self._call(self.runs.ListRuns, request)
            for run in page.runs:
                yield run
            if not page.next_page_token:
                return
            request.page_token = page.next_page_token

    async def journal(
        self, run_id: str, *, after_seq: int | None = None, page_size: int = 0
    ) -> AsyncIterator[run_pb2.JournalEntry]:
        """Iterates (``async for``) over a run's journal in seq order."""
        request = _calls.get_journal(self.namespace, run_id, after_seq, page_size)
        while True:
            page = await self._call(self.runs.GetJournal, request)
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
        on_reconnect: Callable[[int, WaymarkError], None] | None = None,
    ) -> AsyncIterator[run_pb2.RunEvent]:
        """Yields (``async for``) a run's events, reconnecting after drops and UNAVAILABLE from
        the last seq yielded; see :meth:`waymark.Client.events`."""
        last = after_seq if after_seq is not None else -1
        attempt = 0
        failing_since: float | None = None
        while True:
            error: WaymarkError | None = None
            call = self.runs.StreamRunEvents(
                _calls.stream_events(self.namespace, run_id, last, follow_suspended), metadata=self._metadata
            )
            try:
                async for response in call:
                    event = response.event
                    if event.seq <= last:
                        continue  # delivered before a reconnect
                    last = event.seq
                    attempt, failing_since = 0, None
                    yield event
            except grpc.RpcError as err:
                if not _calls.reconnectable(err):
                    raise error_from_rpc(err) from err
                error = error_from_rpc(err)
            finally:
                call.cancel()
            if error is None:
                return  # the server ended the stream: the run ended (or parked)
            now = time.monotonic()
            failing_since = failing_since if failing_since is not None else now
            if now - failing_since > self.backoff.give_up_after:
                raise error
            if on_reconnect is not None:
                on_reconnect(last, error)
            await asyncio.sleep(self.backoff.delay(attempt))
            attempt += 1

    async def resume(
        self, run_id: str, invalidate: Iterable[int] = (), *, drift_recovery: run_service_pb2.DriftRecovery.ValueType = run_service_pb2.DRIFT_RECOVERY_UNSPECIFIED
    ) -> run_service_pb2.ResumeRunResponse:
        """See :meth:`waymark.Client.resume`."""
        request = _calls.resume_run(
            self.namespace, run_id, dry_run=False, invalidate=invalidate, drift_recovery=drift_recovery
        )
        return await self._call(self.runs.ResumeRun, request)

    async def preview_resume(self, run_id: str, invalidate: Iterable[int] = ()) -> run_pb2.ResumePreview:
        request = _calls.resume_run(self.namespace, run_id, dry_run=True, invalidate=invalidate, drift_recovery=run_service_pb2.DRIFT_RECOVERY_UNSPECIFIED)
        return (await self._call(self.runs.ResumeRun, request)).preview

    async def cancel(self, run_id: str, reason: str = "") -> run_pb2.Run:
        request = run_service_pb2.CancelRunRequest(namespace=self.namespace, run_id=run_id, reason=reason)
        return (await self._call(self.runs.CancelRun, request)).run

    async def list_workflows(self) -> list[run_pb2.Workflow]:
        request = run_service_pb2.ListWorkflowsRequest(namespace=self.namespace)
        return list((await self._call(self.runs.ListWorkflows, request)).workflows)

    # Signals and approvals

    async def send_signal(
        self, run_id: str, name: str, payload: Any = None, *, signal_id: str | None = None
    ) -> signal_service_pb2.SendSignalResponse:
        request = _calls.send_signal(self.namespace, run_id, name, payload, signal_id)
        return _calls.resolved(await self._call(self.signals.SendSignal, request), f"the wait for signal {name!r} of run {run_id}")

    async def list_approvals(
        self,
        *,
        run_id: str = "",
        workflow: str = "",
        labels: Mapping[str, str] | None = None,
        states: Iterable[run_pb2.ApprovalState.ValueType] = (),
        page_size: int = 0,
    ) -> AsyncIterator[run_pb2.Approval]:
        request = _calls.list_approvals(
            self.namespace, run_id=run_id, workflow=workflow, labels=labels, states=states, page_size=page_size
        )
        while True:
            page = await self._call(self.signals.ListApprovals, request)
            for approval in page.approvals:
                yield approval
            if not page.next_page_token:
                return
            request.page_token = page.next_page_token

    async def get_approval(self, approval_id: str) -> run_pb2.Approval:
        request = signal_service_pb2.GetApprovalRequest(namespace=self.namespace, id=approval_id)
        return (await self._call(self.signals.GetApproval, request)).approval

    async def approve(
        self,
        approval_id: str,
        *,
        by: str,
        comment: str = "",
        payload: Any = None,
        request_id: str | None = None,
    ) -> signal_service_pb2.DecideApprovalResponse:
        request = _calls.decide(
            self.namespace, approval_id, True, by=by, comment=comment, payload=payload, request_id=request_id
        )
        return _calls.resolved(await self._call(self.signals.DecideApproval, request), f"approval {approval_id}")

    async def deny(
        self,
        approval_id: str,
        *,
        by: str,
        comment: str = "",
        payload: Any = None,
        request_id: str | None = None,
    ) -> signal_service_pb2.DecideApprovalResponse:
        request = _calls.decide(
            self.namespace, approval_id, False, by=by, comment=comment, payload=payload, request_id=request_id
        )
        return _calls.resolved(await self._call(self.signals.DecideApproval, request), f"approval {approval_id}")
