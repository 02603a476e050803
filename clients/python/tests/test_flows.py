"""Flows from Python: ``waymark.parse_flow`` reads the message, a dict, JSON or YAML to one
``waymark.v1.Flow``; ``client.flows`` (sync and asyncio) sends them with the client's namespace,
retries like a read, and raises the typed flow errors, against a scripted in-process server."""

from __future__ import annotations

import json
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

import waymark
from waymark.v1 import flow_service_pb2, flow_service_pb2_grpc

FAST = waymark.RetryPolicy(initial=0.005, maximum=0.02, budget=20)

# The refund flow of the README as a team keeps it in a file (shared with the Go client's tests, as test/wire is).
REFUND_FLOW_YAML = (Path(__file__).resolve().parents[3] / "test" / "flows" / "refund-flow.yaml").read_text()

REFUND_FLOW: dict[str, Any] = {
    "name": "refund-flow",
    "description": "Refunds an order after a person approves it.",
    "stateSchema": {
        "type": "object",
        "properties": {
            "order": {"type": "string", "minLength": 1},
            "amount": {"type": "number", "exclusiveMinimum": 0},
            "decision": {"type": "object"},
            "refund": {"type": "object"},
        },
        "required": ["order", "amount"],
    },
    "start": "approve",
    "nodes": [
        {
            "id": "approve",
            "approval": {
                "title": "Refund ${{ state.amount }} for order {{ state.order }}?",
                "deadline": "86400s",
                "onTimeout": "APPROVAL_TIMEOUT_DECISION_DENY",
                "into": "decision",
            },
        },
        {"id": "approved", "branch": {}},
        {"id": "charge", "tool": {"tool": "charge_back", "arguments": {"order": "{{ state.order }}", "amount": "{{ state.amount }}"}, "into": "refund"}},
        {"id": "refunded", "end": {"output": {"status": "refunded", "refundId": "{{ state.refund.refundId }}"}}},
        {"id": "declined", "end": {"output": {"status": "declined", "by": "{{ state.decision.by }}"}}},
    ],
    "edges": [
        {"from": "approve", "to": "approved"},
        {"from": "approved", "to": "charge", "condition": "state.decision.approved"},
        {"from": "approved", "to": "declined"},
        {"from": "charge", "to": "refunded"},
    ],
}


def test_parse_flow_reads_every_form_alike() -> None:
    from_yaml = waymark.parse_flow(REFUND_FLOW_YAML)
    forms = [REFUND_FLOW, json.dumps(REFUND_FLOW), json.dumps(REFUND_FLOW).encode(), REFUND_FLOW_YAML.encode(), from_yaml]
    for form in forms:
        assert waymark.parse_flow(form) == from_yaml, form
    approval = from_yaml.nodes[0].approval
    assert approval.deadline.ToTimedelta().total_seconds() == 86400
    assert approval.on_timeout == flow_service_pb2.APPROVAL_TIMEOUT_DECISION_DENY
    assert from_yaml.nodes[2].tool.arguments.struct_value.fields["order"].string_value == "{{ state.order }}"
    # YAML's implicit timestamps stay strings, as in JSON.
    dated = waymark.parse_flow("name: f\ndescription: 2026-12-01\n")
    assert dated.description == "2026-12-01"


@pytest.mark.parametrize(
    ("source", "error"),
    [
        ("  \n", ValueError),
        ("name: f\nnodez: []\n", ValueError),
        ("name: [unclosed\n", ValueError),
        ("name: f\nstate_schema:\n  properties:\n    1: {type: string}\n", ValueError),
        ('{"name": "f", "nodes": {"id": "a"}}', ValueError),
        ("- a list\n", ValueError),
        (42, TypeError),
    ],
)
def test_parse_flow_refuses_what_is_not_a_flow(source: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        waymark.parse_flow(source)


@dataclass
class ScriptedFlows(flow_service_pb2_grpc.FlowServiceServicer):
    """Answers each call with the next (code, ErrorInfo reason, metadata, violations) of its script, then succeeds."""

    script: list[tuple[grpc.StatusCode, str | None, dict[str, str], list[tuple[str, str]]]]
    requests: list[Any] = field(default_factory=list)

    def _next(self, request: Any, context: grpc.ServicerContext) -> None:
        self.requests.append(request)
        if not self.script:
            return
        code, reason, metadata, violations = self.script.pop(0)
        status = status_pb2.Status(code=code.value[0], message="scripted")
        if reason is not None:
            status.details.add().Pack(error_details_pb2.ErrorInfo(reason=reason, domain="waymark", metadata=metadata))
        if violations:
            bad = error_details_pb2.BadRequest(
                field_violations=[error_details_pb2.BadRequest.FieldViolation(field=f, description=d) for f, d in violations]
            )
            status.details.add().Pack(bad)
        context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
        context.abort(code, "scripted")

    def RegisterFlow(self, request: Any, context: grpc.ServicerContext) -> flow_service_pb2.RegisterFlowResponse:
        self._next(request, context)
        version = flow_service_pb2.FlowVersion(flow=request.flow, version="1", digest="sha256:x")
        return flow_service_pb2.RegisterFlowResponse(flow=version, created=True)

    def GetFlow(self, request: Any, context: grpc.ServicerContext) -> flow_service_pb2.GetFlowResponse:
        self._next(request, context)
        return flow_service_pb2.GetFlowResponse(flow=flow_service_pb2.FlowVersion(version=request.version or "2"))

    def ListFlows(self, request: Any, context: grpc.ServicerContext) -> flow_service_pb2.ListFlowsResponse:
        self._next(request, context)
        return flow_service_pb2.ListFlowsResponse(flows=[flow_service_pb2.FlowVersion(version="1")])


def serve(flows: ScriptedFlows) -> tuple[grpc.Server, str]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    flow_service_pb2_grpc.add_FlowServiceServicer_to_server(flows, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, f"127.0.0.1:{port}"


UNAVAILABLE = (grpc.StatusCode.UNAVAILABLE, None, {}, [])


def test_flow_calls_retry_and_carry_the_namespace() -> None:
    scripted = ScriptedFlows([UNAVAILABLE, UNAVAILABLE])
    server, address = serve(scripted)
    with waymark.Client(address, retry=FAST, namespace="payments") as c:
        registered = c.flows.register(REFUND_FLOW_YAML)
        assert registered.created and registered.flow.flow == waymark.parse_flow(REFUND_FLOW)
        assert len(scripted.requests) == 3 and scripted.requests[2].namespace == "payments"
        scripted.script = [UNAVAILABLE]
        assert c.flows.get("refund-flow", 1).version == "1"
        assert scripted.requests[-1].name == "refund-flow" and scripted.requests[-1].version == "1"
        assert c.flows.get("refund-flow").version == "2"
        assert scripted.requests[-1].version == ""
        scripted.script = [UNAVAILABLE]
        assert [f.version for f in c.flows.list()] == ["1"]
        assert scripted.requests[-1].namespace == "payments"
    server.stop(None)


def test_flow_errors_are_typed() -> None:
    scripted = ScriptedFlows(
        [
            (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FLOW", {"flow": "refund-flow"}, [("flow.edges[1].condition", "reads undeclared state.x")]),
            (grpc.StatusCode.NOT_FOUND, "FLOW_NOT_FOUND", {"flow": "nope", "version": "7"}, []),
            (grpc.StatusCode.ALREADY_EXISTS, "FLOW_NAME_TAKEN", {"flow": "refund"}, []),
        ]
    )
    server, address = serve(scripted)
    with waymark.Client(address, retry=FAST) as c:
        with pytest.raises(waymark.InvalidFlow) as invalid:
            c.flows.register(REFUND_FLOW)
        assert isinstance(invalid.value, waymark.InvalidArgument)
        assert invalid.value.flow == "refund-flow"
        assert invalid.value.field_violations == [waymark.FieldViolation("flow.edges[1].condition", "reads undeclared state.x")]
        with pytest.raises(waymark.FlowNotFound) as missing:
            c.flows.get("nope", "7")
        assert (missing.value.flow, missing.value.version, missing.value.code) == ("nope", "7", grpc.StatusCode.NOT_FOUND)
        with pytest.raises(waymark.FlowNameTaken) as taken:
            c.flows.register({"name": "refund"})
        assert taken.value.flow == "refund" and taken.value.code == grpc.StatusCode.ALREADY_EXISTS
    server.stop(None)


@pytest.mark.asyncio
async def test_async_flows() -> None:
    scripted = ScriptedFlows([UNAVAILABLE])
    server, address = serve(scripted)
    async with waymark.AsyncClient(address, retry=FAST, namespace="payments") as c:
        registered = await c.flows.register(REFUND_FLOW)
        assert registered.flow.version == "1" and len(scripted.requests) == 2
        scripted.script = [(grpc.StatusCode.NOT_FOUND, "FLOW_NOT_FOUND", {"flow": "nope"}, [])]
        with pytest.raises(waymark.FlowNotFound):
            await c.flows.get("nope")
        assert (await c.flows.get("refund-flow", "3")).version == "3"
        assert [f.version for f in await c.flows.list()] == ["1"]
        assert {r.namespace for r in scripted.requests} == {"payments"}
    server.stop(None)
