"""Reads what the planner needs from the target cluster: group states, committed offsets, log bounds.

Only AdminClient calls; nothing here changes the cluster. The active-group check uses the group
STATE rather than its member list: Tansu describes groups without members, and for Apache Kafka
the state is the broker's own verdict on whether a group has members.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec

from offsetlake.apply.planner import CommittedOffset, GroupPartition, LogBounds, TargetState

_STATE_NAMES = {
    ConsumerGroupState.EMPTY: "Empty",
    ConsumerGroupState.DEAD: "Dead",
    ConsumerGroupState.STABLE: "Stable",
    ConsumerGroupState.PREPARING_REBALANCING: "PreparingRebalance",
    ConsumerGroupState.COMPLETING_REBALANCING: "CompletingRebalance",
    ConsumerGroupState.UNKNOWN: "Unknown",
}

_T = TypeVar("_T")
_R = TypeVar("_R")


class TargetClusterError(RuntimeError):
    """The target cluster could not be read (unreachable, timed out, not authorised)."""


def read_target_state(
    admin: AdminClient, keys: Collection[GroupPartition], *, timeout_s: float, concurrency: int
) -> TargetState:
    """The state of every group and partition named in ``keys``."""
    partition_counts = read_partition_counts(admin, timeout_s=timeout_s)
    existing = {
        (topic, partition) for _, topic, partition in keys if partition < partition_counts.get(topic, 0)
    }
    partitions_by_group: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for group, topic, partition in sorted(keys):
        if (topic, partition) in existing:
            partitions_by_group[group].append((topic, partition))
    groups = sorted({group for group, _, _ in keys})

    committed_per_group = run_bounded(
        lambda group: read_committed(admin, group, partitions_by_group[group], timeout_s=timeout_s),
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
        log_bounds=read_log_bounds(admin, sorted(existing), timeout_s=timeout_s),
        partition_counts=partition_counts,
    )


def read_partition_counts(admin: AdminClient, *, timeout_s: float) -> dict[str, int]:
    """Every topic on the target and its number of partitions."""
    try:
        metadata = admin.list_topics(timeout=timeout_s)
    except KafkaException as error:
        raise TargetClusterError(f"cannot list topics: {_describe(error)}") from error
    return {name: len(topic.partitions) for name, topic in metadata.topics.items() if topic.error is None}


def read_group_states(admin: AdminClient, groups: Iterable[str], *, timeout_s: float) -> dict[str, str]:
    """Group id -> state name (``Empty``, ``Stable`` ...; ``NotFound`` when the group does not exist)."""
    groups = list(groups)
    if not groups:
        return {}
    states: dict[str, str] = {}
    futures = admin.describe_consumer_groups(groups, request_timeout=timeout_s)
    for group, future in futures.items():
        try:
            description = future.result()
        except KafkaException as error:
            if error.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND:
                states[group] = "NotFound"
                continue
            raise TargetClusterError(f"cannot describe group {group}: {_describe(error)}") from error
        states[group] = _STATE_NAMES.get(description.state, "Unknown")
    return states


def read_committed(
    admin: AdminClient, group: str, partitions: Iterable[tuple[str, int]], *, timeout_s: float
) -> dict[tuple[str, int], CommittedOffset]:
    """The group's committed offsets for ``partitions``; partitions without one are left out."""
    request = [TopicPartition(topic, partition) for topic, partition in partitions]
    future = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, request)], request_timeout=timeout_s
    )[group]
    try:
        answer = future.result()
    except KafkaException as error:
        raise TargetClusterError(
            f"cannot read committed offsets of group {group}: {_describe(error)}"
        ) from error
    committed = {}
    for tp in answer.topic_partitions:
        if tp.error is not None:
            raise TargetClusterError(
                f"cannot read committed offset of group {group} on {tp.topic}-{tp.partition}: "
                f"{tp.error.str()}"
            )
        # No committed offset reads back as -1 (Kafka) or OFFSET_INVALID -1001 (librdkafka).
        if tp.offset >= 0:
            committed[(tp.topic, tp.partition)] = CommittedOffset(tp.offset, tp.metadata or "")
    return committed


def read_log_bounds(
    admin: AdminClient, partitions: Collection[tuple[str, int]], *, timeout_s: float
) -> dict[tuple[str, int], LogBounds]:
    """Log start and log end offset of each partition."""
    if not partitions:
        return {}
    starts = _list_offsets(admin, partitions, OffsetSpec.earliest(), timeout_s)
    ends = _list_offsets(admin, partitions, OffsetSpec.latest(), timeout_s)
    return {key: LogBounds(starts[key], ends[key]) for key in partitions}


def run_bounded(work: Callable[[_T], _R], items: Iterable[_T], concurrency: int) -> dict[_T, _R]:
    """``work(item)`` for every item with at most ``concurrency`` in flight; the first error propagates."""
    items = list(items)
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        return dict(zip(items, pool.map(work, items), strict=True))


def _list_offsets(
    admin: AdminClient, partitions: Collection[tuple[str, int]], spec: OffsetSpec, timeout_s: float
) -> dict[tuple[str, int], int]:
    request = {TopicPartition(topic, partition): spec for topic, partition in partitions}
    offsets = {}
    for tp, future in admin.list_offsets(request, request_timeout=timeout_s).items():
        try:
            offsets[(tp.topic, tp.partition)] = future.result().offset
        except KafkaException as error:
            raise TargetClusterError(
                f"cannot read log offsets of {tp.topic}-{tp.partition}: {_describe(error)}"
            ) from error
    return offsets


def _describe(error: KafkaException) -> str:
    kafka_error = error.args[0] if error.args else None
    if isinstance(kafka_error, KafkaError):
        return f"{kafka_error.name()}: {kafka_error.str()}"
    return str(error)
