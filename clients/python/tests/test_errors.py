"""Typed errors from the google.rpc.Status details the server sends (fixtures in test/wire)."""

from __future__ import annotations

import grpc
from conftest import load_fixture
from google.rpc import status_pb2

import waymark
from waymark.errors import error_from_status


def status(name: str) -> status_pb2.Status:
    return status_pb2.Status.FromString(load_fixture(name).binary)


def test_run_not_found() -> None:
    err = error_from_status(status("error_run_not_found"))
    assert isinstance(err, waymark.RunNotFound)
    assert err.code == grpc.StatusCode.NOT_FOUND
    assert err.run_id == "run_01JD8Z6Q4W8K7M2N3P5R6S7T8V"
    assert "RUN_NOT_FOUND" in str(err)


def test_invalid_argument_has_field_violations() -> None:
    err = error_from_status(status("error_invalid_input"))
    assert isinstance(err, waymark.InvalidArgument)
    assert [v.field for v in err.field_violations] == ["input.amount", "input.order"]


def test_flow_drift_lists_choices() -> None:
    err = error_from_status(status("error_flow_drift"))
    assert isinstance(err, waymark.FlowDrift)
    assert err.choices == ["restart", "abandon"]
    assert err.pinned_digest == "sha256:5f1e0c2a"


def test_payload_too_large_has_sizes() -> None:
    err = error_from_status(status("error_payload_too_large"))
    assert isinstance(err, waymark.PayloadTooLarge)
    assert (err.field, err.size_bytes, err.limit_bytes) == ("input", 2 << 20, 1 << 20)


def test_status_without_details_maps_by_code() -> None:
    err = error_from_status(status_pb2.Status(code=14, message="server shutting down"))
    assert isinstance(err, waymark.Unavailable)
    assert err.retryable
    err = error_from_status(status_pb2.Status(code=3, message="bad"))
    assert isinstance(err, waymark.InvalidArgument)


def test_lease_lost() -> None:
    # LEASE_LOST reaches a client only in a race no test can stage against a real server.
    err = error_from_status(status("error_lease_lost"))
    assert isinstance(err, waymark.LeaseLost)
    assert err.code == grpc.StatusCode.ABORTED and err.run_id == "run_01JD8Z6Q4W8K7M2N3P5R6S7T8V"
