"""Forks and comparisons from Python: ``fork`` sends its options with one key per call (generated
when the caller gives none) and rides through UNAVAILABLE, reporting a retry that finds the fork as
created; ``preview_fork`` is a dry run and ``compare_runs`` a read, both retried; refusals raise
InvalidArgument with their reason. Sync and asyncio, against a scripted in-process server."""

from __future__ import annotations

import threading
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

import waymark
from waymark import _retry
from waymark.v1 import run_pb2, run_service_pb2, run_service_pb2_grpc

FAST = waymark.RetryPolicy(initial=0.005, maximum=0.02, budget=20)
UNAVAILABLE = (grpc.StatusCode.UNAVAILABLE, None, "")


@dataclass
class ScriptedForks(run_service_pb2_grpc.RunServiceServicer):
    """Answers with the next (code, reason, violated field) of its script, then succeeds. A fork is
    applied before the scripted error (an attempt whose answer was lost), so a repeat of its key
    answers created = false, as the server does."""

    script: list[tuple[grpc.StatusCode, str | None, str]]
    requests: list[Any] = field(default_factory=list)
    keys: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def _next(self, request: Any, context: grpc.ServicerContext) -> None:
        self.requests.append(request)
        if not self.script:
            return
        code, reason, violated = self.script.pop(0)
        status = status_pb2.Status(code=code.value[0], message="scripted")
        if reason is not None:
            status.details.add().Pack(error_details_pb2.ErrorInfo(reason=reason, domain="waymark"))
            violation = error_details_pb2.BadRequest.FieldViolation(field=violated, description="no")
            status.details.add().Pack(error_details_pb2.BadRequest(field_violations=[violation]))
        context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
        context.abort(code, "scripted")

    def ForkRun(self, request: run_service_pb2.ForkRunRequest, context: grpc.ServicerContext) -> run_service_pb2.ForkRunResponse:
        with self.lock:
            created = not request.dry_run and request.idempotency_key not in self.keys
            if not request.dry_run:
                self.keys.add(request.idempotency_key)
        self._next(request, context)
        if request.dry_run:
            preview = run_service_pb2.ForkPreview(fork_seq=request.at_seq, kept=request.at_seq, dropped=2, kept_cost_usd=0.25)
            return run_service_pb2.ForkRunResponse(fork_seq=request.at_seq, preview=preview)
        run = run_pb2.Run(id="fork-1", forked_from_run_id=request.run_id, fork_seq=request.at_seq)
        return run_service_pb2.ForkRunResponse(run=run, created=created, fork_seq=request.at_seq)

    def CompareRuns(self, request: run_service_pb2.CompareRunsRequest, context: grpc.ServicerContext) -> run_service_pb2.CompareRunsResponse:
        self._next(request, context)
        effect = run_service_pb2.EffectComparison(
            kind="model", name="agent", difference=run_service_pb2.EFFECT_DIFFERENCE_CHANGED,
            a=run_service_pb2.EffectRecord(model="scripted:echo"), b=run_service_pb2.EffectRecord(model="scripted:drip"),
        )
        return run_service_pb2.CompareRunsResponse(a=run_pb2.Run(id=request.run_id_a), b=run_pb2.Run(id=request.run_id_b), effects=[effect])


def serve(forks: ScriptedForks) -> tuple[grpc.Server, str]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    run_service_pb2_grpc.add_RunServiceServicer_to_server(forks, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, f"127.0.0.1:{port}"


def test_fork_retries_with_one_generated_key_and_sends_every_option() -> None:
    scripted = ScriptedForks([UNAVAILABLE, UNAVAILABLE])
    server, address = serve(scripted)
    with waymark.Client(address, retry=FAST, namespace="agents") as c:
        res = c.fork(
            "run-1", 7, input={"order": "A-2"}, model="scripted:echo", workflow_version="2", decision="deny",
            decision_comment="not this time", decided_by="ana", budget_usd=2.5, labels={"try": "deny"}, wait=True,
        )
    server.stop(None)
    assert res.created and res.run.forked_from_run_id == "run-1" and res.fork_seq == 7
    assert len(scripted.requests) == 3
    first = scripted.requests[0]
    assert {r.idempotency_key for r in scripted.requests} == {first.idempotency_key}
    assert first.idempotency_key.startswith("client:") and first.wait and not first.dry_run
    assert (first.namespace, first.run_id, first.at_seq, first.model, first.workflow_version) == ("agents", "run-1", 7, "scripted:echo", "2")
    assert first.budget_usd == 2.5 and dict(first.labels) == {"try": "deny"}
    assert waymark.from_value(first.input) == {"order": "A-2"}
    assert (first.decision.approve, first.decision.comment, first.decision.by) == (False, "not this time", "ana")


def test_fork_with_the_callers_key_reports_the_servers_created() -> None:
    scripted = ScriptedForks([UNAVAILABLE])
    server, address = serve(scripted)
    with waymark.Client(address, retry=FAST) as c:
        res = c.fork("run-1", 3, idempotency_key="fork-once")
        with pytest.raises(ValueError):
            c.fork("run-1", 3, decision="maybe")  # type: ignore[arg-type]
    server.stop(None)
    assert not res.created and len(scripted.requests) == 2
    sent = scripted.requests[1]
    assert sent.idempotency_key == "fork-once" and not sent.wait and sent.model == ""
    assert not sent.HasField("input") and not sent.HasField("decision") and not sent.HasField("budget_usd")


def test_preview_fork_and_compare_runs_are_retried_reads() -> None:
    scripted = ScriptedForks([UNAVAILABLE, UNAVAILABLE])
    server, address = serve(scripted)
    with waymark.Client(address, retry=FAST, namespace="agents") as c:
        preview = c.preview_fork("run-1", 4, model="scripted:echo", decision=True)
        assert (preview.fork_seq, preview.kept, preview.dropped, preview.kept_cost_usd) == (4, 4, 2, 0.25)
        assert len(scripted.requests) == 3
        sent = scripted.requests[2]
        assert sent.dry_run and not sent.wait and sent.idempotency_key == "" and sent.decision.approve
        scripted.script = [UNAVAILABLE]
        cmp = c.compare_runs("run-a", "run-b")
    server.stop(None)
    assert len(scripted.requests) == 5
    req = scripted.requests[4]
    assert (req.namespace, req.run_id_a, req.run_id_b) == ("agents", "run-a", "run-b")
    assert cmp.b.id == "run-b" and cmp.effects[0].difference == run_service_pb2.EFFECT_DIFFERENCE_CHANGED


def test_fork_and_compare_refusals_are_typed_and_final() -> None:
    scripted = ScriptedForks([(grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FORK", "at_seq"), (grpc.StatusCode.INVALID_ARGUMENT, "RUNS_NOT_COMPARABLE", "run_id_b")])
    server, address = serve(scripted)
    with waymark.Client(address, retry=FAST) as c:
        with pytest.raises(waymark.InvalidArgument) as fork:
            c.fork("run-1", 99)
        assert fork.value.reason == "INVALID_FORK" and [v.field for v in fork.value.field_violations] == ["at_seq"]
        assert len(scripted.requests) == 1
        with pytest.raises(waymark.InvalidArgument) as cmp:
            c.compare_runs("run-a", "run-b")
        assert cmp.value.reason == "RUNS_NOT_COMPARABLE" and len(scripted.requests) == 2
    server.stop(None)


def test_a_fork_run_without_a_key_is_sent_once() -> None:
    """Through the raw stub a ForkRun with neither a key nor dry_run would fork twice if repeated."""
    assert not _retry.repeatable("ForkRun", run_service_pb2.ForkRunRequest(run_id="r"))
    assert _retry.repeatable("ForkRun", run_service_pb2.ForkRunRequest(run_id="r", idempotency_key="k"))
    assert _retry.repeatable("ForkRun", run_service_pb2.ForkRunRequest(run_id="r", dry_run=True))
    assert _retry.repeatable("CompareRuns", run_service_pb2.CompareRunsRequest())


@pytest.mark.asyncio
async def test_async_fork_preview_and_compare() -> None:
    scripted = ScriptedForks([UNAVAILABLE])
    server, address = serve(scripted)
    async with waymark.AsyncClient(address, retry=FAST) as c:
        res = await c.fork("run-1", 5, model="scripted:echo")
        assert res.created and len(scripted.requests) == 2
        assert scripted.requests[0].idempotency_key == scripted.requests[1].idempotency_key
        assert (await c.preview_fork("run-1", 5)).kept == 5
        assert (await c.compare_runs("run-a", "fork-1")).b.id == "fork-1"
    server.stop(None)


@dataclass
class ScriptedPurge(run_service_pb2_grpc.RunServiceServicer):
    """Answers PurgeRuns after its script of UNAVAILABLEs, echoing the filter's dry run."""

    failures: int
    requests: list[Any] = field(default_factory=list)

    def PurgeRuns(self, request: run_service_pb2.PurgeRunsRequest, context: grpc.ServicerContext) -> run_service_pb2.PurgeRunsResponse:
        self.requests.append(request)
        if len(self.requests) <= self.failures:
            context.abort(grpc.StatusCode.UNAVAILABLE, "restarting")
        return run_service_pb2.PurgeRunsResponse(dry_run=request.dry_run, root_runs=2, runs=3, entries=12)


def test_purge_runs_sends_the_filter_and_is_retried() -> None:
    import datetime

    scripted = ScriptedPurge(failures=2)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    run_service_pb2_grpc.add_RunServiceServicer_to_server(scripted, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    with waymark.Client(f"127.0.0.1:{port}", retry=FAST, namespace="ops") as c:
        res = c.purge_runs(older_than=datetime.timedelta(days=3), statuses=[waymark.RunStatus.FAILED], workflow="refund", dry_run=True, limit=50)
    server.stop(None)
    assert res.dry_run and (res.root_runs, res.runs, res.entries) == (2, 3, 12)
    assert len(scripted.requests) == 3
    last = scripted.requests[-1]
    assert (last.namespace, last.workflow, last.dry_run, last.limit) == ("ops", "refund", True, 50)
    assert last.older_than.ToTimedelta() == datetime.timedelta(days=3)
    assert list(last.statuses) == [run_pb2.RUN_STATUS_FAILED]
