"""JSON payloads <-> google.protobuf.Value."""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format, struct_pb2

__all__ = ["from_value", "to_value"]


def to_value(obj: Any) -> struct_pb2.Value | None:
    """A JSON-compatible Python value (dict, list, str, int, float, bool, None) as a Value.

    ``None`` leaves the payload unset; pass ``struct_pb2.Value(null_value=0)`` for an explicit
    JSON null.
    """
    if obj is None:
        return None
    if isinstance(obj, struct_pb2.Value):
        return obj
    value = struct_pb2.Value()
    try:
        json_format.ParseDict(obj, value)
    except (json_format.ParseError, TypeError) as err:
        raise TypeError(f"payload is not JSON: {err}") from err
    return value


def from_value(value: struct_pb2.Value | None) -> Any:
    """A Value as plain Python (numbers come back as float, as JSON has one number type).

    An object's keys come back sorted, at every depth: a Struct is a protobuf map, whose order
    is not kept on the wire, so without sorting the same output could print differently from one
    process to the next (as Go prints a map, sorted)."""
    if value is None or value.WhichOneof("kind") is None:
        return None
    return _sorted(json_format.MessageToDict(value))


def _sorted(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {key: _sorted(obj[key]) for key in sorted(obj)}
    if isinstance(obj, list):
        return [_sorted(item) for item in obj]
    return obj
