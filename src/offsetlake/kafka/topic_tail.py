"""Read whole topics of one cluster, each partition from its log start to its end, bounded: what the
readers of MM2's internal topics without a JVM (checkpoint_tail.py, offset_sync_tail.py) share.

The topics are those a regex matches among the cluster's topics (one metadata request). Each
partition is read by :mod:`offsetlake.kafka.read_to_end` to its end (partition EOF), so a wrong
ListOffsets answer (Tansu) cannot cut the read short. A partition that cannot be read to its end
(a metadata error, an error, no progress for the timeout) is left out whole, with its reason: a part
of a log could be older than what the caller already holds. Only a cluster whose topics cannot be
listed raises.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from confluent_kafka import OFFSET_BEGINNING, KafkaError, Message

from offsetlake.errors import ExternalError
from offsetlake.kafka import clients
from offsetlake.kafka.admin import read_metadata
from offsetlake.kafka.read_to_end import (
    PartitionRead,
    PartitionToRead,
    ReadOutcome,
    ReadToEnd,
    reader_consumer_config,
)

R = TypeVar("R")


class TopicTailError(ExternalError):
    """A cluster's topics could not be listed: nothing about the topics to read is known."""


@dataclass(frozen=True)
class UnreadablePartition:
    """A partition that could not be read to its end: none of its records are used."""

    topic: str
    partition: int
    """-1 when the topic's metadata failed (no partition of it is known)."""
    reason: str


@dataclass(frozen=True)
class WholeTopics(Generic[R]):
    records: tuple[R, ...]
    """Every record of each partition read to its end, decoded; a partition's in offset order."""
    topics: tuple[str, ...]
    """The topics the pattern matched on the cluster, sorted."""
    seconds: float
    unreadable: tuple[UnreadablePartition, ...] = ()


def read_whole_topics(
    config: Mapping[str, str],
    pattern: re.Pattern[str],
    *,
    timeout_s: float,
    decode: Callable[[Message], R],
    role: str,
    error: type[TopicTailError] = TopicTailError,
) -> WholeTopics[R]:
    """Every record of the topics ``pattern`` matches (``pattern.match``), log start to log end.

    Bounded: the metadata request by ``timeout_s``; a partition that gives no record and no end for
    ``timeout_s``, or fails, is reported in ``unreadable``. A cluster whose topics cannot be listed
    raises ``error`` saying which cluster (``role``, e.g. "target")."""
    started = time.monotonic()
    with clients.admin(config) as admin:
        try:
            metadata = read_metadata(admin, timeout_s=timeout_s)
        except Exception as cause:
            raise error(f"cannot list the {role}'s topics: {cause}") from cause
    matching = {name: topic for name, topic in metadata.topics.items() if pattern.match(name)}
    unreadable: list[UnreadablePartition] = []
    partitions: list[tuple[str, int]] = []
    for name, topic in sorted(matching.items()):
        if topic.error is not None:
            unreadable.append(UnreadablePartition(name, -1, f"metadata: {topic.error.str()}"))
            continue
        for number, partition in sorted(topic.partitions.items()):
            if partition.error is not None and partition.error.code() != KafkaError.NO_ERROR:
                unreadable.append(UnreadablePartition(name, number, f"metadata: {partition.error.str()}"))
            else:
                partitions.append((name, number))
    records: list[R] = []
    if partitions:
        records, failed = _read(config, partitions, timeout_s, decode)
        unreadable += failed
    return WholeTopics(tuple(records), tuple(sorted(matching)), time.monotonic() - started, tuple(unreadable))


def _read(
    config: Mapping[str, str],
    partitions: list[tuple[str, int]],
    timeout_s: float,
    decode: Callable[[Message], R],
) -> tuple[list[R], list[UnreadablePartition]]:
    """The records of every partition read to its end, and the partitions that could not be."""
    read_records: list[tuple[str, int, R]] = []
    wanted = [PartitionToRead(name, number, OFFSET_BEGINNING) for name, number in partitions]
    with clients.consumer(reader_consumer_config(config, fail_on_data_loss=False)) as consumer:
        read = ReadToEnd(consumer, wanted, timeout_s=timeout_s)
        for batch in read:
            read_records += ((m.topic(), m.partition(), decode(m)) for m in batch)
    failed = {
        (r.topic, r.partition): unreadable_reason(r, timeout_s)
        for r in read.results
        if r.outcome is not ReadOutcome.END
    }
    kept = [record for topic, partition, record in read_records if (topic, partition) not in failed]
    return kept, [
        UnreadablePartition(name, number, reason) for (name, number), reason in sorted(failed.items())
    ]


def alias_from_topic(pattern: re.Pattern[str], topic: str) -> str:
    """The alias a topic's name carries: ``pattern``'s first group, "" when it does not match, as
    bronze's ``regexp_extract`` gives it (offsetlake.pipeline.landing ``alias_from_topic``)."""
    match = pattern.search(topic)
    return match.group(1) if match else ""


def unreadable_reason(result: PartitionRead, timeout_s: float) -> str:
    """Why a partition was not read to its end, as the failover's report says it."""
    if result.outcome is not ReadOutcome.STALLED:
        return result.error or result.outcome.value
    stalled = f"no record and no end of the log for {timeout_s:g}s"
    return f"{stalled} (last error: {result.error})" if result.error else stalled
