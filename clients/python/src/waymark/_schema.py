"""JSON Schemas from Python type hints, and JSON values into and out of those types.

A worker's tool declares the JSON Schema of its input (and output) from the annotation of its
first parameter (and its return): a pydantic model (anything with ``model_json_schema`` and
``model_validate``, so pydantic is used when the application has it, never required), a
dataclass, a TypedDict, ``str``/``int``/``float``/``bool``/``None``, ``list[T]``, ``dict[str, T]``,
``Optional``/``Union``, ``Literal`` and ``Enum``; anything else (``Any``, no annotation) is any
JSON value. ``convert`` builds the annotated value from the task's JSON input, ``dump`` turns a
tool's result back into JSON.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Union, get_args, get_origin, is_typeddict

__all__ = ["convert", "dump", "schema_of"]

_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}


def _is_pydantic(tp: Any) -> bool:
    return isinstance(tp, type) and hasattr(tp, "model_json_schema") and hasattr(tp, "model_validate")


def _hints(tp: Any) -> dict[str, Any]:
    return typing.get_type_hints(tp)


def schema_of(tp: Any, _seen: frozenset[Any] = frozenset()) -> dict[str, Any]:
    """The JSON Schema of values of type ``tp`` (``{}``: any JSON value)."""
    if tp is Any:
        return {}
    if tp is None:
        return {"type": "null"}
    if tp in _SCALARS:
        return {"type": _SCALARS[tp]}
    if _is_pydantic(tp):
        return dict(tp.model_json_schema())
    origin, args = get_origin(tp), get_args(tp)
    if origin is Literal:
        return {"enum": list(args)}
    if origin is Union or origin is types.UnionType:
        return {"anyOf": [schema_of(a, _seen) for a in args]}
    if origin is typing.Annotated:
        return schema_of(args[0], _seen)
    if origin in (list, tuple, set, frozenset, Sequence) or tp in (list, tuple, set, frozenset):
        # list[T], set[T], tuple[T, ...]: items of T; a fixed-length tuple: any items.
        one = len(args) == 1 or len(args) == 2 and args[1] is Ellipsis
        return {"type": "array", "items": schema_of(args[0], _seen) if one else {}}
    if origin in (dict, Mapping) or tp is dict:
        value = args[1] if len(args) == 2 else Any
        return {"type": "object", "additionalProperties": schema_of(value, _seen)}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {"enum": [m.value for m in tp]}
    if isinstance(tp, type) and (dataclasses.is_dataclass(tp) or is_typeddict(tp)):
        if tp in _seen:
            return {}
        seen = _seen | {tp}
        hints = _hints(tp)
        if is_typeddict(tp):
            required = [k for k in hints if k in getattr(tp, "__required_keys__")]
        else:
            fields = {f.name: f for f in dataclasses.fields(tp)}
            hints = {k: v for k, v in hints.items() if k in fields}
            required = [
                k for k, f in fields.items()
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            ]
        out: dict[str, Any] = {"type": "object", "properties": {k: schema_of(v, seen) for k, v in hints.items()}}
        if required:
            out["required"] = required
        return out
    return {}


def convert(tp: Any, value: Any) -> Any:
    """``value`` (plain JSON: dicts, lists, str, float, bool, None) as the type ``tp`` declares.
    Raises ``TypeError`` or ``ValueError`` (pydantic's ValidationError is one) when it does not fit."""
    if tp is Any:
        return value
    if _is_pydantic(tp):
        return tp.model_validate(value)
    origin, args = get_origin(tp), get_args(tp)
    if origin is typing.Annotated:
        return convert(args[0], value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value:
            raise TypeError(f"expected an integer, got {value!r}")
        return int(value)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"expected a number, got {value!r}")
        return float(value)
    if tp in (str, bool):
        if not isinstance(value, tp):
            raise TypeError(f"expected a {tp.__name__}, got {value!r}")
        return value
    if origin is Literal:
        if value not in args:
            raise ValueError(f"expected one of {list(args)!r}, got {value!r}")
        return value
    if origin is Union or origin is types.UnionType:
        if value is None and type(None) in args:
            return None
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                return convert(a, value)
            except (TypeError, ValueError, KeyError) as err:
                errors.append(str(err))
        raise TypeError(f"{value!r} fits none of {tp}: {'; '.join(errors)}")
    if origin in (list, Sequence) or tp is list:
        if not isinstance(value, list):
            raise TypeError(f"expected an array, got {value!r}")
        return [convert(args[0], v) for v in value] if args else value
    if origin in (dict, Mapping) or tp is dict:
        if not isinstance(value, dict):
            raise TypeError(f"expected an object, got {value!r}")
        return {k: convert(args[1], v) for k, v in value.items()} if len(args) == 2 else value
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return tp(value)
    if isinstance(tp, type) and (dataclasses.is_dataclass(tp) or is_typeddict(tp)):
        if not isinstance(value, dict):
            raise TypeError(f"expected an object for {tp.__name__}, got {value!r}")
        hints = _hints(tp)
        if is_typeddict(tp):
            missing = [k for k in getattr(tp, "__required_keys__") if k not in value]
            if missing:
                raise TypeError(f"{tp.__name__} is missing {', '.join(missing)}")
            return {k: convert(hints[k], v) if k in hints else v for k, v in value.items()}
        names = {f.name for f in dataclasses.fields(tp) if f.init}
        return tp(**{k: convert(hints.get(k, Any), v) for k, v in value.items() if k in names})
    return value


def dump(value: Any) -> Any:
    """A tool's result as plain JSON: pydantic models, dataclasses and enums are turned into
    dicts and values, recursively; the rest is returned as it is."""
    if hasattr(value, "model_dump") and _is_pydantic(type(value)):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: dump(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Mapping):
        return {k: dump(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [dump(v) for v in value]
    return value
