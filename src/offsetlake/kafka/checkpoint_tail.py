"""Read every MM2 checkpoint record the target still holds, from each checkpoints topic's log start.

A failover needs the newest checkpoints, and with the source cluster gone they are all a pipeline
update could add. No high-water mark decides where to start: bronze commits before gold's views,
so the records between what gold consumed and what bronze holds would be in neither. MM2 creates
each checkpoints topic single-partition and compacted, so reading it whole is cheap and it holds
the last checkpoint of every (group, topic, partition). Reading here takes one consumer and a few
round trips instead of a Spark start-up and a streaming update. Each partition is read from its
log start to its end (partition EOF) by :mod:`offsetlake.kafka.read_to_end`, so a wrong ListOffsets
answer (Tansu) cannot cut the read short. A partition that cannot be read to its end (an error, or
no progress for the timeout) is left out whole, with its reason: part of a partition could be
older than gold. Records decode with the pure codec the pipeline's Spark decoder is held equal to.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from confluent_kafka import OFFSET_BEGINNING, KafkaError, Message

from offsetlake.codecs.mm2 import Checkpoint, decode_checkpoint
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
from offsetlake.mirror.policy import ReplicationPolicy


class CheckpointTailError(ExternalError):
    """The target's topics could not be listed: nothing about its checkpoints is known."""


@dataclass(frozen=True)
class TailRecord:
    """One checkpoint record on the target: where it is and what it says."""

    source_cluster: str
    topic: str
    partition: int
    offset: int
    timestamp: datetime
    checkpoint: Checkpoint | None
    error: str | None = None
    """Why the record could not be decoded (then ``checkpoint`` is None): it is not applied."""


@dataclass(frozen=True)
class UnreadablePartition:
    """A checkpoints partition the tail could not read to its end: none of its records are used."""

    topic: str
    partition: int
    reason: str


@dataclass(frozen=True)
class CheckpointTail:
    records: tuple[TailRecord, ...]
    topics: tuple[str, ...]
    """The checkpoint topics found on the target (the policy's names)."""
    seconds: float
    unreadable: tuple[UnreadablePartition, ...] = ()


def read_checkpoint_tail(
    config: Mapping[str, str], policy: ReplicationPolicy, *, timeout_s: float
) -> CheckpointTail:
    """Every record of the target's checkpoint topics (``policy`` names them), log start to log end.

    Bounded: a partition that gives no record and no end for ``timeout_s``, or fails, is reported in
    ``unreadable``; only a target whose topics cannot be listed raises CheckpointTailError."""
    started = time.monotonic()
    pattern = re.compile(policy.checkpoints_topic_pattern())
    with clients.admin(config) as admin:
        try:
            metadata = read_metadata(admin, timeout_s=timeout_s)
        except Exception as error:
            raise CheckpointTailError(f"cannot list the target's topics: {error}") from error
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
    records: list[TailRecord] = []
    if partitions:
        read, failed = _read(config, pattern, partitions, timeout_s)
        records, unreadable = read, [*unreadable, *failed]
    return CheckpointTail(
        tuple(records), tuple(sorted(matching)), time.monotonic() - started, tuple(unreadable)
    )


def _read(
    config: Mapping[str, str], pattern: re.Pattern[str], partitions: list[tuple[str, int]], timeout_s: float
) -> tuple[list[TailRecord], list[UnreadablePartition]]:
    """The records of every partition read to its end, and the partitions that could not be."""
    records: list[TailRecord] = []
    wanted = [PartitionToRead(name, number, OFFSET_BEGINNING) for name, number in partitions]
    with clients.consumer(reader_consumer_config(config, fail_on_data_loss=False)) as consumer:
        read = ReadToEnd(consumer, wanted, timeout_s=timeout_s)
        for batch in read:
            records += (_record(pattern, message) for message in batch)
    failed = {
        (r.topic, r.partition): unreadable_reason(r, timeout_s)
        for r in read.results
        if r.outcome is not ReadOutcome.END
    }
    kept = [record for record in records if (record.topic, record.partition) not in failed]
    return kept, [
        UnreadablePartition(name, number, reason) for (name, number), reason in sorted(failed.items())
    ]


def unreadable_reason(result: PartitionRead, timeout_s: float) -> str:
    """Why a partition was not read to its end, as the failover's report says it."""
    if result.outcome is not ReadOutcome.STALLED:
        return result.error or result.outcome.value
    stalled = f"no record and no end of the log for {timeout_s:g}s"
    return f"{stalled} (last error: {result.error})" if result.error else stalled


def _record(pattern: re.Pattern[str], message: Message) -> TailRecord:
    topic, partition, offset = message.topic(), message.partition(), message.offset()
    match = pattern.match(topic)
    alias = match.group(1) if match else ""
    _, millis = message.timestamp()
    timestamp = datetime.fromtimestamp(millis / 1000, tz=UTC)
    try:
        checkpoint = decode_checkpoint(message.key(), message.value())
    except ValueError as error:
        return TailRecord(alias, topic, partition, offset, timestamp, None, str(error))
    return TailRecord(alias, topic, partition, offset, timestamp, checkpoint)
