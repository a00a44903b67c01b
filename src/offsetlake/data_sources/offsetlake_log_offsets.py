"""PySpark Python data source ``offsetlake_log_offsets``: each source topic-partition's log start and
log end, once per update.

Serves kafka/log_offsets.py snapshots. The snapshot runs on the driver when a micro-batch is
planned (like ``offsetlake_cluster_health``) and its rows travel in the input partition, so a dead
source is asked once per update and adds no rows (``onUnreachable=skip``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType, TimestampType

from offsetlake.data_sources.options import (
    lower_names,
    parse_on_unreachable,
    parse_timeout_s,
    require_bootstrap_servers,
)
from offsetlake.data_sources.spark_compat import SupportsTriggerAvailableNow
from offsetlake.kafka.admin import KafkaAdminError
from offsetlake.kafka.client_config import kafka_options_to_librdkafka
from offsetlake.kafka.log_offsets import snapshot_log_offsets
from offsetlake.mirror.filters import DEFAULT_TOPICS_INCLUDE, topic_filter
from offsetlake.mirror.policy import DEFAULT_TOPICS_EXCLUDE

_LOG = logging.getLogger("offsetlake.kafka")

LOG_OFFSETS_SOURCE_NAME = "offsetlake_log_offsets"

LOG_OFFSETS_SCHEMA = StructType(
    [
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("log_start_offset", LongType()),
        StructField("log_end_offset", LongType()),
        StructField("snapshot_time", TimestampType()),
    ]
)
_ARROW_SCHEMA = pa.schema(
    [
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("log_start_offset", pa.int64()),
        pa.field("log_end_offset", pa.int64()),
        pa.field("snapshot_time", pa.timestamp("us", tz="UTC")),
    ]
)


@dataclass(frozen=True)
class LogOffsetsOptions:
    client_config: Mapping[str, str] = field(repr=False)  # may hold credentials
    include: str
    exclude: str
    timeout_s: float
    skip_unreachable: bool

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> LogOffsetsOptions:
        lowered = lower_names(options)
        require_bootstrap_servers(lowered)
        include = lowered.get("topics.include") or DEFAULT_TOPICS_INCLUDE
        exclude = lowered.get("topics.exclude", DEFAULT_TOPICS_EXCLUDE)
        topic_filter(include, exclude)  # validate the regexes on the driver
        return cls(
            kafka_options_to_librdkafka(lowered),
            include,
            exclude,
            parse_timeout_s(lowered),
            parse_on_unreachable(lowered),
        )

    def snapshot(self) -> list[dict[str, object]]:
        try:
            return snapshot_log_offsets(self.client_config, self.include, self.exclude, self.timeout_s)
        except KafkaAdminError as error:
            if not self.skip_unreachable:
                raise
            _LOG.warning(
                "cluster %s did not answer (%s): no log offsets from it this update",
                self.client_config.get("bootstrap.servers"),
                error,
            )
            return []


@dataclass(frozen=True)
class LogOffsetsPartition(InputPartition):
    rows: list[dict[str, object]]


def _batch(rows: list[dict[str, object]]) -> Iterator[pa.RecordBatch]:
    if rows:
        yield pa.RecordBatch.from_pylist(rows, schema=_ARROW_SCHEMA)


class LogOffsetsBatchReader(DataSourceReader):
    def __init__(self, options: LogOffsetsOptions) -> None:
        self.options = options

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _batch(self.options.snapshot())


class LogOffsetsStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """One snapshot per query run (an update): its offset is the snapshot's time in epoch ms."""

    def __init__(self, options: LogOffsetsOptions) -> None:
        self.options = options
        self._rows: list[dict[str, object]] | None = None
        self._offset: dict[str, int] | None = None

    def initialOffset(self) -> dict[str, int]:  # noqa: N802 (Spark API)
        return {"snapshot_ms": 0}

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802 (Spark API)
        self._snapshot()

    def latestOffset(self, start: dict[str, int] | None = None, *_: object) -> dict[str, int]:  # noqa: N802 (Spark API)
        if self._offset is None:
            previous = start["snapshot_ms"] if start else 0
            rows = self._snapshot()
            if not rows:
                self._offset = {"snapshot_ms": previous}  # nothing this update
            else:
                taken_ms = int(rows[0]["snapshot_time"].timestamp() * 1000)  # type: ignore[attr-defined]
                self._offset = {"snapshot_ms": max(taken_ms, previous + 1)}
        return self._offset

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        if end["snapshot_ms"] <= start["snapshot_ms"]:
            return []
        return [LogOffsetsPartition(self._snapshot())]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, LogOffsetsPartition)
        return _batch(partition.rows)

    def _snapshot(self) -> list[dict[str, object]]:
        if self._rows is None:
            self._rows = self.options.snapshot()
        return self._rows


class LogOffsetsDataSource(DataSource):
    """``spark.read`` / ``spark.readStream`` ``.format("offsetlake_log_offsets")``."""

    @classmethod
    def name(cls) -> str:
        return LOG_OFFSETS_SOURCE_NAME

    def schema(self) -> StructType:
        return LOG_OFFSETS_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return LogOffsetsBatchReader(LogOffsetsOptions.parse(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802 (Spark API)
        return LogOffsetsStreamReader(LogOffsetsOptions.parse(self.options))
