"""What an MM2 offset reset does to each stored offset, decided without Kafka or Spark.

Connect and compaction match a key by its bytes, so a tombstone must reuse the exact key bytes read
from the topic; and Connect's offset producer is a Java producer with the default partitioner
(``KafkaOffsetBackingStore``), so a key lives in ``toPositive(murmur2(key)) % partitions``
(``kafka/java_partitioner.py``). A key found in any other partition is not touched: a tombstone in
the partition Java would choose would not delete it.

Also planned here: the rows of a reset through the Connect REST API (the worker resets, we list
and select), and the truncation of MM2's offset-syncs topic (DeleteRecords up to each log end).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TYPE_CHECKING

from offsetlake.codecs import CodecError
from offsetlake.codecs.connect import ConnectOffset, decode_connect_offset
from offsetlake.kafka.java_partitioner import java_partition
from offsetlake.mirror.filters import NameFilter

if TYPE_CHECKING:
    from offsetlake.kafka.connect_rest import StoredOffset
    from offsetlake.mirror.positions import LogBounds


class ResetAction(StrEnum):
    TOMBSTONE = "tombstone"
    ALREADY_RESET = "already_reset"
    """The key's newest record is a tombstone already: nothing to do."""
    SKIP_WRONG_PARTITION = "skip_wrong_partition"
    """The key is not in the partition Connect would use: a tombstone there would not delete it."""
    RESET_VIA_REST = "reset_via_rest"
    """Reset by the Connect worker (REST offsets API), not by a tombstone of ours."""


TRUNCATION_ACTION = "delete_records"
"""The audit's action for a partition of the offset-syncs topic."""


def compact_json(value: object) -> str:
    """A source partition or offset as one compact JSON text (printed and audited)."""
    return json.dumps(value, separators=(",", ":"))


def _topic_filter(topics: str | None) -> NameFilter | None:
    return NameFilter.compile(topics, None, include_option="--topics") if topics else None


def _selected(partition: Mapping[str, object], topic_filter: NameFilter | None) -> bool:
    """No filter, or the source partition's ``topic`` is a string that fully matches it."""
    if topic_filter is None:
        return True
    topic = partition.get("topic")
    return isinstance(topic, str) and topic_filter.matches(topic)


@dataclass(frozen=True)
class StoredKey:
    """The newest record of one key in one partition of the offsets topic."""

    partition: int
    kafka_offset: int
    key: bytes
    value: bytes | None


@dataclass(frozen=True)
class ResetRow:
    stored: StoredKey
    record: ConnectOffset
    java_partition: int
    action: ResetAction

    @property
    def source_partition(self) -> Mapping[str, object]:
        return self.record.partition

    @property
    def source_partition_json(self) -> str:
        return compact_json(dict(self.source_partition))

    @property
    def stored_offset_json(self) -> str | None:
        return None if self.record.offset is None else compact_json(dict(self.record.offset))


def plan_reset(
    stored: Iterable[StoredKey], partitions: int, connector: str, topics: str | None
) -> list[ResetRow]:
    """Every stored key of ``connector`` (whose source partition's ``topic`` fully matches
    ``topics`` when given) and what to do with it. Keys of other connectors, and records that do
    not decode, are never touched."""
    topic_filter = _topic_filter(topics)
    rows: list[ResetRow] = []
    for entry in stored:
        try:
            record = decode_connect_offset(entry.key, entry.value)
        except CodecError:
            continue
        if record.connector != connector or not _selected(record.partition, topic_filter):
            continue
        expected = java_partition(entry.key, partitions)
        if record.offset is None:
            action = ResetAction.ALREADY_RESET
        elif expected != entry.partition:
            action = ResetAction.SKIP_WRONG_PARTITION
        else:
            action = ResetAction.TOMBSTONE
        rows.append(ResetRow(entry, record, expected, action))
    return rows


def to_tombstone(rows: Iterable[ResetRow]) -> list[ResetRow]:
    """The rows a tombstone is written for."""
    return [row for row in rows if row.action is ResetAction.TOMBSTONE]


def verify_tombstones(stored_after: Iterable[StoredKey], rows: Sequence[ResetRow]) -> list[ResetRow]:
    """The TOMBSTONE rows whose key's newest record is still not a tombstone (empty: verified)."""
    newest = {(entry.partition, entry.key): entry for entry in stored_after}
    return [
        row
        for row in to_tombstone(rows)
        if newest.get((row.java_partition, row.stored.key), row.stored).value is not None
    ]


@dataclass(frozen=True)
class RestResetRow:
    """One source partition of the connector as the worker lists it, and what the reset does."""

    stored: StoredOffset
    action: ResetAction

    @property
    def source_partition_json(self) -> str:
        return compact_json(self.stored.partition)

    @property
    def stored_offset_json(self) -> str | None:
        return None if self.stored.offset is None else compact_json(self.stored.offset)


def plan_rest_reset(stored: Iterable[StoredOffset], topics: str | None) -> list[RestResetRow]:
    """The worker's listed partitions that ``topics`` selects: reset by it, or reset already."""
    topic_filter = _topic_filter(topics)
    return [
        RestResetRow(entry, ResetAction.ALREADY_RESET if entry.offset is None else ResetAction.RESET_VIA_REST)
        for entry in stored
        if _selected(entry.partition, topic_filter)
    ]


def rest_partitions_to_reset(rows: Iterable[RestResetRow]) -> list[Mapping[str, object]]:
    """The source partitions the worker is asked to reset (a null offset each)."""
    return [row.stored.partition for row in rows if row.action is ResetAction.RESET_VIA_REST]


def verify_rest_reset(
    listed_after: Iterable[StoredOffset], rows: Sequence[RestResetRow]
) -> list[RestResetRow]:
    """The RESET_VIA_REST rows whose partition the worker still lists with an offset (empty: verified)."""
    remaining = {_partition_key(entry.partition) for entry in listed_after if entry.offset is not None}
    return [
        row
        for row in rows
        if row.action is ResetAction.RESET_VIA_REST and _partition_key(row.stored.partition) in remaining
    ]


def _partition_key(partition: Mapping[str, object]) -> str:
    return json.dumps(dict(partition), sort_keys=True)


@dataclass(frozen=True)
class Truncation:
    """One partition of the offset-syncs topic: its log before, and the log start after (None: dry run)."""

    partition: int
    log_start: int
    log_end: int
    log_start_after: int | None = None

    @property
    def records(self) -> int:
        """Records in the partition before: deleted, or to be deleted in a dry run."""
        return self.log_end - self.log_start

    @property
    def verified(self) -> bool:
        return self.log_start_after is not None and self.log_start_after >= self.log_end


def plan_truncation(bounds: Mapping[int, LogBounds]) -> list[Truncation]:
    """Every partition of the offset-syncs topic, by partition, to be emptied up to its log end."""
    return [Truncation(p, bounds[p].log_start, bounds[p].log_end) for p in sorted(bounds)]


def delete_before(planned: Iterable[Truncation]) -> dict[int, int]:
    """The DeleteRecords request: per partition, every record below its log end goes."""
    return {row.partition: row.log_end for row in planned}


def truncated(planned: Iterable[Truncation], log_starts_after: Mapping[int, int]) -> list[Truncation]:
    """The planned partitions with the log start DeleteRecords reported for each."""
    return [replace(row, log_start_after=log_starts_after[row.partition]) for row in planned]


def still_holding_records(rows: Iterable[Truncation]) -> list[int]:
    """The partitions a truncation did not empty (call on executed rows only)."""
    return [row.partition for row in rows if not row.verified]
