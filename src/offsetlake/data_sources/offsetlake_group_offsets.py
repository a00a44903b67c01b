"""PySpark Python data source ``offsetlake_group_offsets``: the source cluster's committed group offsets.

Serves kafka/group_offsets.py snapshots: one per batch read, one per micro-batch when streamed, so
a streaming table keeps the snapshot history. Groups are chosen like MM2's ``DefaultGroupFilter``
(``groups.include`` / ``groups.exclude``: :mod:`offsetlake.mirror.filters`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType, TimestampType

from offsetlake.data_sources.options import (
    lower_names,
    parse_on_unreachable,
    parse_timeout_s,
    require_bootstrap_servers,
)
from offsetlake.data_sources.spark_compat import ReadLimit, SupportsTriggerAvailableNow
from offsetlake.kafka import admin as kafka_admin
from offsetlake.kafka.client_config import kafka_options_to_librdkafka
from offsetlake.kafka.group_offsets import snapshot_group_offsets
from offsetlake.mirror.filters import DEFAULT_GROUPS_EXCLUDE, DEFAULT_GROUPS_INCLUDE, group_filter

_LOG = logging.getLogger("offsetlake.kafka")

GROUP_OFFSETS_SOURCE_NAME = "offsetlake_group_offsets"

GROUP_OFFSETS_SCHEMA = StructType(
    [
        StructField("consumer_group", StringType()),
        StructField("group_state", StringType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("committed_offset", LongType()),
        StructField("metadata", StringType()),
        StructField("snapshot_time", TimestampType()),
    ]
)
# The same columns as Arrow, built with pyarrow itself (see offsetlake_kafka.KAFKA_ARROW_SCHEMA).
GROUP_OFFSETS_ARROW_SCHEMA = pa.schema(
    [
        pa.field("consumer_group", pa.string()),
        pa.field("group_state", pa.string()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("committed_offset", pa.int64()),
        pa.field("metadata", pa.string()),
        pa.field("snapshot_time", pa.timestamp("us", tz="UTC")),
    ]
)


@dataclass(frozen=True)
class GroupSnapshotOptions:
    client_config: Mapping[str, str] = field(repr=False)  # may hold credentials
    include: str
    exclude: str | None
    timeout_s: float
    skip_unreachable: bool = False

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> GroupSnapshotOptions:
        lowered = lower_names(options)
        require_bootstrap_servers(lowered)
        include = lowered.get("groups.include") or DEFAULT_GROUPS_INCLUDE
        exclude = lowered.get("groups.exclude", DEFAULT_GROUPS_EXCLUDE) or None
        group_filter(include, exclude)  # validate the regexes on the driver, before any task runs
        return cls(
            kafka_options_to_librdkafka(lowered),
            include,
            exclude,
            parse_timeout_s(lowered),
            skip_unreachable=parse_on_unreachable(lowered),
        )

    def snapshot_partition(self) -> SnapshotPartition:
        """A fresh snapshot, taken here (the driver), carried to the executor as Arrow IPC bytes.

        Executor-side ``read()`` runs in a Python worker like a UDF, and Databricks documents that
        UDFs on serverless compute cannot reach the internet and says nothing of data sources; the
        driver can reach the clusters the pipeline reads. So no source-cluster connection is opened
        in ``read()``: the rows travel in the partition (as ``offsetlake_log_offsets`` does).
        """
        rows = snapshot_group_offsets(self.client_config, self.include, self.exclude, self.timeout_s)
        columns = {field.name: [getattr(row, field.name) for row in rows] for field in GROUP_OFFSETS_SCHEMA}
        batch = pa.RecordBatch.from_pydict(columns, schema=GROUP_OFFSETS_ARROW_SCHEMA)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, GROUP_OFFSETS_ARROW_SCHEMA) as writer:
            writer.write_batch(batch)
        return SnapshotPartition(sink.getvalue().to_pybytes(), batch.num_rows)


class SnapshotSource(Protocol):
    """What a snapshot-per-micro-batch stream needs: the cluster it probes and the snapshot it takes
    (GroupSnapshotOptions; the K2K tracing source's options, which search each snapshot too)."""

    @property
    def client_config(self) -> Mapping[str, str]: ...

    @property
    def timeout_s(self) -> float: ...

    @property
    def skip_unreachable(self) -> bool: ...

    def snapshot_partition(self) -> SnapshotPartition: ...


@dataclass(frozen=True)
class SnapshotPartition(InputPartition):
    arrow_ipc: bytes = field(repr=False)
    rows: int

    def batches(self) -> Iterator[pa.RecordBatch]:
        """The snapshot's rows (nothing when no group had offsets)."""
        if self.rows:
            yield from pa.ipc.open_stream(self.arrow_ipc)


class GroupOffsetsBatchReader(DataSourceReader):
    """One snapshot, taken when planned (on the driver), of any SnapshotSource."""

    def __init__(self, options: SnapshotSource) -> None:
        self.options = options

    def partitions(self) -> list[InputPartition]:
        return [self.options.snapshot_partition()]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, SnapshotPartition)
        return partition.batches()


class GroupOffsetsStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """One new snapshot per micro-batch, so a streaming table keeps the snapshot history.

    The offset is just the snapshot's request time in epoch ms; the data is whatever the groups
    have committed when the micro-batch is planned (``partitions``, on the driver).
    """

    def __init__(self, options: SnapshotSource) -> None:
        self.options = options
        self._available_now_target: int | None = None
        self._unreachable = False

    def initialOffset(self) -> dict[str, int]:  # noqa: N802 (Spark API)
        return {"snapshot_ms": 0}

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802 (Spark API)
        self._available_now_target = _now_ms()

    def latestOffset(  # noqa: N802 (Spark API)
        self, start: dict[str, int] | None = None, limit: ReadLimit | None = None
    ) -> dict[str, int]:
        """The offset is a time, so moving it is always safe: without ``start`` (PySpark 4.0) an
        unreachable cluster gives a new offset whose batch has no partition (see partitions)."""
        latest = self._available_now_target if self._available_now_target is not None else _now_ms()
        if self.options.skip_unreachable and not self._answers() and start is not None:
            return start  # no snapshot this update
        return {"snapshot_ms": max(latest, start["snapshot_ms"] if start else 0)}

    def _answers(self) -> bool:
        """Probe once per reader: a dead source costs one timeout per update, then is skipped."""
        if self._unreachable:
            return False
        probe = kafka_admin.probe_cluster(self.options.client_config, timeout_s=self.options.timeout_s)
        if not probe.reachable:
            self._unreachable = True
            _LOG.warning(
                "cluster %s did not answer (%s): no group snapshot from it this update",
                self.options.client_config.get("bootstrap.servers"),
                probe.error,
            )
        return probe.reachable

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        """The snapshot is taken here, on the driver (see GroupSnapshotOptions.snapshot_partition)."""
        if end["snapshot_ms"] <= start["snapshot_ms"] or self._unreachable:
            return []
        return [self.options.snapshot_partition()]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, SnapshotPartition)
        return partition.batches()


class GroupOffsetsDataSource(DataSource):
    """``spark.read`` / ``spark.readStream`` ``.format("offsetlake_group_offsets")``."""

    @classmethod
    def name(cls) -> str:
        return GROUP_OFFSETS_SOURCE_NAME

    def schema(self) -> StructType:
        return GROUP_OFFSETS_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return GroupOffsetsBatchReader(GroupSnapshotOptions.parse(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802 (Spark API)
        return GroupOffsetsStreamReader(GroupSnapshotOptions.parse(self.options))


def _now_ms() -> int:
    return time.time_ns() // 1_000_000
