"""The synchronous client."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

import grpc

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

__all__ = ["Client"]

_T = TypeVar("_T")


class Client:
    """A blocking client for one Waymark server (or a load-balanced address of several).

    ``tls`` is ``False`` for plaintext HTTP/2 (``waymark dev``, in-cluster servers), ``True``
    for TLS with the system roots, or a :class:`grpc.ChannelCredentials`. ``token`` is sent as
    ``authorization: Bearer <token>``. ``timeout`` (seconds) is the deadline of every unary call;
    event streams have none. ``wait_for_ready`` makes unary calls wait (within their deadline)
    for an unreachable server instead of failing with :class:`waymark.Unavailable` at once. Use
    as a context manager, or call :meth:`close`.

    The generated stubs are ``client.runs`` and ``client.signals``, for anything not wrapped here.
    """

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
            grpc.secure_channel(address, creds, options=channel_options)
            if creds is not None
            else grpc.insecure_channel(address, options=channel_options)
        )
        self.namespace = namespace
        self.timeout = timeout
        self.backoff = backoff
        self.wait_for_ready = wait_for_ready
        self._metadata = _calls.metadata(token)
        self.runs = run_service_pb2_grpc.RunServiceStub(self._channel)
        self.signals = signal_service_pb2_grpc.SignalServiceStub(self._channel)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _call(self, method: Callable[..., _T], request: Any, timeout: float | None = None) -> _T:
        try:
            return method(request, timeout=timeout if timeout is not None else self.timeout, metadata=self._metadata, wait_for_ready=self.wait_for_ready)
        except grpc.RpcError as err:
            raise error_from_rpc(err) from err

    # Runs

    def start_run(
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
        """Starts a run of ``workflow`` with a JSON ``input``.

        With ``wait`` the server executes it right away and answers once it ends or parks (give
        a ``timeout`` long enough). An ``idempotency_key`` already used returns the first run,
        with ``created`` false.
        """
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
        return self._call(self.runs.StartRun, request, timeout)

    def get_run(self, run_id: str) -> run_service_pb2.GetRunResponse:
        """A run and, when it is suspended, what it waits for (``waiting_on``)."""
        return self._call(self.runs.GetRun, run_service_pb2.GetRunRequest(namespace=self.namespace, run_id=run_id))

    def list_runs(
        self,
        *,
        statuses: Iterable[run_pb2.RunStatus.ValueType] = (),
        workflow: str = "",
        labels: Mapping[str, str] | None = None,
        parent_run_id: str = "",
        page_size: int = 0,
    ) -> Iterator[run_pb2.Run]:
        """Iterates over matching runs, newest first, fetching pages as the loop advances."""
        request = _calls.list_runs(
            self.namespace,
            statuses=statuses,
            workflow=workflow,
            labels=labels,
            parent_run_id=parent_run_id,
            page_size=page_size,
        )
        while True:
            page = self._call(self.runs.ListRuns, request)
            yield from page.runs
            if not page.next_page_token:
                return
            request.page_token = page.next_page_token

    def journal(self, run_id: str, *, after_seq: int | None = None, page_size: int = 0) -> Iterator[run_pb2.JournalEntry]:
        """Iterates over a run's journal in seq order (after ``after_seq`` when given)."""
        request = _calls.get_journal(self.namespace, run_id, after_seq, page_size)
        while True:
            page = self._call(self.runs.GetJournal, request)
            yield from page.entries
            if not page.next_page_token:
                return
            request.page_token = page.next_page_token

    def events(
        self,
        run_id: str,
        *,
        after_seq: int | None = None,
        follow_suspended: bool = False,
        on_reconnect: Callable[[int, WaymarkError], None] | None = None,
    ) -> Iterator[run_pb2.RunEvent]:
        """Yields a run's events: its history, then live events until it ends (or parks, unless
        ``follow_suspended``).

        When the connection drops or the server answers UNAVAILABLE (a restart, a rollout) it
        reconnects by itself with backoff, resuming after the last seq it yielded, so every event
        arrives exactly once and in seq order. ``on_reconnect(after_seq, error)`` is called before
        each reconnect. Other failures raise the typed error; so does reconnecting for longer
        than ``backoff.give_up_after``. Closing the generator cancels the stream.
        """
        last = after_seq if after_seq is not None else -1
        attempt = 0
        failing_since: float | None = None
        while True:
            error: WaymarkError | None = None
            call = self.runs.StreamRunEvents(
                _calls.stream_events(self.namespace, run_id, last, follow_suspended), metadata=self._metadata
            )
            try:
                for response in call:
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
            time.sleep(self.backoff.delay(attempt))
            attempt += 1

    def resume(
        self, run_id: str, invalidate: Iterable[int] = (), *, drift_recovery: run_service_pb2.DriftRecovery.ValueType = run_service_pb2.DRIFT_RECOVERY_UNSPECIFIED
    ) -> run_service_pb2.ResumeRunResponse:
        """Makes a suspended or failed run execute again; ``invalidate`` unpins entries by seq.

        ``drift_recovery`` (``run_service_pb2.DRIFT_RECOVERY_RESTART`` or ``..._ABANDON``)
        recovers a run that raised :class:`waymark.FlowDrift`; with RESTART the response's
        ``restarted_as`` is the new run.
        """
        request = _calls.resume_run(
            self.namespace, run_id, dry_run=False, invalidate=invalidate, drift_recovery=drift_recovery
        )
        return self._call(self.runs.ResumeRun, request)

    def preview_resume(self, run_id: str, invalidate: Iterable[int] = ()) -> run_pb2.ResumePreview:
        """What :meth:`resume` would do, computed with no live calls and nothing written."""
        request = _calls.resume_run(self.namespace, run_id, dry_run=True, invalidate=invalidate, drift_recovery=run_service_pb2.DRIFT_RECOVERY_UNSPECIFIED)
        return self._call(self.runs.ResumeRun, request).preview

    def cancel(self, run_id: str, reason: str = "") -> run_pb2.Run:
        """Cancels a run; cancelling a finished run returns it unchanged."""
        request = run_service_pb2.CancelRunRequest(namespace=self.namespace, run_id=run_id, reason=reason)
        return self._call(self.runs.CancelRun, request).run

    def list_workflows(self) -> list[run_pb2.Workflow]:
        return list(self._call(self.runs.ListWorkflows, run_service_pb2.ListWorkflowsRequest(namespace=self.namespace)).workflows)

    # Signals and approvals

    def send_signal(
        self, run_id: str, name: str, payload: Any = None, *, signal_id: str | None = None
    ) -> signal_service_pb2.SendSignalResponse:
        """Delivers a named signal. ``signal_id`` makes it idempotent (default: a random one); a
        repeat is answered like the first (``reason`` "duplicate"). A run not waiting for the
        signal yet keeps it for its next wait of that name (``buffered``). Raises
        :class:`waymark.AlreadyResolved` when another resolution already closed the wait."""
        request = _calls.send_signal(self.namespace, run_id, name, payload, signal_id)
        return _calls.resolved(self._call(self.signals.SendSignal, request), f"the wait for signal {name!r} of run {run_id}")

    def list_approvals(
        self,
        *,
        run_id: str = "",
        workflow: str = "",
        labels: Mapping[str, str] | None = None,
        states: Iterable[run_pb2.ApprovalState.ValueType] = (),
        page_size: int = 0,
    ) -> Iterator[run_pb2.Approval]:
        """Iterates over approvals, pending ones unless ``states`` says otherwise, oldest first."""
        request = _calls.list_approvals(
            self.namespace, run_id=run_id, workflow=workflow, labels=labels, states=states, page_size=page_size
        )
        while True:
            page = self._call(self.signals.ListApprovals, request)
            yield from page.approvals
            if not page.next_page_token:
                return
            request.page_token = page.next_page_token

    def get_approval(self, approval_id: str) -> run_pb2.Approval:
        request = signal_service_pb2.GetApprovalRequest(namespace=self.namespace, id=approval_id)
        return self._call(self.signals.GetApproval, request).approval

    def approve(
        self,
        approval_id: str,
        *,
        by: str,
        comment: str = "",
        payload: Any = None,
        request_id: str | None = None,
    ) -> signal_service_pb2.DecideApprovalResponse:
        """Approves. A repeated ``request_id`` is answered like the first call (``reason``
        "duplicate"). Raises :class:`waymark.AlreadyResolved` (with ``.response``) when another
        decision, a timeout or a cancellation already resolved the approval."""
        request = _calls.decide(
            self.namespace, approval_id, True, by=by, comment=comment, payload=payload, request_id=request_id
        )
        return _calls.resolved(self._call(self.signals.DecideApproval, request), f"approval {approval_id}")

    def deny(
        self,
        approval_id: str,
        *,
        by: str,
        comment: str = "",
        payload: Any = None,
        request_id: str | None = None,
    ) -> signal_service_pb2.DecideApprovalResponse:
        """Denies; see :meth:`approve`."""
        request = _calls.decide(
            self.namespace, approval_id, False, by=by, comment=comment, payload=payload, request_id=request_id
        )
        return _calls.resolved(self._call(self.signals.DecideApproval, request), f"approval {approval_id}")
