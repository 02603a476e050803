"""Event streams reconnect after UNAVAILABLE and after the server disappears mid-stream,
resuming after the last seq they yielded and yielding each seq once. A scripted in-process
server stands in for Waymark; the live tests (test_live.py) do the same against the real one."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field

import grpc
import pytest

import waymark
from waymark.v1 import run_pb2, run_service_pb2, run_service_pb2_grpc

FAST = waymark.Backoff(initial=0.01, maximum=0.05, give_up_after=30)


@dataclass
class Step:
    seqs: list[int]
    end: grpc.StatusCode | None = None  # abort with this code; None: end cleanly
    hang: bool = False  # keep the stream open until the server goes away
    final: int = run_pb2.RUN_STATUS_UNSPECIFIED  # status change carried by the last event


@dataclass
class ScriptedRuns(run_service_pb2_grpc.RunServiceServicer):
    script: list[Step]
    after_seqs: list[int | None] = field(default_factory=list)
    large_payloads: list[bool] = field(default_factory=list)  # include_large_payloads of each call
    sent: threading.Event = field(default_factory=threading.Event)
    ended: threading.Event = field(default_factory=threading.Event)  # a stream ended or was cancelled

    def StreamRunEvents(
        self, request: run_service_pb2.StreamRunEventsRequest, context: grpc.ServicerContext
    ) -> Iterator[run_service_pb2.StreamRunEventsResponse]:
        context.add_callback(self.ended.set)
        self.after_seqs.append(request.after_seq if request.HasField("after_seq") else None)
        self.large_payloads.append(request.include_large_payloads)
        step = self.script[len(self.after_seqs) - 1]
        for i, seq in enumerate(step.seqs):
            event = run_pb2.RunEvent(run_id=request.run_id, seq=seq)
            if i == len(step.seqs) - 1 and step.final:
                event.status_changed.status = step.final
            else:
                event.entry.seq, event.entry.kind = seq, "step"
            yield run_service_pb2.StreamRunEventsResponse(event=event)
        if step.hang:
            self.sent.set()
            gone = threading.Event()
            context.add_callback(gone.set)  # runs when the server stops and cancels the call
            gone.wait(30)
        if step.end is not None:
            context.abort(step.end, "scripted end")


class Server:
    def __init__(self, runs: ScriptedRuns, port: int = 0) -> None:
        self.runs = runs
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        run_service_pb2_grpc.add_RunServiceServicer_to_server(runs, self.server)
        self.port = self.server.add_insecure_port(f"127.0.0.1:{port}")
        self.server.start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def restart(self) -> None:
        self.server.stop(grace=None).wait()
        self.__init__(self.runs, self.port)  # type: ignore[misc]


def script() -> ScriptedRuns:
    return ScriptedRuns(
        [
            Step([0, 1, 2], end=grpc.StatusCode.UNAVAILABLE),
            Step([2, 3], hang=True),
            Step([4], final=run_pb2.RUN_STATUS_SUCCEEDED),
        ]
    )


def test_sync_events_resume_from_last_seq() -> None:
    runs = script()
    server = Server(runs)
    reconnects: list[int] = []
    seen: list[int] = []
    with waymark.Client(server.address, backoff=FAST) as client:
        for event in client.events("run-1", follow_suspended=True, on_reconnect=lambda r: reconnects.append(r.after_seq)):
            seen.append(event.seq)
            if event.seq == 3:
                server.restart()  # the connection drops mid-stream; a new server takes the port
    server.server.stop(None)
    assert seen == [0, 1, 2, 3, 4]
    assert reconnects[0] == 2 and reconnects[-1] == 3
    assert runs.after_seqs[0] is None and runs.after_seqs[1] == 2 and runs.after_seqs[-1] == 3
    assert not any(runs.large_payloads)


def test_include_large_payloads_goes_out_on_every_connection() -> None:
    runs = ScriptedRuns([Step([0, 1], end=grpc.StatusCode.UNAVAILABLE), Step([2], final=run_pb2.RUN_STATUS_SUCCEEDED)])
    server = Server(runs)
    with waymark.Client(server.address, backoff=FAST) as client:
        seen = [event.seq for event in client.events("run-1", include_large_payloads=True)]
    server.server.stop(None)
    assert seen == [0, 1, 2]
    assert runs.large_payloads == [True, True]


@pytest.mark.asyncio
async def test_async_events_resume_from_last_seq() -> None:
    runs = script()
    server = Server(runs)
    reconnects: list[int] = []
    seen: list[int] = []
    async with waymark.AsyncClient(server.address, backoff=FAST) as client:
        async for event in client.events(
            "run-1", follow_suspended=True, on_reconnect=lambda r: reconnects.append(r.after_seq)
        ):
            seen.append(event.seq)
            if event.seq == 3:
                server.restart()
    server.server.stop(None)
    assert seen == [0, 1, 2, 3, 4]
    assert reconnects[0] == 2 and reconnects[-1] == 3
    assert runs.after_seqs[-1] == 3


def test_other_errors_end_the_stream_typed() -> None:
    runs = ScriptedRuns([Step([], end=grpc.StatusCode.NOT_FOUND)])
    server = Server(runs)
    with waymark.Client(server.address, backoff=FAST) as client, pytest.raises(waymark.WaymarkError) as info:
        list(client.events("run-x"))
    server.server.stop(None)
    assert info.value.code == grpc.StatusCode.NOT_FOUND
    assert len(runs.after_seqs) == 1


@pytest.mark.parametrize("asynchronous", [False, True])
def test_closing_the_events_cancels_the_stream(asynchronous: bool) -> None:
    """A caller that stops following (closes the generator) ends the server's stream at once,
    while the client stays open: the stream hangs for 30 s unless the call is cancelled."""
    runs = ScriptedRuns([Step([0, 1], hang=True)])
    server = Server(runs)

    def sync() -> None:
        with waymark.Client(server.address, backoff=FAST) as client:
            events = client.events("run-1", follow_suspended=True)
            assert next(events).seq == 0
            events.close()
            assert runs.ended.wait(10), "the stream was not cancelled"

    async def asynchronously() -> None:
        async with waymark.AsyncClient(server.address, backoff=FAST) as client:
            events = client.events("run-1", follow_suspended=True)
            assert (await events.__anext__()).seq == 0
            await events.aclose()
            assert await asyncio.to_thread(runs.ended.wait, 10), "the stream was not cancelled"

    try:
        asyncio.run(asynchronously()) if asynchronous else sync()
    finally:
        server.server.stop(None)
    assert len(runs.after_seqs) == 1


@pytest.mark.parametrize("asynchronous", [False, True])
def test_restarts_farther_apart_than_give_up(asynchronous: bool) -> None:
    """A follower of a parked run gets no events between restarts, so only a reconnect the server
    answers tells it the server is back: two restarts farther apart than ``give_up_after``, each
    well within it, must not end the stream (they did while only events reset the clock)."""
    give_up = 0.6
    runs = ScriptedRuns([Step([0, 1], hang=True), Step([], hang=True), Step([2, 3], final=run_pb2.RUN_STATUS_SUCCEEDED)])
    server = Server(runs)
    backoff = waymark.Backoff(initial=0.01, maximum=0.05, give_up_after=give_up)
    seen: list[int] = []
    failure: list[BaseException] = []

    async def follow_async() -> None:
        async with waymark.AsyncClient(server.address, backoff=backoff) as client:
            async for event in client.events("run-1", follow_suspended=True):
                seen.append(event.seq)

    def follow() -> None:
        try:
            if asynchronous:
                asyncio.run(follow_async())
            else:
                with waymark.Client(server.address, backoff=backoff) as client:
                    seen.extend(e.seq for e in client.events("run-1", follow_suspended=True))
        except BaseException as err:
            failure.append(err)

    def wait_calls(n: int) -> None:
        deadline = time.monotonic() + 20
        while len(runs.after_seqs) < n and time.monotonic() < deadline:
            time.sleep(0.005)
        assert len(runs.after_seqs) >= n, "the stream never reconnected"

    def restart() -> None:
        server.server.stop(grace=None).wait()
        time.sleep(give_up / 6)  # the outage, shorter than the window
        server.__init__(runs, server.port)  # type: ignore[misc]

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while len(seen) < 2 and time.monotonic() < deadline:  # the history arrived: the run is parked
        time.sleep(0.005)
    restart()
    wait_calls(2)
    time.sleep(give_up * 1.5)  # longer than the window, with no event
    restart()
    thread.join(30)
    server.server.stop(None)
    assert not failure, f"the stream gave up after {seen}: {failure[0]}"
    assert seen == [0, 1, 2, 3]
