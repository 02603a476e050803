"""Following a run's events across reconnects, and deadlines over a whole call (docs/clients.md
"Event streams")."""

from __future__ import annotations

import time
from dataclasses import dataclass

import grpc

from waymark._retry import Backoff
from waymark.errors import Unavailable, WaymarkError
from waymark.v1 import run_pb2


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

    def __init__(self, backoff: Backoff, after_seq: int | None, timeout: float | None) -> None:
        self.backoff = backoff
        self.last = after_seq if after_seq is not None else -1
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
        """Whether to yield ``event``: not one delivered before a reconnect."""
        if event.seq <= self.last:
            return False
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
        return Reconnect(self.attempt, self.last, error), wait
