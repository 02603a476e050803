"""Following a run's events across reconnects, and deadlines over a whole call (docs/clients.md
"Event streams"): the ``events`` operation both clients run (``_steps.py``) and its state."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import grpc

from waymark import _requests
from waymark._retry import Backoff
from waymark._steps import END, Core, Item, Items, Op, Read, Sleep, Stream, Unary
from waymark.errors import Unavailable, WaymarkError, error_from_rpc
from waymark.v1 import run_pb2, run_service_pb2


class Deadline:
    """A point in time ``timeout`` seconds from now, or none."""

    def __init__(self, timeout: float | None) -> None:
        self.at = time.monotonic() + timeout if timeout is not None else None

    def remaining(self) -> float | None:
        return None if self.at is None else max(self.at - time.monotonic(), 0.0)

    def expired(self) -> bool:
        return self.at is not None and time.monotonic() >= self.at


@dataclass(frozen=True)
class Reconnect:
    """One reconnect of an event stream, as ``on_reconnect`` receives it."""

    attempt: int
    """Reconnects since the stream last succeeded (an event arrived or a reconnect was answered), from 1."""
    after_seq: int
    """The seq the stream resumes after: the last one delivered, -1 when none yet."""
    error: WaymarkError
    """What ended the previous connection (:class:`waymark.Unavailable` for a dropped one)."""
    after_offset: int = -1
    """The model delta offset a token stream (``tokens``) resumes after: the last one delivered,
    -1 when none yet (always -1 for ``events``)."""


def reconnectable(error: WaymarkError) -> bool:
    """A stream reconnects on what a unary call retries: UNAVAILABLE (also a dropped or refused
    connection) and RESOURCE_EXHAUSTED with RetryInfo."""
    return error.code == grpc.StatusCode.UNAVAILABLE or (
        error.code == grpc.StatusCode.RESOURCE_EXHAUSTED and error.retry_delay is not None
    )


class Follow:
    """The state of one ``events`` call across its reconnects, shared by the sync and asyncio
    clients: the last seq yielded, the backoff, and the give-up clock (docs/clients.md). The clock
    runs from the first failure since the last success, an event or a reconnect the server
    answered (a GetRun of the run: a follow stream of a parked run sends nothing)."""

    def __init__(
        self,
        backoff: Backoff,
        after_seq: int | None,
        timeout: float | None,
        *,
        deltas: bool = False,
        after_offset: int | None = None,
        large_payloads: bool = False,
    ) -> None:
        self.backoff = backoff
        self.large_payloads = large_payloads  # payloads stored out of line sent in the events
        self.last = after_seq if after_seq is not None else -1
        self.deltas = deltas  # a stream with model call deltas, resumed after last_offset too
        self.last_offset = after_offset if after_offset is not None else -1
        self.deadline = Deadline(timeout)
        self.failing_since: float | None = None
        self.attempt = 0
        self.error: WaymarkError | None = None

    def connect_timeout(self) -> float | None:
        """How long to wait for a connection: the rest of the give-up window and of the timeout."""
        limits = [] if self.deadline.at is None else [self.deadline.at - time.monotonic()]
        if self.backoff.give_up_after > 0 and self.failing_since is not None:
            limits.append(self.failing_since + self.backoff.give_up_after - time.monotonic())
        return max(min(limits), 0.0) if limits else None

    def gave_up(self, address: str) -> WaymarkError:
        if self.deadline.expired():
            return WaymarkError("the event stream's timeout passed", code=grpc.StatusCode.DEADLINE_EXCEEDED)
        if self.error is not None and self.error.code == grpc.StatusCode.UNAVAILABLE:
            return self.error
        return Unavailable(
            f"no answer from {address} and no event for {self.backoff.give_up_after} s; the event stream gave up",
            code=grpc.StatusCode.UNAVAILABLE,
        )

    @property
    def reconnecting(self) -> bool:
        return self.error is not None

    def answered(self) -> None:
        """The server answered a reconnect: the clock and the backoff start over."""
        self.failing_since, self.attempt, self.error = None, 0, None

    def stream_timeout(self) -> float | None:
        return self.deadline.remaining()

    def fresh(self, event: run_pb2.RunEvent) -> bool:
        """Whether to yield ``event``: not one delivered before a reconnect. A model delta carries
        its call's seq, already delivered: its own cursor is its offset."""
        if event.WhichOneof("body") == "model_delta":
            if not self.deltas or event.model_delta.offset <= self.last_offset:
                return False
            self.last_offset = event.model_delta.offset
        elif event.seq <= self.last:
            return False
        else:
            self.last = event.seq
        self.failing_since, self.attempt = None, 0
        return True

    def failed(self, error: WaymarkError) -> tuple[Reconnect, float] | None:
        """After ``error``: the reconnect to report and the seconds to wait first, or None when
        the stream gives up (no success for the give-up window)."""
        self.error = error
        now = time.monotonic()
        if self.failing_since is None:
            self.failing_since = now
        wait = max(self.backoff.delay(self.attempt), error.retry_delay or 0.0)
        remaining = self.deadline.remaining()
        if remaining is not None:
            wait = min(wait, remaining)
        window = self.backoff.give_up_after
        if window > 0 and now - self.failing_since + wait > window:
            return None
        self.attempt += 1
        return Reconnect(self.attempt, self.last, error, self.last_offset), wait


def events(
    core: Core,
    run_id: str,
    *,
    after_seq: int | None = None,
    follow_suspended: bool = False,
    on_reconnect: Callable[[Reconnect], None] | None = None,
    timeout: float | None = None,
    include_large_payloads: bool = False,
) -> Items[run_pb2.RunEvent]:
    """Yields a run's events: its history, then live events until it ends (or parks, unless
    ``follow_suspended``). With ``include_large_payloads`` an entry whose payload is stored out of
    line (over the server's 64 KiB threshold) carries it instead of ``payload_ref``.

    When the connection drops or the server answers UNAVAILABLE (a restart, a rollout) it
    reconnects by itself with backoff, resuming after the last seq it yielded, so every event
    arrives exactly once and in seq order. ``on_reconnect`` gets a :class:`waymark.Reconnect`
    (attempt, after_seq, error) before each reconnect. Other failures raise the typed error; so does a stretch of
    ``backoff.give_up_after`` seconds with neither a successful reconnect nor an event
    (:class:`waymark.Unavailable`). ``timeout`` bounds the whole stream (DEADLINE_EXCEEDED).
    Closing the generator cancels the stream.
    """
    follow = Follow(core.backoff, after_seq, timeout, large_payloads=include_large_payloads)
    return (yield from follow_events(core, run_id, follow, follow_suspended, on_reconnect))


def follow_events(
    core: Core, run_id: str, follow: Follow, follow_suspended: bool, on_reconnect: Callable[[Reconnect], None] | None
) -> Items[run_pb2.RunEvent]:
    """``events``, and with ``follow.deltas`` the same stream with model call deltas (``tokens``)."""
    while True:
        error = (yield from _reconnected(core, run_id, follow)) if follow.reconnecting else None
        if error is None:
            request = _requests.stream_events(
                core.namespace,
                run_id,
                follow.last,
                follow_suspended,
                after_offset=follow.last_offset if follow.deltas else None,
                large_payloads=follow.large_payloads,
            )
            call = yield Stream(core.runs.StreamRunEvents, request, follow.stream_timeout())
            try:
                while (response := (yield Read(call))) is not END:
                    if follow.fresh(response.event):
                        yield Item(response.event)
            except grpc.RpcError as err:
                error = error_from_rpc(err)
                if not reconnectable(error):
                    raise error from err
            finally:
                call.cancel()
            if error is None:
                return  # the server ended the stream: the run ended (or parked)
        step = follow.failed(error)
        if step is None:
            raise follow.gave_up(core._address)
        reconnect, wait = step
        if on_reconnect is not None:
            on_reconnect(reconnect)
        yield Sleep(wait)


def _reconnected(core: Core, run_id: str, follow: Follow) -> Op[WaymarkError | None]:
    """Opens a reconnect: asks the server for the run, once, waiting for a connection within
    the give-up window. None when it answered (the clock starts over); else the error."""
    try:
        # wait_for_ready: the probe waits for a connection, within the give-up window.
        request = run_service_pb2.GetRunRequest(namespace=core.namespace, run_id=run_id)
        yield Unary(core.runs.GetRun, request, follow.connect_timeout(), wait_for_ready=True)
    except grpc.RpcError as err:
        error = error_from_rpc(err)
        if reconnectable(error) or error.code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return error
    follow.answered()
    return None
