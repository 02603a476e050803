"""waymark.enums names the generated enums' values without the generated module: every value of
the proto enums, under its short name, with the same number."""

from __future__ import annotations

from enum import IntEnum

import pytest

import waymark
from waymark.v1 import run_pb2, run_service_pb2, schedule_service_pb2


@pytest.mark.parametrize(
    ("friendly", "generated", "prefix"),
    [
        (waymark.RunStatus, run_pb2.RunStatus, "RUN_STATUS_"),
        (waymark.EntryStatus, run_pb2.EntryStatus, "ENTRY_STATUS_"),
        (waymark.ApprovalState, run_pb2.ApprovalState, "APPROVAL_STATE_"),
        (waymark.DriftRecovery, run_service_pb2.DriftRecovery, "DRIFT_RECOVERY_"),
        (waymark.WaitFor, run_service_pb2.WaitFor, "WAIT_FOR_"),
        (waymark.ScheduleOverlapPolicy, schedule_service_pb2.ScheduleOverlapPolicy, "SCHEDULE_OVERLAP_POLICY_"),
        (waymark.ScheduleActionCause, schedule_service_pb2.ScheduleActionCause, "SCHEDULE_ACTION_CAUSE_"),
    ],
)
def test_friendly_enums_match_the_proto(friendly: type[IntEnum], generated: object, prefix: str) -> None:
    values = generated.DESCRIPTOR.values  # type: ignore[attr-defined]
    assert {v.name.removeprefix(prefix): v.number for v in values} == {m.name: m.value for m in friendly}


def test_statuses_compare_with_message_fields() -> None:
    run = run_pb2.Run(status=run_pb2.RUN_STATUS_SUCCEEDED)
    assert run.status == waymark.RunStatus.SUCCEEDED
    assert waymark.RunStatus(run.status).terminal and not waymark.RunStatus.SUSPENDED.terminal
