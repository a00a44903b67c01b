"""Snapshots of the source cluster's committed consumer-group offsets (no Spark needed).

MM2 only checkpoints groups that pass its filters and only every emit interval; a snapshot of what
the groups have really committed upstream is the reference the pipeline compares translations
against. The snapshot never invents an offset: partitions without a committed offset (Kafka -1,
Tansu -1001) are left out, and a group whose offsets cannot be read fails the snapshot instead of
silently missing from it. data_sources/offsetlake_group_offsets.py serves these snapshots to Spark.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from offsetlake.kafka import admin as kafka_admin
from offsetlake.kafka import clients
from offsetlake.kafka.admin import KafkaAdminError
from offsetlake.mirror.filters import group_filter

# librdkafka takes one group per ListConsumerGroupOffsets request; this many run at once.
MAX_GROUPS_IN_FLIGHT = 8


class GroupSnapshotError(KafkaAdminError):
    """Some groups could not be listed, described or read; the snapshot would be incomplete."""


@dataclass(frozen=True)
class GroupOffset:
    consumer_group: str
    group_state: str
    topic: str
    partition: int
    committed_offset: int
    metadata: str
    snapshot_time: datetime


def select_groups(group_ids: Iterable[str], include: str, exclude: str | None) -> list[str]:
    """Group ids that fully match ``include`` and not ``exclude`` (MM2's group filter), sorted."""
    return group_filter(include, exclude).select(group_ids)


def snapshot_group_offsets(
    config: Mapping[str, str],
    include: str,
    exclude: str | None,
    timeout_s: float,
    *,
    max_in_flight: int = MAX_GROUPS_IN_FLIGHT,
) -> list[GroupOffset]:
    """The committed offsets of every selected group, with its state, as of now.

    ``config`` is a librdkafka client config. Raises GroupSnapshotError naming every group that
    failed, so a partial snapshot is never mistaken for a complete one.
    """
    snapshot_time = datetime.now(UTC)
    deadline = time.monotonic() + timeout_s
    selected = group_filter(include, exclude)  # a bad regex fails before the cluster is asked
    with clients.admin(config) as admin:
        try:
            group_ids = kafka_admin.list_group_ids(admin, timeout_s=timeout_s)
        except KafkaAdminError as error:
            raise GroupSnapshotError(str(error)) from error
        groups = selected.select(group_ids)
        if not groups:
            return []
        states, describe_failures = kafka_admin.describe_group_states(
            admin, groups, timeout_s=max(0.001, deadline - time.monotonic())
        )
        offsets, offset_failures = kafka_admin.list_committed_offsets_of_groups(
            admin,
            [g for g in groups if g in states],
            timeout_s=timeout_s,
            max_in_flight=max_in_flight,
            deadline=deadline,
        )
    failures = {group: f"describe failed: {error}" for group, error in describe_failures.items()}
    failures.update(offset_failures)
    if failures:
        details = "; ".join(f"{group}: {message}" for group, message in sorted(failures.items()))
        raise GroupSnapshotError(f"could not snapshot {len(failures)} of {len(groups)} groups: {details}")
    return [
        GroupOffset(
            group,
            _state_name(states[group]),
            topic,
            partition,
            committed.offset,
            committed.metadata,
            snapshot_time,
        )
        for group in sorted(offsets)
        for (topic, partition), committed in sorted(offsets[group].items())
    ]


def _state_name(state: object) -> str:
    """The librdkafka state name (``STABLE``, ``EMPTY`` ...); a group unknown to the cluster is ``DEAD``."""
    return getattr(state, "name", "DEAD")
