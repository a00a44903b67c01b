"""Snapshots of the source cluster's committed consumer-group offsets (no Spark needed).

MM2 only checkpoints groups that pass its filters and only every emit interval; a snapshot of what
the groups have really committed upstream is the reference the pipeline compares translations
against. The snapshot never invents an offset: partitions without a committed offset (Kafka -1,
Tansu -1001) are left out, and a group whose offsets cannot be read fails the snapshot instead of
silently missing from it. spark_source.py serves these snapshots as ``offsetlake_group_offsets``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException
from confluent_kafka.admin import AdminClient

# MM2's groups / groups.exclude defaults (MirrorCheckpointConfig).
DEFAULT_INCLUDE = ".*"
DEFAULT_EXCLUDE = "console-consumer-.*|connect-.*|__.*"
# librdkafka takes one group per ListConsumerGroupOffsets request; this many run at once.
MAX_GROUPS_IN_FLIGHT = 8


class GroupSnapshotError(RuntimeError):
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
    """Group ids that fully match ``include`` and do not fully match ``exclude`` (as MM2 filters)."""
    include_re = _compile(include, "groups.include")
    exclude_re = _compile(exclude, "groups.exclude") if exclude else None
    return sorted(
        group
        for group in set(group_ids)
        if include_re.fullmatch(group) and not (exclude_re and exclude_re.fullmatch(group))
    )


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
    admin = AdminClient(dict(config))
    groups = select_groups(_list_group_ids(admin, timeout_s), include, exclude)
    if not groups:
        return []
    states, failures = _describe_states(admin, groups, deadline)
    offsets, offset_failures = _committed_offsets(
        admin, [g for g in groups if g in states], deadline, max_in_flight
    )
    failures.update(offset_failures)
    if failures:
        details = "; ".join(f"{group}: {message}" for group, message in sorted(failures.items()))
        raise GroupSnapshotError(f"could not snapshot {len(failures)} of {len(groups)} groups: {details}")
    return [
        GroupOffset(group, states[group], topic, partition, offset, metadata, snapshot_time)
        for group, topic, partition, offset, metadata in offsets
    ]


def _list_group_ids(admin: AdminClient, timeout_s: float) -> list[str]:
    try:
        listing = admin.list_consumer_groups(request_timeout=timeout_s).result(timeout=timeout_s)
    except (KafkaException, TimeoutError) as error:
        raise GroupSnapshotError(f"listing consumer groups failed: {error}") from error
    if listing.errors:
        # Some brokers did not answer: groups they coordinate would be missing.
        raise GroupSnapshotError(f"listing consumer groups failed on some brokers: {listing.errors}")
    return [group.group_id for group in listing.valid]


def _describe_states(
    admin: AdminClient, groups: list[str], deadline: float
) -> tuple[dict[str, str], dict[str, str]]:
    states: dict[str, str] = {}
    failures: dict[str, str] = {}
    futures = admin.describe_consumer_groups(groups, request_timeout=_remaining(deadline))
    for group, future in futures.items():
        try:
            states[group] = future.result(timeout=_remaining(deadline)).state.name
        except (KafkaException, TimeoutError) as error:
            failures[group] = f"describe failed: {error}"
    return states, failures


def _committed_offsets(
    admin: AdminClient, groups: list[str], deadline: float, max_in_flight: int
) -> tuple[list[tuple[str, str, int, int, str]], dict[str, str]]:
    """(group, topic, partition, offset, metadata) for committed offsets, and per-group failures."""
    rows: list[tuple[str, str, int, int, str]] = []
    failures: dict[str, str] = {}
    pending = iter(groups)
    in_flight: dict[Future[Any], str] = {}

    def submit_next() -> None:
        group = next(pending, None)
        if group is not None:
            request = [ConsumerGroupTopicPartitions(group)]
            (future,) = admin.list_consumer_group_offsets(
                request, request_timeout=_remaining(deadline)
            ).values()
            in_flight[future] = group

    for _ in range(max_in_flight):
        submit_next()
    while in_flight:
        done, _ = wait(in_flight, timeout=_remaining(deadline), return_when=FIRST_COMPLETED)
        if not done:
            for group in in_flight.values():
                failures[group] = "timed out listing committed offsets"
            break
        for future in done:
            group = in_flight.pop(future)
            try:
                result = future.result()
            except (KafkaException, TimeoutError) as error:
                failures[group] = f"listing committed offsets failed: {error}"
            else:
                errors = [
                    f"{tp.topic}-{tp.partition}: {tp.error}" for tp in result.topic_partitions if tp.error
                ]
                if errors:
                    failures[group] = "; ".join(errors)
                rows.extend(
                    (group, tp.topic, tp.partition, tp.offset, tp.metadata or "")
                    for tp in result.topic_partitions
                    if not tp.error and tp.offset >= 0
                )
            submit_next()
    return sorted(rows), failures


def _remaining(deadline: float) -> float:
    return max(0.001, deadline - time.monotonic())


def _compile(pattern: str, option: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as error:
        raise ValueError(f"{option} {pattern!r} is not a valid regex: {error}") from error
