"""Large payloads from Python (docs/journal.md "Large payloads"): ``journal`` asks for payloads
stored out of line on every page only with ``include_large_payloads``; without it such an entry
comes with its ``payload_ref``. Sync and asyncio, against a scripted in-process server."""

from __future__ import annotations

from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest

import waymark
from waymark.v1 import run_pb2, run_service_pb2, run_service_pb2_grpc


@dataclass
class ScriptedJournal(run_service_pb2_grpc.RunServiceServicer):
    """Two pages; the first holds an entry whose payload is stored out of line."""

    requests: list[Any] = field(default_factory=list)

    def GetJournal(self, request: run_service_pb2.GetJournalRequest, context: grpc.ServicerContext) -> run_service_pb2.GetJournalResponse:
        self.requests.append(request)
        if request.page_token == "":
            entry = run_pb2.JournalEntry(seq=0, kind="step", name="big")
            if request.include_large_payloads:
                entry.payload.string_value = "a large result"
            else:
                entry.payload_ref.CopyFrom(run_pb2.PayloadRef(sha256="ab12", size_bytes=5 << 20))
            return run_service_pb2.GetJournalResponse(entries=[entry], next_page_token="next")
        return run_service_pb2.GetJournalResponse(entries=[run_pb2.JournalEntry(seq=1, kind="status")])


def serve(scripted: ScriptedJournal) -> tuple[grpc.Server, str]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    run_service_pb2_grpc.add_RunServiceServicer_to_server(scripted, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, f"127.0.0.1:{port}"


def test_journal_references_large_payloads_unless_asked() -> None:
    scripted = ScriptedJournal()
    server, address = serve(scripted)
    with waymark.Client(address) as c:
        by_ref = list(c.journal("run-1"))
        whole = list(c.journal("run-1", include_large_payloads=True))
    server.stop(None)
    assert by_ref[0].payload_ref.size_bytes == 5 << 20 and not by_ref[0].HasField("payload")
    assert waymark.from_value(whole[0].payload) == "a large result" and not whole[0].HasField("payload_ref")
    assert [r.include_large_payloads for r in scripted.requests] == [False, False, True, True]


@pytest.mark.asyncio
async def test_journal_include_large_payloads_asyncio() -> None:
    scripted = ScriptedJournal()
    server, address = serve(scripted)
    async with waymark.AsyncClient(address) as c:
        whole = [e async for e in c.journal("run-1", include_large_payloads=True)]
    server.stop(None)
    assert [e.seq for e in whole] == [0, 1] and waymark.from_value(whole[0].payload) == "a large result"
    assert [r.include_large_payloads for r in scripted.requests] == [True, True]
