"""Carries out a plan: alter offsets per group with bounded concurrency, then read them back.

Each group is handled on its own: an error in one group (it became active, the broker timed out)
is recorded for that group and never stops the others. Right before altering, the group's state
is read again, because a consumer may have joined since planning and Tansu, unlike Apache Kafka,
does not reject commits to a group with members.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from confluent_kafka.admin import AdminClient

from offsetlake.apply.planner import SAFE_GROUP_STATES, PlanRow, commit_marker
from offsetlake.apply.target_state import read_group_states
from offsetlake.kafka import admin as kafka_admin
from offsetlake.kafka.admin import GroupActiveError, KafkaAdminError
from offsetlake.positions import CommittedOffset


class Outcome(StrEnum):
    APPLIED = "applied"
    VERIFY_FAILED = "verify_failed"
    SKIPPED_ACTIVE_GROUP = "skipped_active_group"
    FAILED = "failed"


@dataclass(frozen=True)
class PartitionResult:
    row: PlanRow
    outcome: Outcome
    applied_offset: int | None
    read_back_offset: int | None
    error: str | None
    finished_at: datetime

    @property
    def verified(self) -> bool:
        return self.outcome is Outcome.APPLIED


def execute_plan(
    admin: AdminClient,
    plan: Sequence[PlanRow],
    *,
    run_id: str,
    timeout_s: float,
    concurrency: int,
) -> list[PartitionResult]:
    """Alter and verify every altering row of ``plan``; one result per such row, in plan order."""
    rows_by_group: dict[str, list[PlanRow]] = defaultdict(list)
    for row in plan:
        if row.action.alters:
            rows_by_group[row.consumer_group].append(row)
    per_group = kafka_admin.run_bounded(
        lambda group: _apply_group(admin, group, rows_by_group[group], run_id, timeout_s),
        sorted(rows_by_group),
        concurrency,
    )
    results = {result.row.key: result for results in per_group.values() for result in results}
    return [results[row.key] for row in plan if row.key in results]


def _apply_group(
    admin: AdminClient, group: str, rows: list[PlanRow], run_id: str, timeout_s: float
) -> list[PartitionResult]:
    try:
        state = read_group_states(admin, [group], timeout_s=timeout_s)[group]
        if state not in SAFE_GROUP_STATES:
            return _all(rows, Outcome.SKIPPED_ACTIVE_GROUP, f"group became {state} before the alter")
        alter_errors = _alter(admin, group, rows, run_id, timeout_s)
    except GroupActiveError as error:
        return _all(rows, Outcome.SKIPPED_ACTIVE_GROUP, str(error))
    except KafkaAdminError as error:
        return _all(rows, Outcome.FAILED, f"alter failed: {error}")

    try:
        read_back = kafka_admin.list_committed_offsets(
            admin, group, [(row.topic, row.partition) for row in rows], timeout_s=timeout_s
        )
    except KafkaAdminError as error:
        read_back_error = f"altered, but the read-back failed: {error}"
        return [
            _result(row, Outcome.VERIFY_FAILED, row.planned_offset, None, read_back_error)
            if (row.topic, row.partition) not in alter_errors
            else _result(row, Outcome.FAILED, None, None, alter_errors[(row.topic, row.partition)])
            for row in rows
        ]

    results = []
    for row in rows:
        key = (row.topic, row.partition)
        if key in alter_errors:
            results.append(_result(row, Outcome.FAILED, None, None, alter_errors[key]))
            continue
        committed = read_back.get(key)
        offset = committed.offset if committed is not None else None
        if offset == row.planned_offset:
            results.append(_result(row, Outcome.APPLIED, row.planned_offset, offset, None))
        else:
            results.append(
                _result(
                    row,
                    Outcome.VERIFY_FAILED,
                    row.planned_offset,
                    offset,
                    f"read back {offset} after setting {row.planned_offset}",
                )
            )
    return results


def _alter(
    admin: AdminClient, group: str, rows: list[PlanRow], run_id: str, timeout_s: float
) -> dict[tuple[str, int], str]:
    """Alter the group's offsets; returns the per-partition errors (empty when all succeeded)."""
    offsets = {}
    for row in rows:
        if row.planned_offset is None or row.source_timestamp is None:
            raise ValueError(f"altering row without planned offset or source timestamp: {row}")
        offsets[(row.topic, row.partition)] = CommittedOffset(
            row.planned_offset, commit_marker(run_id, row.source_timestamp)
        )
    return kafka_admin.alter_committed_offsets(admin, group, offsets, timeout_s=timeout_s)


def _all(rows: list[PlanRow], outcome: Outcome, error: str) -> list[PartitionResult]:
    return [_result(row, outcome, None, None, error) for row in rows]


def _result(
    row: PlanRow, outcome: Outcome, applied: int | None, read_back: int | None, error: str | None
) -> PartitionResult:
    return PartitionResult(row, outcome, applied, read_back, error, datetime.now(UTC))
