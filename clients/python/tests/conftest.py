from __future__ import annotations

import base64
import json
import pathlib
from dataclasses import dataclass
from typing import Any

import pytest

WIRE = pathlib.Path(__file__).resolve().parents[3] / "test" / "wire"


@dataclass(frozen=True)
class Fixture:
    name: str
    type: str
    json: Any
    binary: bytes


def load_fixture(name: str) -> Fixture:
    raw = json.loads((WIRE / f"{name}.json").read_text(encoding="utf-8"))
    return Fixture(name, raw["type"], raw["json"], base64.b64decode(raw["binary"]))


def fixture_names() -> list[str]:
    return sorted(p.stem for p in WIRE.glob("*.json"))


@pytest.fixture
def wire() -> pathlib.Path:
    return WIRE
