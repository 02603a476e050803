"""The shared fixtures in test/wire decode, print and re-encode identically in Python."""

from __future__ import annotations

import pytest
from conftest import fixture_names, load_fixture
from google.protobuf import descriptor_pool, json_format, message_factory

# Importing registers the message types the fixtures name.
from google.rpc import error_details_pb2, status_pb2  # noqa: F401

from waymark.v1 import run_service_pb2, signal_service_pb2  # noqa: F401


def test_there_are_fixtures() -> None:
    assert len(fixture_names()) >= 20


@pytest.mark.parametrize("name", fixture_names())
def test_fixture_round_trips(name: str) -> None:
    fixture = load_fixture(name)
    cls = message_factory.GetMessageClass(descriptor_pool.Default().FindMessageTypeByName(fixture.type))

    from_binary = cls.FromString(fixture.binary)
    from_json = json_format.ParseDict(fixture.json, cls())
    assert json_format.MessageToDict(from_binary) == fixture.json
    assert json_format.MessageToDict(from_json) == fixture.json

    assert from_binary.SerializeToString(deterministic=True) == fixture.binary
    if fixture.type != "google.rpc.Status":
        # (Python packs an Any parsed from JSON with its map entries in another order, so a
        # Status is compared by content above rather than by bytes.)
        assert from_binary == from_json
        assert from_json.SerializeToString(deterministic=True) == fixture.binary
