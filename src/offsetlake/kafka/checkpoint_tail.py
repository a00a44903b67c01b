"""Read MM2's checkpoint records the pipeline has not ingested yet, straight from the target.

A failover needs the newest checkpoints, and with the source cluster gone they are all a pipeline
update could add. Reading them here takes one consumer and a few round trips instead of a Spark
start-up and a streaming update. The consumer is assigned its partitions (it never joins or commits
to a group) from gold's high-water mark to the log end: it stops on librdkafka's partition-EOF
event, which comes from the fetch response, so a wrong ListOffsets answer (Tansu) cannot cut the
read short. Records decode with the pure codec the pipeline's Spark decoder is held equal to.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from confluent_kafka import OFFSET_BEGINNING, KafkaError, Message, TopicPartition

from offsetlake.codecs.mm2 import Checkpoint, decode_checkpoint
from offsetlake.errors import ExternalError
from offsetlake.kafka import clients
from offsetlake.kafka.admin import read_metadata
from offsetlake.kafka.range_reader import reader_consumer_config
from offsetlake.mirror.policy import ReplicationPolicy

_POLL_SLICE_S = 0.5
_BATCH = 10_000


class CheckpointTailError(ExternalError):
    """The target did not answer, or stopped answering, while its checkpoint topics were read."""


@dataclass(frozen=True)
class TailRecord:
    """One checkpoint record past gold's high-water mark: where it is and what it says."""

    source_cluster: str
    topic: str
    partition: int
    offset: int
    timestamp: datetime
    checkpoint: Checkpoint | None
    error: str | None = None
    """Why the record could not be decoded (then ``checkpoint`` is None): it is not applied."""


@dataclass(frozen=True)
class CheckpointTail:
    records: tuple[TailRecord, ...]
    topics: tuple[str, ...]
    """The checkpoint topics found on the target."""
    seconds: float


def read_checkpoint_tail(
    config: Mapping[str, str],
    policy: ReplicationPolicy,
    positions: Mapping[tuple[str, int], int],
    *,
    timeout_s: float,
) -> CheckpointTail:
    """Every record of the target's checkpoint topics from ``positions`` (per topic-partition, the
    next offset gold has not ingested; absent: from the log start) to the log end. Bounded: a target
    that stops answering for ``timeout_s`` raises CheckpointTailError."""
    started = time.monotonic()
    pattern = re.compile(policy.checkpoints_topic_pattern())
    with clients.admin(config) as admin:
        try:
            metadata = read_metadata(admin, timeout_s=timeout_s)
        except Exception as error:
            raise CheckpointTailError(f"cannot list the target's topics: {error}") from error
    partitions = sorted(
        (name, partition)
        for name, topic in metadata.topics.items()
        if pattern.match(name)
        for partition in topic.partitions
    )
    if not partitions:
        return CheckpointTail((), (), time.monotonic() - started)
    records = _read(config, pattern, partitions, positions, timeout_s)
    topics = tuple(sorted({name for name, _ in partitions}))
    return CheckpointTail(tuple(records), topics, time.monotonic() - started)


def _read(
    config: Mapping[str, str],
    pattern: re.Pattern[str],
    partitions: list[tuple[str, int]],
    positions: Mapping[tuple[str, int], int],
    timeout_s: float,
) -> list[TailRecord]:
    assignment = [
        TopicPartition(name, partition, positions.get((name, partition), OFFSET_BEGINNING))
        for name, partition in partitions
    ]
    unfinished = set(partitions)
    records: list[TailRecord] = []
    with clients.consumer(reader_consumer_config(config, fail_on_data_loss=False)) as consumer:
        consumer.assign(assignment)
        deadline = time.monotonic() + timeout_s
        while unfinished:
            if time.monotonic() > deadline:
                names = ", ".join(f"{name}-{partition}" for name, partition in sorted(unfinished))
                raise CheckpointTailError(f"no progress for {timeout_s:.0f}s reading {names}")
            for message in consumer.consume(num_messages=_BATCH, timeout=_POLL_SLICE_S):
                error = message.error()
                key = (message.topic(), message.partition())
                if error is None:
                    deadline = time.monotonic() + timeout_s
                    records.append(_record(pattern, message))
                elif error.code() == KafkaError._PARTITION_EOF:
                    unfinished.discard(key)
                elif error.fatal() or not error.retriable():
                    raise CheckpointTailError(f"reading {key[0]}-{key[1]} failed: {error.str()}")
    return records


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
