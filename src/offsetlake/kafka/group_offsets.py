"""Snapshots of the source cluster's committed consumer-group offsets (no Spark needed).

MM2 only checkpoints groups that pass its filters and only every emit interval; a snapshot of what
the groups have really committed upstream is the reference the pipeline compares translations
against. The snapshot never invents an offset: partitions without a committed offset (Kafka -1,
Tansu -1001) are left out, and a group whose offsets cannot be read fails the snapshot instead of
silently missing from it. data_sources/offsetlake_group_offsets.py serves these snapshots to Spark.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from offsetlake.kafka import admin as kafka_admin
from offsetlake.kafka import clients
from offsetlake.kafka.admin import KafkaAdminError
from offsetlake.mirror.filters import group_filter

# librdkafka takes one group per ListConsumerGroupOffsets request; this many run at once.
MAX_GROUPS_IN_FLIGHT = 8
# Failed groups a GroupSnapshotError names (10,000 failed groups made an unreadable line).
FAILURES_NAMED = 10


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
    wanted: Callable[[str], bool] | None = None,
) -> list[GroupOffset]:
    """The committed offsets of every selected group, with its state, as of now (``wanted``: only
    the groups it keeps of those, e.g. a failover's selection).

    ``config`` is a librdkafka client config. Raises GroupSnapshotError if any group failed, so a
    partial snapshot is never mistaken for a complete one. ``timeout_s`` bounds each request, not
    the snapshot: it fails when the cluster gives no answer for ``timeout_s`` (a dead cluster: at
    the first request), and a cluster that keeps answering is read however many groups it has.
    """
    snapshot_time = datetime.now(UTC)
    selected = group_filter(include, exclude)  # a bad regex fails before the cluster is asked
    with clients.admin(config) as admin:
        try:
            group_ids = kafka_admin.list_group_ids(admin, timeout_s=timeout_s)
        except KafkaAdminError as error:
            raise GroupSnapshotError(str(error)) from error
        groups = [group for group in selected.select(group_ids) if wanted is None or wanted(group)]
        if not groups:
            return []
        states, describe_failures = kafka_admin.describe_group_states(admin, groups, timeout_s=timeout_s)
        offsets, offset_failures = kafka_admin.list_committed_offsets_of_groups(
            admin,
            [] if describe_failures else [g for g in groups if g in states],  # failed already
            timeout_s=timeout_s,
            max_in_flight=max_in_flight,
        )
    failures = {group: f"describe failed: {error}" for group, error in describe_failures.items()}
    failures.update(offset_failures)
    if failures:
        raise GroupSnapshotError(snapshot_failure(failures, len(groups)))
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


def snapshot_failure(failures: Mapping[str, str], groups: int) -> str:
    """One readable line: how many groups failed, the first few by name with their reasons."""
    named = sorted(failures.items())[:FAILURES_NAMED]
    details = "; ".join(f"{group}: {message}" for group, message in named)
    more = len(failures) - len(named)
    return f"could not snapshot {len(failures)} of {groups} groups: {details}" + (
        f"; and {more} more" if more else ""
    )


def _state_name(state: object) -> str:
    """The librdkafka state name (``STABLE``, ``EMPTY`` ...); a group unknown to the cluster is ``DEAD``."""
    return getattr(state, "name", "DEAD")
