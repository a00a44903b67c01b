"""``offsetlake_log_offsets``: each source topic-partition's log start and log end, once per update.

Replication lag needs the source's head: MM2's stored position says how far it got, the log end
says how far it had to go. The snapshot runs on the driver when a micro-batch is planned (like
``offsetlake_cluster_health``) and its rows travel in the input partition, so a dead source is
asked once per update and adds no rows (``onUnreachable=skip``).

Topics are chosen like MM2's ``DefaultTopicFilter`` (``topics`` / ``topics.exclude``, full
match); the log end honours ``isolation.level`` like the record reader does.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pyarrow as pa
from confluent_kafka.admin import AdminClient, OffsetSpec
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType, TimestampType

from offsetlake.data_sources.spark_compat import SupportsTriggerAvailableNow
from offsetlake.errors import InvalidValueError
from offsetlake.kafka import admin as kafka_admin
from offsetlake.kafka.admin import KafkaAdminError
from offsetlake.kafka.client_config import kafka_options_to_librdkafka
from offsetlake.kafka.client_logging import with_client_logger
from offsetlake.kafka.offset_ranges import OffsetOptionError
from offsetlake.mirror.policy import DEFAULT_TOPICS_EXCLUDE

_LOG = logging.getLogger("offsetlake.kafka")

LOG_OFFSETS_SOURCE_NAME = "offsetlake_log_offsets"
DEFAULT_TIMEOUT_MS = 30_000

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


def select_topics(topics: Mapping[str, int], include: str, exclude: str) -> list[str]:
    """Topics that fully match ``include`` and not ``exclude`` (MM2's topic filter), sorted."""
    include_re = _compile(include, "topics.include")
    exclude_re = _compile(exclude, "topics.exclude") if exclude else None
    return sorted(
        topic
        for topic in topics
        if include_re.fullmatch(topic) and not (exclude_re and exclude_re.fullmatch(topic))
    )


def snapshot_log_offsets(
    config: Mapping[str, str], include: str, exclude: str, timeout_s: float
) -> list[dict[str, object]]:
    """One row per selected partition: log start, log end, and when they were listed."""
    snapshot_time = datetime.now(UTC)
    admin = AdminClient(with_client_logger(config))
    counts = kafka_admin.list_partition_counts(admin, timeout_s=timeout_s)
    keys = [(topic, p) for topic in select_topics(counts, include, exclude) for p in range(counts[topic])]
    read_committed = config.get("isolation.level") == "read_committed"
    starts, ends = (
        kafka_admin.list_log_offsets(admin, keys, spec, timeout_s=timeout_s, read_committed=read_committed)
        for spec in (OffsetSpec.earliest(), OffsetSpec.latest())
    )
    return [
        {
            "topic": topic,
            "partition": partition,
            "log_start_offset": starts[(topic, partition)],
            "log_end_offset": ends[(topic, partition)],
            "snapshot_time": snapshot_time,
        }
        for topic, partition in keys
    ]


@dataclass(frozen=True)
class LogOffsetsOptions:
    client_config: Mapping[str, str] = field(repr=False)  # may hold credentials
    include: str
    exclude: str
    timeout_s: float
    skip_unreachable: bool

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> LogOffsetsOptions:
        lowered = {name.lower(): value for name, value in options.items()}
        if not lowered.get("kafka.bootstrap.servers"):
            raise OffsetOptionError("option kafka.bootstrap.servers is required")
        include = lowered.get("topics.include") or ".*"
        exclude = lowered.get("topics.exclude", DEFAULT_TOPICS_EXCLUDE)
        select_topics({}, include, exclude)  # validate the regexes on the driver
        try:
            timeout_ms = int(lowered.get("timeoutms", DEFAULT_TIMEOUT_MS))
        except ValueError:
            raise OffsetOptionError("option timeoutMs must be a whole number") from None
        on_unreachable = lowered.get("onunreachable", "fail").strip().lower()
        if on_unreachable not in ("fail", "skip"):
            raise OffsetOptionError(f"onUnreachable must be fail or skip, not {on_unreachable!r}")
        return cls(
            kafka_options_to_librdkafka(lowered),
            include,
            exclude,
            timeout_ms / 1000,
            on_unreachable == "skip",
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


def _compile(pattern: str, option: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as error:
        raise InvalidValueError(f"{option} {pattern!r} is not a valid regex: {error}") from None
