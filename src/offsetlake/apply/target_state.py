"""Reads what the planner needs from the target cluster: group states, committed offsets, log bounds.

Only reads; nothing here changes the cluster. The active-group check uses the group STATE rather
than its member list: Tansu describes groups without members, and for Apache Kafka the state is
the broker's own verdict on whether a group has members.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable

from confluent_kafka import ConsumerGroupState
from confluent_kafka.admin import AdminClient

from offsetlake.apply.planner import TargetState
from offsetlake.kafka import admin as kafka_admin
from offsetlake.positions import GroupPartition

# Kafka's own names for the group states (ConsumerGroupState in the Java client).
_STATE_NAMES = {
    ConsumerGroupState.EMPTY: "Empty",
    ConsumerGroupState.DEAD: "Dead",
    ConsumerGroupState.STABLE: "Stable",
    ConsumerGroupState.PREPARING_REBALANCING: "PreparingRebalance",
    ConsumerGroupState.COMPLETING_REBALANCING: "CompletingRebalance",
    ConsumerGroupState.UNKNOWN: "Unknown",
}


def read_target_state(
    admin: AdminClient, keys: Collection[GroupPartition], *, timeout_s: float, concurrency: int
) -> TargetState:
    """The state of every group and partition named in ``keys``."""
    partition_counts = kafka_admin.list_partition_counts(admin, timeout_s=timeout_s)
    existing = {
        (topic, partition) for _, topic, partition in keys if partition < partition_counts.get(topic, 0)
    }
    partitions_by_group: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for group, topic, partition in sorted(keys):
        if (topic, partition) in existing:
            partitions_by_group[group].append((topic, partition))
    groups = sorted({group for group, _, _ in keys})

    committed_per_group = kafka_admin.run_bounded(
        lambda group: kafka_admin.list_committed_offsets(
            admin, group, partitions_by_group[group], timeout_s=timeout_s
        ),
        [group for group in groups if partitions_by_group[group]],
        concurrency,
    )
    committed = {
        (group, topic, partition): offset
        for group, offsets in committed_per_group.items()
        for (topic, partition), offset in offsets.items()
    }
    return TargetState(
        group_states=read_group_states(admin, groups, timeout_s=timeout_s),
        committed=committed,
        log_bounds=kafka_admin.list_log_bounds(admin, sorted(existing), timeout_s=timeout_s),
        partition_counts=partition_counts,
    )


def read_group_states(admin: AdminClient, groups: Iterable[str], *, timeout_s: float) -> dict[str, str]:
    """Group id -> state name (``Empty``, ``Stable`` ...; ``NotFound`` when the group does not exist)."""
    states, failures = kafka_admin.describe_group_states(admin, groups, timeout_s=timeout_s)
    if failures:
        raise failures[min(failures)]
    return {
        group: kafka_admin.NOT_FOUND if state is None else _STATE_NAMES.get(state, "Unknown")
        for group, state in states.items()
    }
