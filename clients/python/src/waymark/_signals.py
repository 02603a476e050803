"""Signals and approvals, the calls of SignalService, for the blocking client (SignalCalls) and
the asyncio one (AsyncSignalCalls): what each sends and reads is _requests and _responses; the
classes hold the calls in each I/O style."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from waymark import _requests, _responses
from waymark.v1 import run_pb2, signal_service_pb2, signal_service_pb2_grpc

_T = TypeVar("_T")


class SignalCalls:
    """The signal and approval methods of :class:`waymark.Client`."""

    namespace: str
    signals: signal_service_pb2_grpc.SignalServiceStub

    if TYPE_CHECKING:
        def _call(self, name: str, method: Callable[..., _T], request: Any, timeout: float | None) -> _T: ...

        def journal(
            self, run_id: str, *, after_seq: int | None = None, page_size: int = 0, timeout: float | None = None
        ) -> Iterator[run_pb2.JournalEntry]: ...

    def send_signal(
        self,
        run_id: str,
        name: str,
        payload: Any = None,
        *,
        signal_id: str | None = None,
        timeout: float | None = None,
    ) -> signal_service_pb2.SendSignalResponse:
        """Delivers a named signal. ``signal_id`` makes it idempotent (default: a random one); a
        repeat is answered like the first (``reason`` "duplicate"). A run not waiting for the
        signal yet keeps it for its next wait of that name (``buffered``). Raises
        :class:`waymark.AlreadyResolved` when another resolution already closed the wait."""
        request = _requests.send_signal(self.namespace, run_id, name, payload, signal_id)
        response = self._call("SendSignal", self.signals.SendSignal, request, timeout)
        if _responses.signal_duplicate(response):
            # A repeat of the signal id: the first delivery's outcome, as its journal entry says.
            entries = self.journal(run_id, after_seq=response.seq - 1, page_size=1, timeout=timeout)
            _responses.signal_outcome(response, next(entries, None))
        return _responses.resolved(response, f"the wait for signal {name!r} of run {run_id}")

    def list_approvals(
        self,
        *,
        run_id: str = "",
        workflow: str = "",
        labels: Mapping[str, str] | None = None,
        states: Iterable[int] = (),
        page_size: int = 0,
        timeout: float | None = None,
    ) -> Iterator[run_pb2.Approval]:
        """Iterates over approvals, pending ones unless ``states`` (:class:`waymark.ApprovalState`
        values) says otherwise, oldest first."""
        request = _requests.list_approvals(
            self.namespace, run_id=run_id, workflow=workflow, labels=labels, states=states, page_size=page_size
        )
        while True:
            page = self._call("ListApprovals", self.signals.ListApprovals, request, timeout)
            yield from page.approvals
            if not page.next_page_token:
                return
            request.page_token = page.next_page_token

    def get_approval(self, approval_id: str, *, timeout: float | None = None) -> run_pb2.Approval:
        request = signal_service_pb2.GetApprovalRequest(namespace=self.namespace, id=approval_id)
        return self._call("GetApproval", self.signals.GetApproval, request, timeout).approval

    def approve(
        self,
        approval_id: str,
        *,
        by: str,
        comment: str = "",
        payload: Any = None,
        request_id: str | None = None,
        timeout: float | None = None,
    ) -> signal_service_pb2.DecideApprovalResponse:
        """Approves. A repeated ``request_id`` is answered like the first call (``reason``
        "duplicate"; so is a retry of this call after the server applied it). Raises
        :class:`waymark.AlreadyResolved` (with ``.response``) when another decision, a timeout or
        a cancellation already resolved the approval."""
        return self._decide(approval_id, True, by, comment, payload, request_id, timeout)

    def deny(
        self,
        approval_id: str,
        *,
        by: str,
        comment: str = "",
        payload: Any = None,
        request_id: str | None = None,
        timeout: float | None = None,
    ) -> signal_service_pb2.DecideApprovalResponse:
        """Denies; see :meth:`approve`."""
        return self._decide(approval_id, False, by, comment, payload, request_id, timeout)

    def _decide(
        self,
        approval_id: str,
        approve: bool,
        by: str,
        comment: str,
        payload: Any,
        request_id: str | None,
        timeout: float | None,
    ) -> signal_service_pb2.DecideApprovalResponse:
        request = _requests.decide(
            self.namespace, approval_id, approve, by=by, comment=comment, payload=payload, request_id=request_id
        )
        response = self._call("DecideApproval", self.signals.DecideApproval, request, timeout)
        return _responses.resolved(_responses.decided(response, request), f"approval {approval_id}")


class AsyncSignalCalls:
    """The signal and approval methods of :class:`waymark.AsyncClient`."""

    namespace: str
    signals: signal_service_pb2_grpc.SignalServiceAsyncStub

    if TYPE_CHECKING:
        async def _call(self, name: str, method: Callable[..., Awaitable[_T]], request: Any, timeout: float | None) -> _T: ...

        def journal(
            self, run_id: str, *, after_seq: int | None = None, page_size: int = 0, timeout: float | None = None
        ) -> AsyncIterator[run_pb2.JournalEntry]: ...

    async def send_signal(
        self,
        run_id: str,
        name: str,
        payload: Any = None,
        *,
        signal_id: str | None = None,
        timeout: float | None = None,
    ) -> signal_service_pb2.SendSignalResponse:
        """Delivers a named signal. ``signal_id`` makes it idempotent (default: a random one); a
        repeat is answered like the first (``reason`` "duplicate"). A run not waiting for the
        signal yet keeps it for its next wait of that name (``buffered``). Raises
        :class:`waymark.AlreadyResolved` when another resolution already closed the wait."""
        request = _requests.send_signal(self.namespace, run_id, name, payload, signal_id)
        response = await self._call("SendSignal", self.signals.SendSignal, request, timeout)
        if _responses.signal_duplicate(response):
            # A repeat of the signal id: the first delivery's outcome, as its journal entry says.
            entry = None
            async for first in self.journal(run_id, after_seq=response.seq - 1, page_size=1, timeout=timeout):
                entry = first
                break
            _responses.signal_outcome(response, entry)
        return _responses.resolved(response, f"the wait for signal {name!r} of run {run_id}")

    async def list_approvals(
        self,
        *,
        run_id: str = "",
        workflow: str = "",
        labels: Mapping[str, str] | None = None,
        states: Iterable[int] = (),
        page_size: int = 0,
        timeout: float | None = None,
    ) -> AsyncIterator[run_pb2.Approval]:
        """Iterates over approvals, pending ones unless ``states`` (:class:`waymark.ApprovalState`
        values) says otherwise, oldest first."""
        request = _requests.list_approvals(
            self.namespace, run_id=run_id, workflow=workflow, labels=labels, states=states, page_size=page_size
        )
        while True:
            page = await self._call("ListApprovals", self.signals.ListApprovals, request, timeout)
            for approval in page.approvals:
                yield approval
            if not page.next_page_token:
                return
            request.page_token = page.next_page_token

    async def get_approval(self, approval_id: str, *, timeout: float | None = None) -> run_pb2.Approval:
        request = signal_service_pb2.GetApprovalRequest(namespace=self.namespace, id=approval_id)
        return (await self._call("GetApproval", self.signals.GetApproval, request, timeout)).approval

    async def approve(
        self,
        approval_id: str,
        *,
        by: str,
        comment: str = "",
        payload: Any = None,
        request_id: str | None = None,
        timeout: float | None = None,
    ) -> signal_service_pb2.DecideApprovalResponse:
        """Approves. A repeated ``request_id`` is answered like the first call (``reason``
        "duplicate"; so is a retry of this call after the server applied it). Raises
        :class:`waymark.AlreadyResolved` (with ``.response``) when another decision, a timeout or
        a cancellation already resolved the approval."""
        return await self._decide(approval_id, True, by, comment, payload, request_id, timeout)

    async def deny(
        self,
        approval_id: str,
        *,
        by: str,
        comment: str = "",
        payload: Any = None,
        request_id: str | None = None,
        timeout: float | None = None,
    ) -> signal_service_pb2.DecideApprovalResponse:
        """Denies; see :meth:`approve`."""
        return await self._decide(approval_id, False, by, comment, payload, request_id, timeout)

    async def _decide(
        self,
        approval_id: str,
        approve: bool,
        by: str,
        comment: str,
        payload: Any,
        request_id: str | None,
        timeout: float | None,
    ) -> signal_service_pb2.DecideApprovalResponse:
        request = _requests.decide(
            self.namespace, approval_id, approve, by=by, comment=comment, payload=payload, request_id=request_id
        )
        response = await self._call("DecideApproval", self.signals.DecideApproval, request, timeout)
        return _responses.resolved(_responses.decided(response, request), f"approval {approval_id}")
