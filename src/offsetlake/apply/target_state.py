"""Reads what the planner needs from the target cluster: group states, committed offsets, log bounds.

Only reads; nothing here changes the cluster. The active-group check uses the group STATE rather
than its member list: Tansu describes groups without members, and for Apache Kafka the state is
the broker's own verdict on whether a group has members.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass

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
    described = read_groups(admin, groups, timeout_s=timeout_s)
    return TargetState(
        group_states={group: description.state for group, description in described.items()},
        group_types={group: description.type for group, description in described.items()},
        group_members={group: description.members for group, description in described.items()},
        committed=committed,
        log_bounds=kafka_admin.list_log_bounds(admin, sorted(existing), timeout_s=timeout_s),
        partition_counts=partition_counts,
    )


@dataclass(frozen=True)
class TargetGroup:
    """A target group in Kafka's own words: state (``Empty``, ``Stable`` ...; ``NotFound`` when the
    group does not exist), type (``classic``, ``consumer``; ``unknown`` when the broker does not
    say) and its number of members."""

    state: str
    type: str
    members: int


def read_groups(admin: AdminClient, groups: Iterable[str], *, timeout_s: float) -> dict[str, TargetGroup]:
    """Every group's state, type and member count; raises the first group's error if any failed."""
    described, failures = kafka_admin.describe_groups(admin, groups, timeout_s=timeout_s)
    if failures:
        raise failures[min(failures)]
    return {
        group: TargetGroup(
            kafka_admin.NOT_FOUND
            if description.state is None
            else _STATE_NAMES.get(description.state, "Unknown"),
            description.type.name.lower(),
            description.members,
        )
        for group, description in described.items()
    }
