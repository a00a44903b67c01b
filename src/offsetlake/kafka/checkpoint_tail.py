"""Read every MM2 checkpoint record the target still holds, from each checkpoints topic's log start.

A failover needs the newest checkpoints, and with the source cluster gone they are all a pipeline
update could add. No high-water mark decides where to start: bronze commits before gold's views,
so the records between what gold consumed and what bronze holds would be in neither. MM2 creates
each checkpoints topic single-partition and compacted, so reading it whole is cheap and it holds
the last checkpoint of every (group, topic, partition). Reading here takes one consumer and a few
round trips instead of a Spark start-up and a streaming update. Each partition is read whole by
:func:`offsetlake.kafka.topic_tail.read_whole_topics`: a partition that cannot be read to its end is
left out whole, with its reason. Records decode with the pure codec the pipeline's Spark decoder is
held equal to.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from confluent_kafka import Message

from offsetlake.codecs.mm2 import Checkpoint, decode_checkpoint
from offsetlake.kafka.topic_tail import (
    TopicTailError,
    UnreadablePartition,
    WholeTopics,
    alias_from_topic,
    read_whole_topics,
)
from offsetlake.mirror.policy import ReplicationPolicy

__all__ = [
    "CheckpointTail",
    "CheckpointTailError",
    "TailRecord",
    "UnreadablePartition",
    "read_checkpoint_tail",
]


class CheckpointTailError(TopicTailError):
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


CheckpointTail = WholeTopics[TailRecord]
"""The checkpoint records and the checkpoints topics found on the target (the policy's names)."""


def read_checkpoint_tail(
    config: Mapping[str, str], policy: ReplicationPolicy, *, timeout_s: float
) -> CheckpointTail:
    """Every record of the target's checkpoint topics (``policy`` names them), log start to log end.

    Bounded: a partition that gives no record and no end for ``timeout_s``, or fails, is reported in
    ``unreadable``; only a target whose topics cannot be listed raises CheckpointTailError."""
    pattern = re.compile(policy.checkpoints_topic_pattern())
    return read_whole_topics(
        config,
        pattern,
        timeout_s=timeout_s,
        decode=lambda message: _record(pattern, message),
        role="target",
        error=CheckpointTailError,
    )


def _record(pattern: re.Pattern[str], message: Message) -> TailRecord:
    topic, partition, offset = message.topic(), message.partition(), message.offset()
    alias = alias_from_topic(pattern, topic)
    _, millis = message.timestamp()
    timestamp = datetime.fromtimestamp(millis / 1000, tz=UTC)
    try:
        checkpoint = decode_checkpoint(message.key(), message.value())
    except ValueError as error:
        return TailRecord(alias, topic, partition, offset, timestamp, None, str(error))
    return TailRecord(alias, topic, partition, offset, timestamp, checkpoint)
