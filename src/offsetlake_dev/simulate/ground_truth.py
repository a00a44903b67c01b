"""Where every source record landed, and whether a resumed consumer skipped any of them.

The simulator knows each record's source and target position; a consumer on the target that
resumes from a translated offset is judged against this, not against another translation. A
committed source offset is a *position*: the group has processed every record below it, so the
first record it still owes is the first replicated source record at or after that offset (upstream
gaps and filtered records have no target copy and are owed by nobody). Resuming at or before that
record's target offset loses nothing; the replicated records read before it are re-reads.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field

RECORD_ID_SEPARATOR = ":"


def record_id(topic: str, partition: int, sequence: int) -> str:
    """The value a simulated record carries, unique per source record, e.g. ``orders:p0:r42``."""
    return f"{topic}{RECORD_ID_SEPARATOR}p{partition}{RECORD_ID_SEPARATOR}r{sequence}"


@dataclass(frozen=True)
class ReplicatedRecord:
    """One source record and the position MM2 wrote it at on the target."""

    record_id: str
    source_topic: str
    source_partition: int
    source_offset: int
    target_topic: str
    target_partition: int
    target_offset: int


@dataclass(frozen=True)
class ResumeAssessment:
    """What a consumer resuming at ``resumed_at`` on the target read, judged against the ground truth."""

    source_topic: str
    source_partition: int
    committed_upstream_offset: int
    resumed_at: int
    first_unprocessed: ReplicatedRecord | None
    records_read: int
    re_reads: int
    skipped: tuple[str, ...]
    """Record ids the group still owed that the consumer did not read (must be empty)."""

    @property
    def ok(self) -> bool:
        return not self.skipped


@dataclass
class _PartitionTruth:
    source_offsets: list[int] = field(default_factory=list)
    records: list[ReplicatedRecord] = field(default_factory=list)


class GroundTruth:
    """Every replicated record, indexed by id and by source partition in source-offset order."""

    def __init__(self) -> None:
        self._by_id: dict[str, ReplicatedRecord] = {}
        self._by_source_partition: dict[tuple[str, int], _PartitionTruth] = {}

    def __len__(self) -> int:
        return len(self._by_id)

    def add(self, record: ReplicatedRecord) -> None:
        if record.record_id in self._by_id:
            raise ValueError(
                f"record {record.record_id} was already replicated to {self._by_id[record.record_id]}"
            )
        truth = self._by_source_partition.setdefault(
            (record.source_topic, record.source_partition), _PartitionTruth()
        )
        if truth.records and (
            record.source_offset <= truth.source_offsets[-1]
            or record.target_offset <= truth.records[-1].target_offset
        ):
            raise ValueError(
                f"record {record.record_id} (source offset {record.source_offset}, target offset "
                f"{record.target_offset}) does not follow {truth.records[-1]}: replication keeps order"
            )
        truth.source_offsets.append(record.source_offset)
        truth.records.append(record)
        self._by_id[record.record_id] = record

    def get(self, record_id_: str) -> ReplicatedRecord | None:
        return self._by_id.get(record_id_)

    def records(self, source_topic: str, source_partition: int) -> list[ReplicatedRecord]:
        truth = self._by_source_partition.get((source_topic, source_partition))
        return list(truth.records) if truth else []

    def first_unprocessed(
        self, source_topic: str, source_partition: int, committed_upstream_offset: int
    ) -> ReplicatedRecord | None:
        """The first replicated record at or after the committed position (None: nothing owed)."""
        truth = self._by_source_partition.get((source_topic, source_partition))
        if truth is None:
            return None
        index = bisect.bisect_left(truth.source_offsets, committed_upstream_offset)
        return truth.records[index] if index < len(truth.records) else None

    def assess_resume(
        self,
        source_topic: str,
        source_partition: int,
        committed_upstream_offset: int,
        resumed_at: int,
        values_read: Sequence[str],
    ) -> ResumeAssessment:
        """Judge the values a consumer read on the target from ``resumed_at`` to the end of the partition.

        Values that are not record ids of this partition (records already on the target before
        replication) count as read but are neither re-reads nor owed records.
        """
        if committed_upstream_offset < 0:
            raise ValueError(f"committed_upstream_offset must be >= 0, got {committed_upstream_offset}")
        truth = self._by_source_partition.get((source_topic, source_partition), _PartitionTruth())
        owed_from = bisect.bisect_left(truth.source_offsets, committed_upstream_offset)
        owed = [record.record_id for record in truth.records[owed_from:]]
        read = set(values_read)
        re_reads = sum(
            1
            for value in values_read
            if (record := self._by_id.get(value)) is not None
            and (record.source_topic, record.source_partition) == (source_topic, source_partition)
            and record.source_offset < committed_upstream_offset
        )
        return ResumeAssessment(
            source_topic=source_topic,
            source_partition=source_partition,
            committed_upstream_offset=committed_upstream_offset,
            resumed_at=resumed_at,
            first_unprocessed=truth.records[owed_from] if owed_from < len(truth.records) else None,
            records_read=len(values_read),
            re_reads=re_reads,
            skipped=tuple(record_id_ for record_id_ in owed if record_id_ not in read),
        )
