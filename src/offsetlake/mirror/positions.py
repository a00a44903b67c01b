"""Positions in Kafka as every layer names them: a committed offset and a partition's log bounds.

Pure value types, shared by the Kafka access layer (which reads them), the planner (which reasons
about them) and the simulator, so there is one definition of each.
"""

from __future__ import annotations

from dataclasses import dataclass

GroupPartition = tuple[str, str, int]
"""(consumer group, topic, partition)."""
TopicPartitionKey = tuple[str, int]
"""(topic, partition)."""


@dataclass(frozen=True)
class CommittedOffset:
    """A group's committed position on one partition (the next record it reads) and its metadata."""

    offset: int
    metadata: str = ""


@dataclass(frozen=True)
class LogBounds:
    """A partition's log start offset and log end offset (the next offset to be written)."""

    log_start: int
    log_end: int
