"""Token streams from Python (``tokens``, sync and asyncio): through a dropped connection the stream
resumes after the last seq and delta offset it yielded, so a delta the server repeats is yielded
once; a newer attempt is marked as superseding the aborted one, a late delta of the aborted attempt
is dropped, and the call's journaled text ends it. A scripted in-process server stands in for
Waymark; test/chaos/token-streams.test.ts does the same through a SIGKILL of a real replica."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field

import grpc
import pytest

import waymark
from waymark.v1 import run_pb2, run_service_pb2, run_service_pb2_grpc

FAST = waymark.Backoff(initial=0.01, maximum=0.05, give_up_after=30)


def entry(seq: int, kind: str, status: int, ref_seq: int | None = None, text: str | None = None) -> run_pb2.RunEvent:
    event = run_pb2.RunEvent(run_id="run-1", seq=seq)
    event.entry.seq, event.entry.kind, event.entry.status = seq, kind, status
    if ref_seq is not None:
        event.entry.ref_seq = ref_seq
    if text is not None:
        event.entry.payload.CopyFrom(waymark.to_value({"text": text}))
    return event


def delta(offset: int, attempt: int, index: int, text: str = "") -> run_pb2.RunEvent:
    kind = run_pb2.MODEL_DELTA_KIND_ATTEMPT_START if index == 0 else run_pb2.MODEL_DELTA_KIND_TEXT
    d = run_pb2.ModelDelta(offset=offset, call_seq=1, attempt=attempt, index=index, kind=kind, text=text)
    return run_pb2.RunEvent(run_id="run-1", seq=1, model_delta=d)


@dataclass
class DeltaRuns(run_service_pb2_grpc.RunServiceServicer):
    """Connection i sends script[i] and ends UNAVAILABLE; the last one ends cleanly."""

    script: list[list[run_pb2.RunEvent]]
    requests: list[run_service_pb2.StreamRunEventsRequest] = field(default_factory=list)

    def StreamRunEvents(
        self, request: run_service_pb2.StreamRunEventsRequest, context: grpc.ServicerContext
    ) -> Iterator[run_service_pb2.StreamRunEventsResponse]:
        self.requests.append(request)
        call = len(self.requests) - 1
        for event in self.script[call]:
            yield run_service_pb2.StreamRunEventsResponse(event=event)
        if call < len(self.script) - 1:
            context.abort(grpc.StatusCode.UNAVAILABLE, "the replica died")

    def GetRun(self, request: run_service_pb2.GetRunRequest, context: grpc.ServicerContext) -> run_service_pb2.GetRunResponse:
        return run_service_pb2.GetRunResponse(run=run_pb2.Run(id=request.run_id))


def script() -> DeltaRuns:
    return DeltaRuns(
        [
            [entry(0, "status", run_pb2.ENTRY_STATUS_INFO), entry(1, "model", run_pb2.ENTRY_STATUS_RUNNING), delta(0, 3, 0), delta(1, 3, 1, "Hel"), delta(2, 3, 2, "lo")],
            [
                delta(2, 3, 2, "lo"),  # already yielded
                delta(3, 4, 0),
                delta(4, 4, 1, "Hello"),
                delta(5, 3, 3, " there"),  # a late delta of the aborted attempt
                delta(6, 4, 2, ", world"),
                entry(2, "model", run_pb2.ENTRY_STATUS_OK, ref_seq=1, text="Hello, world"),
            ],
        ]
    )


EXPECTED = [
    waymark.AttemptStarted(1, 3, None),
    waymark.TokenText(1, 3, 1, "Hel", 1),
    waymark.TokenText(1, 3, 2, "lo", 2),
    waymark.AttemptStarted(1, 4, 3),
    waymark.TokenText(1, 4, 1, "Hello", 4),
    waymark.TokenText(1, 4, 2, ", world", 6),
    waymark.CallFinished(1, 4, "Hello, world"),
]


def serve(runs: DeltaRuns) -> tuple[grpc.Server, str]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    run_service_pb2_grpc.add_RunServiceServicer_to_server(runs, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, f"127.0.0.1:{port}"


def check_requests(runs: DeltaRuns) -> None:
    first, second = runs.requests
    assert first.include_deltas and first.follow_suspended
    assert not first.HasField("after_delta_offset") and not first.HasField("after_seq")
    assert second.include_deltas and second.after_delta_offset == 2 and second.after_seq == 1


def test_sync_tokens_resume_after_the_last_offset_and_tell_attempts_apart() -> None:
    runs = script()
    server, address = serve(runs)
    reconnects: list[waymark.Reconnect] = []
    with waymark.Client(address, backoff=FAST) as client:
        seen = list(client.tokens("run-1", follow_suspended=True, on_reconnect=reconnects.append))
    server.stop(None)
    assert seen == EXPECTED
    assert [(r.after_seq, r.after_offset) for r in reconnects] == [(1, 2)]
    check_requests(runs)


@pytest.mark.asyncio
async def test_async_tokens_resume_after_the_last_offset_and_tell_attempts_apart() -> None:
    runs = script()
    server, address = serve(runs)
    async with waymark.AsyncClient(address, backoff=FAST) as client:
        seen = [t async for t in client.tokens("run-1", follow_suspended=True)]
    server.stop(None)
    assert seen == EXPECTED
    check_requests(runs)


def test_a_new_stream_starts_after_an_offset_and_events_send_no_deltas() -> None:
    final = [delta(4, 4, 1, "Hello"), entry(2, "model", run_pb2.ENTRY_STATUS_OK, ref_seq=1, text="Hello")]
    runs = DeltaRuns([final])
    server, address = serve(runs)
    with waymark.Client(address, backoff=FAST) as client:
        seen = list(client.tokens("run-1", after_seq=1, after_offset=3))
        # its attempt's start came before this stream: the attempt still counts as begun
        assert [t.type for t in seen] == ["attempt", "text", "result"]
        request = runs.requests[0]
        assert request.after_seq == 1 and request.after_delta_offset == 3 and request.include_deltas
        runs.requests.clear()
        assert [e.seq for e in client.events("run-1")] == [2]
        assert not runs.requests[0].include_deltas
    server.stop(None)
