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

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from offsetlake.apply.planner import SAFE_GROUP_STATES, PlanRow, commit_marker
from offsetlake.apply.target_state import (
    TargetClusterError,
    read_committed,
    read_group_states,
    run_bounded,
)

# What Apache Kafka answers when an admin commit meets a group that has members (classic and
# KIP-848 consumer groups): the group is active, not broken.
_ACTIVE_GROUP_ERRORS = frozenset(
    {
        KafkaError.UNKNOWN_MEMBER_ID,
        KafkaError.ILLEGAL_GENERATION,
        KafkaError.NON_EMPTY_GROUP,
        KafkaError.REBALANCE_IN_PROGRESS,
        KafkaError.FENCED_MEMBER_EPOCH,
        KafkaError.STALE_MEMBER_EPOCH,
    }
)


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
    per_group = run_bounded(
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
    except _GroupActiveError as error:
        return _all(rows, Outcome.SKIPPED_ACTIVE_GROUP, str(error))
    except (KafkaException, TargetClusterError) as error:
        return _all(rows, Outcome.FAILED, f"alter failed: {_message(error)}")

    try:
        read_back = read_committed(
            admin, group, [(row.topic, row.partition) for row in rows], timeout_s=timeout_s
        )
    except (KafkaException, TargetClusterError) as error:
        read_back_error = f"altered, but the read-back failed: {_message(error)}"
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


class _GroupActiveError(Exception):
    """The broker refused the alter because the group has members."""


def _alter(
    admin: AdminClient, group: str, rows: list[PlanRow], run_id: str, timeout_s: float
) -> dict[tuple[str, int], str]:
    """Alter the group's offsets; returns the per-partition errors (empty when all succeeded)."""
    request = []
    for row in rows:
        if row.planned_offset is None or row.source_timestamp is None:
            raise ValueError(f"altering row without planned offset or source timestamp: {row}")
        request.append(
            TopicPartition(
                row.topic,
                row.partition,
                row.planned_offset,
                metadata=commit_marker(run_id, row.source_timestamp),
            )
        )
    future = admin.alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, request)], request_timeout=timeout_s
    )[group]
    try:
        answer = future.result()
    except KafkaException as error:
        if error.args and error.args[0].code() in _ACTIVE_GROUP_ERRORS:
            raise _GroupActiveError(
                f"the target refused the alter, group is active: {_message(error)}"
            ) from error
        raise
    failed = [tp for tp in answer.topic_partitions if tp.error is not None]
    # Apache Kafka reports a commit refused for membership per partition, not per request.
    active = [tp for tp in failed if tp.error.code() in _ACTIVE_GROUP_ERRORS]
    if active:
        raise _GroupActiveError(
            "the target refused the alter, group is active: "
            f"{active[0].error.name()}: {active[0].error.str()}"
        )
    return {(tp.topic, tp.partition): f"alter failed: {tp.error.name()}: {tp.error.str()}" for tp in failed}


def _all(rows: list[PlanRow], outcome: Outcome, error: str) -> list[PartitionResult]:
    return [_result(row, outcome, None, None, error) for row in rows]


def _result(
    row: PlanRow, outcome: Outcome, applied: int | None, read_back: int | None, error: str | None
) -> PartitionResult:
    return PartitionResult(row, outcome, applied, read_back, error, datetime.now(UTC))


def _message(error: Exception) -> str:
    kafka_error = error.args[0] if isinstance(error, KafkaException) and error.args else None
    if isinstance(kafka_error, KafkaError):
        return f"{kafka_error.name()}: {kafka_error.str()}"
    return str(error)
