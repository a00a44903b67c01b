"""Reads what the planner needs from the target cluster: group states, committed offsets, log bounds.

Only reads; nothing here changes the cluster. The active-group check uses the group STATE rather
than its member list: Tansu describes groups without members, and for Apache Kafka the state is
the broker's own verdict on whether a group has members.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from confluent_kafka import ConsumerGroupState
from confluent_kafka.admin import AdminClient

from offsetlake.apply.planner import TargetGroup, TargetState
from offsetlake.kafka import admin as kafka_admin
from offsetlake.kafka.admin import KafkaAdminError
from offsetlake.mirror.positions import CommittedOffset, GroupPartition, TopicPartitionKey

# Kafka's own names for the group states (ConsumerGroupState in the Java client).
_STATE_NAMES = {
    ConsumerGroupState.EMPTY: "Empty",
    ConsumerGroupState.DEAD: "Dead",
    ConsumerGroupState.STABLE: "Stable",
    ConsumerGroupState.PREPARING_REBALANCING: "PreparingRebalance",
    ConsumerGroupState.COMPLETING_REBALANCING: "CompletingRebalance",
    ConsumerGroupState.UNKNOWN: "Unknown",
}


READS_IN_FLIGHT = 256
"""Committed-offset requests (one group each) in flight while the target is read. Each waits a few
round trips (coordinator lookup, fetch), so the read takes about groups x round trips / in-flight.
They are cheap reads for the coordinators and wait on one client, not on threads, so the limit is
well above --concurrency (groups altered at once, default 8, at which 10,000 groups over 20 ms
each way would take minutes to read)."""


def read_target_state(
    admin: AdminClient,
    keys: AbstractSet[GroupPartition],
    *,
    timeout_s: float,
    max_in_flight: int = READS_IN_FLIGHT,
) -> TargetState:
    """The state of every group and partition named in ``keys``: committed offsets ``max_in_flight``
    groups at a time, while the groups are described beside them."""
    partition_counts = kafka_admin.list_partition_counts(admin, timeout_s=timeout_s)
    existing = {
        (topic, partition) for _, topic, partition in keys if partition < partition_counts.get(topic, 0)
    }
    groups = sorted({group for group, _, _ in keys})
    with_partitions = sorted({group for group, topic, partition in keys if (topic, partition) in existing})
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="describe-groups") as describing:
        described_later = describing.submit(read_groups, admin, groups, timeout_s=timeout_s)
        # Each group's whole commit list, filtered below: naming every partition made the request
        # and the answer carry all of them, committed or not (2,000 new groups of 100 partitions:
        # 3.6 s against 1.3 s).
        committed_per_group, failures = kafka_admin.list_committed_offsets_of_groups(
            admin, with_partitions, timeout_s=timeout_s, max_in_flight=max_in_flight
        )
        described = described_later.result()
    if failures:
        group = min(failures)
        raise KafkaAdminError(f"cannot read committed offsets of group {group}: {failures[group]}")
    committed: dict[str, dict[TopicPartitionKey, CommittedOffset]] = {
        group: {
            (topic, partition): offset
            for (topic, partition), offset in offsets.items()
            if (group, topic, partition) in keys and (topic, partition) in existing
        }
        for group, offsets in committed_per_group.items()
    }
    return TargetState(
        groups={
            group: replace(description, committed=committed.get(group, {}))
            for group, description in described.items()
        },
        log_bounds=kafka_admin.list_log_bounds(admin, sorted(existing), timeout_s=timeout_s),
        partition_counts=partition_counts,
    )


def read_groups(admin: AdminClient, groups: Iterable[str], *, timeout_s: float) -> dict[str, TargetGroup]:
    """Every group's state, type and member count (no committed offsets); raises the first group's
    error if any failed.

    Raised as a copy: raising the error ``failures`` holds would tie it, its traceback and this
    frame (``admin``) in a cycle, and keep the client alive until the garbage collector runs; the
    executor drops a client whose request went unanswered so that no late answer reaches it
    (librdkafka issue #4605 aborts the process: seen when a paused target came back)."""
    described, failures = kafka_admin.describe_groups(admin, groups, timeout_s=timeout_s)
    if failures:
        first = failures[min(failures)]
        raise type(first)(*first.args)
    return {group: target_group(description) for group, description in described.items()}


def target_group(description: kafka_admin.GroupDescription) -> TargetGroup:
    """A group as the cluster described it, in Kafka's names (no committed offsets)."""
    return TargetGroup(
        kafka_admin.NOT_FOUND
        if description.state is None
        else _STATE_NAMES.get(description.state, "Unknown"),
        description.type.name.lower(),
        description.members,
    )
