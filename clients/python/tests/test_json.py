"""Payloads: an output reads back the same whichever order its Struct's map arrived in."""

from __future__ import annotations

from google.protobuf import struct_pb2

import waymark


def _value(pairs: list[tuple[str, str | dict]]) -> struct_pb2.Value:
    value = struct_pb2.Value()
    for key, item in pairs:
        if isinstance(item, dict):
            value.struct_value.fields[key].struct_value.update(item)
        else:
            value.struct_value.fields[key].string_value = item
    return value


def test_an_objects_keys_come_back_sorted_at_every_depth() -> None:
    late = _value([("status", "refunded"), ("refundId", "rf_1"), ("meta", {"z": 1, "a": 2})])
    early = _value([("meta", {"a": 2, "z": 1}), ("refundId", "rf_1"), ("status", "refunded")])
    for value in (late, early):
        out = waymark.from_value(value)
        assert list(out) == ["meta", "refundId", "status"]
        assert list(out["meta"]) == ["a", "z"]
        assert str(out) == "{'meta': {'a': 2.0, 'z': 1.0}, 'refundId': 'rf_1', 'status': 'refunded'}"


def test_lists_keep_their_order_and_their_objects_are_sorted() -> None:
    value = struct_pb2.Value()
    value.list_value.extend([{"b": 1, "a": 2}, "x"])
    assert str(waymark.from_value(value)) == "[{'a': 2.0, 'b': 1.0}, 'x']"
