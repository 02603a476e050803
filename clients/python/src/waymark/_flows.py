"""Declarative flows: reading a flow from a message, a dict, JSON or YAML; the FlowService calls as
operations (``_steps.py``) and ``client.flows`` of each client, which runs them in its I/O style."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Union

import yaml
from google.protobuf import json_format

import builtins
from typing import TYPE_CHECKING, Protocol

from waymark._shells import awaitable, blocking
from waymark._steps import Core, Op
from waymark._unary import call
from waymark.v1 import flow_service_pb2, flow_service_pb2_grpc

if TYPE_CHECKING:
    from waymark.aio import AsyncClient
    from waymark.client import Client

__all__ = ["AsyncFlows", "FlowSource", "Flows", "parse_flow"]

FlowSource = Union[flow_service_pb2.Flow, Mapping[str, Any], str, bytes]
"""What ``flows.register`` takes: the ``waymark.v1.Flow`` message, its protobuf JSON form as a
dict, or that form as JSON or YAML text."""


class _Loader(yaml.SafeLoader):
    """SafeLoader without the implicit timestamp type: ``2026-12-01`` stays a string, as in JSON."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def parse_flow(source: FlowSource) -> flow_service_pb2.Flow:
    """A flow as the ``waymark.v1.Flow`` message.

    Text is read as JSON, and as YAML when it is not JSON. Field names may be lowerCamelCase or as
    in the proto (``state_schema``), durations are strings (``"86400s"``), enums are named. An
    unknown field is an error, so a typo does not pass silently. Raises :class:`ValueError` for
    a document that is not a flow and :class:`TypeError` for a value of another type.
    """
    if isinstance(source, flow_service_pb2.Flow):
        return source
    if isinstance(source, (str, bytes)):
        tree = _load(source.decode("utf-8") if isinstance(source, bytes) else source)
    elif isinstance(source, Mapping):
        tree = source
    else:
        raise TypeError(f"a flow is a waymark.v1.Flow, a dict or JSON/YAML text, not {type(source).__name__}")
    if not isinstance(tree, Mapping):
        raise ValueError(f"a flow document is a mapping, not {type(tree).__name__}")
    _check_keys(tree, "$")
    flow = flow_service_pb2.Flow()
    try:
        json_format.ParseDict(dict(tree), flow)
    except json_format.ParseError as err:
        raise ValueError(f"the flow document is not a waymark.v1.Flow: {err}") from err
    return flow


def _load(text: str) -> Any:
    if not text.strip():
        raise ValueError("the flow document is empty")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as err:
        raise ValueError(f"the flow document is neither JSON nor YAML: {err}") from err


def _check_keys(node: Any, path: str) -> None:
    """JSON has string keys only; YAML allows others (``1: x``), which the message cannot hold."""
    if isinstance(node, Mapping):
        for key, value in node.items():
            if not isinstance(key, str):
                raise ValueError(f"the key {key!r} at {path} is not a string")
            _check_keys(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _check_keys(value, f"{path}[{i}]")


def register_flow(namespace: str, source: FlowSource) -> flow_service_pb2.RegisterFlowRequest:
    return flow_service_pb2.RegisterFlowRequest(namespace=namespace, flow=parse_flow(source))


def get_flow(namespace: str, name: str, version: str | int | None) -> flow_service_pb2.GetFlowRequest:
    return flow_service_pb2.GetFlowRequest(namespace=namespace, name=name, version="" if version is None else str(version))


class _Flows(Protocol):
    """What the flow operations read of ``client.flows``."""

    _client: Core
    stub: Any


def register(flows: _Flows, flow: FlowSource, *, timeout: float | None = None) -> Op[flow_service_pb2.RegisterFlowResponse]:
    """Validates and stores a flow: the ``waymark.v1.Flow`` message, a dict of its JSON form,
    or JSON or YAML text (:func:`waymark.parse_flow`). The response's ``flow`` is the stored
    version and its digest; ``created`` is false when the content equalled the latest
    version's and nothing was stored. Raises :class:`waymark.InvalidFlow` (its
    ``field_violations`` name the exact paths, e.g. ``flow.edges[3].condition``; nothing is
    stored) or :class:`waymark.FlowNameTaken`. Retried like a read (a repeat of the same
    content is a no-op), so a retry of an attempt the server applied answers ``created`` false.
    """
    request = register_flow(flows._client.namespace, flow)
    response: flow_service_pb2.RegisterFlowResponse = yield from call(
        flows._client, "RegisterFlow", flows.stub.RegisterFlow, request, timeout
    )
    return response


def get(flows: _Flows, name: str, version: str | int | None = None, *, timeout: float | None = None) -> Op[flow_service_pb2.FlowVersion]:
    """One version of a flow (the latest by default); raises :class:`waymark.FlowNotFound`."""
    request = get_flow(flows._client.namespace, name, version)
    response: flow_service_pb2.GetFlowResponse = yield from call(flows._client, "GetFlow", flows.stub.GetFlow, request, timeout)
    return response.flow


def list_flows(flows: _Flows, *, timeout: float | None = None) -> Op[builtins.list[flow_service_pb2.FlowVersion]]:
    """The latest version of each flow of the namespace, by name."""
    request = flow_service_pb2.ListFlowsRequest(namespace=flows._client.namespace)
    response: flow_service_pb2.ListFlowsResponse = yield from call(flows._client, "ListFlows", flows.stub.ListFlows, request, timeout)
    return builtins.list(response.flows)


class Flows:
    """``client.flows``: registers and reads declarative flows (docs/flows.md), which
    :meth:`Client.start_run` then starts by name like a code workflow. ``stub`` is the
    generated FlowService stub."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._shell = client._shell
        self.stub = flow_service_pb2_grpc.FlowServiceStub(client._channel)

    register = blocking(register)
    get = blocking(get)
    list = blocking(list_flows)


class AsyncFlows:
    """``client.flows`` of the asyncio client; see :class:`waymark.client.Flows`."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client
        self._shell = client._shell
        self.stub = flow_service_pb2_grpc.FlowServiceStub(client._channel)

    register = awaitable(register)
    get = awaitable(get)
    list = awaitable(list_flows)
