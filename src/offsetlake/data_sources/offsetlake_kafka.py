"""PySpark Python data source ``offsetlake_kafka``: Kafka records, read as Spark's ``kafka`` source does.

Spark's built-in Kafka source is a Maven jar that cannot be loaded everywhere (locally, on some
clusters), so this source reads Kafka through confluent-kafka with the built-in's schema and
option names; the pipeline can switch between the two without touching its transformations.

The driver plans offset ranges from broker metadata (AdminClient: topics, log start/end) and the
pure rules in offset_ranges.py; each Spark task reads one range with range_reader.py. Streaming
progress lives only in Spark's checkpoint as ``{topic: {partition: next_offset}}``: nothing is
ever committed to the user's cluster.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from confluent_kafka.admin import AdminClient, OffsetSpec
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from offsetlake.data_sources.options import (
    lower_names,
    parse_bool,
    parse_on_unreachable,
    parse_positive_int,
    parse_timeout_s,
    require_bootstrap_servers,
)
from offsetlake.data_sources.spark_compat import (
    ADMISSION_CONTROL,
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from offsetlake.kafka import admin as kafka_admin
from offsetlake.kafka import clients
from offsetlake.kafka.admin import KafkaAdminError
from offsetlake.kafka.client_config import kafka_options_to_librdkafka
from offsetlake.kafka.offset_ranges import (
    EARLIEST,
    LATEST,
    OffsetOptionError,
    OffsetRange,
    OffsetsSpec,
    PartitionKey,
    Subscription,
    from_stream_offset,
    next_stream_end,
    plan_batch_ranges,
    plan_stream_ranges,
    report_vanished,
    split_ranges,
    to_stream_offset,
)
from offsetlake.kafka.range_reader import read_offset_range

_LOG = logging.getLogger("offsetlake.kafka")

KAFKA_SOURCE_NAME = "offsetlake_kafka"

# Spark's built-in Kafka source schema with includeHeaders=true (KafkaRecordToRowConverter).
KAFKA_SCHEMA = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
        StructField(
            "headers",
            ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())])),
        ),
    ]
)

# The same columns as Arrow, built with pyarrow itself: PySpark's to_arrow_schema is internal and its
# keywords differ between versions. tests/unit/test_spark_source.py holds the two schemas equal.
KAFKA_ARROW_SCHEMA = pa.schema(
    [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
        pa.field("timestampType", pa.int32()),
        pa.field("headers", pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
    ]
)

# A range of more records is split between several Spark tasks, so that one partition's backlog is
# read by as many readers as there are cores: a 1,000,000-record checkpoints partition on 2 cores,
# bronze_checkpoints 29 -> 20 s, the update 113.8 -> 102.1 s (one run each, benchmarks/README.md).
DEFAULT_MAX_RECORDS_PER_PARTITION = 250_000
DEFAULT_POLL_TIMEOUT_MS = 120_000  # Spark's kafkaConsumer.pollTimeoutMs default (spark.network.timeout)

# Settings the reader owns: it never joins a group, commits, or resets on its own.
_FORBIDDEN_KAFKA_OPTIONS = {
    "kafka.group.id": "the reader never joins a consumer group; remove it",
    "kafka.enable.auto.commit": "the reader never commits offsets; progress lives in the checkpoint",
    "kafka.auto.offset.reset": "use startingOffsets and failOnDataLoss instead",
    "kafka.enable.partition.eof": "the reader needs partition-EOF events to end ranges",
}


@dataclass(frozen=True)
class KafkaReadOptions:
    """The source options, parsed and validated once on the driver (picklable for workers)."""

    client_config: Mapping[str, str] = field(repr=False)  # may hold credentials
    subscription: Subscription
    starting: OffsetsSpec
    ending: OffsetsSpec
    fail_on_data_loss: bool
    max_offsets_per_trigger: int | None
    max_records_per_partition: int
    poll_timeout_s: float
    """kafkaConsumer.pollTimeoutMs, as Spark's source: how long a range read may make no progress."""
    metadata_timeout_s: float
    """timeoutMs: the cluster timeout of a stream's metadata requests (default: the poll timeout)."""
    skip_unreachable: bool
    """onUnreachable=skip: a stream whose cluster does not answer reads nothing this micro-batch."""

    @classmethod
    def parse(cls, options: Mapping[str, str], *, streaming: bool) -> KafkaReadOptions:
        lowered = lower_names(options)
        for name, hint in _FORBIDDEN_KAFKA_OPTIONS.items():
            if name in lowered:
                raise OffsetOptionError(f"option {name} is not supported: {hint}")
        require_bootstrap_servers(lowered)
        if lowered.get("includeheaders", "true").lower() != "true":
            raise OffsetOptionError("offsetlake_kafka always includes headers (includeHeaders=true)")
        if streaming and lowered.get("endingoffsets"):
            raise OffsetOptionError("endingOffsets is for batch reads only")
        if not streaming and lowered.get("maxoffsetspertrigger"):
            raise OffsetOptionError("maxOffsetsPerTrigger is for streaming reads only")
        max_offsets = lowered.get("maxoffsetspertrigger")
        if max_offsets and not ADMISSION_CONTROL:
            raise OffsetOptionError(
                "maxOffsetsPerTrigger needs PySpark 4.2 or later (admission control for Python data sources)"
            )
        poll_timeout_ms = parse_positive_int(
            lowered.get("kafkaconsumer.polltimeoutms", str(DEFAULT_POLL_TIMEOUT_MS)),
            "kafkaConsumer.pollTimeoutMs",
        )
        return cls(
            client_config=kafka_options_to_librdkafka(lowered),
            subscription=Subscription.from_options(lowered),
            # Spark's defaults: streams start at the end, batches read everything.
            starting=OffsetsSpec.parse(
                lowered.get("startingoffsets"),
                option="startingOffsets",
                default=LATEST if streaming else EARLIEST,
            ),
            ending=OffsetsSpec.parse(lowered.get("endingoffsets"), option="endingOffsets", default=LATEST),
            fail_on_data_loss=parse_bool(lowered.get("failondataloss", "true"), "failOnDataLoss"),
            max_offsets_per_trigger=parse_positive_int(max_offsets, "maxOffsetsPerTrigger")
            if max_offsets
            else None,
            max_records_per_partition=parse_positive_int(
                lowered.get("maxrecordsperpartition", str(DEFAULT_MAX_RECORDS_PER_PARTITION)),
                "maxRecordsPerPartition",
            ),
            poll_timeout_s=poll_timeout_ms / 1000,
            metadata_timeout_s=parse_timeout_s(lowered, default_ms=poll_timeout_ms),
            skip_unreachable=parse_on_unreachable(lowered),
        )


@dataclass(frozen=True)
class KafkaRangePartition(InputPartition):
    """One Spark task: one offset range of one topic-partition."""

    offset_range: OffsetRange


class ClusterMetadata:
    """Topic layout and log offsets of one cluster, for planning on the driver."""

    def __init__(self, client_config: Mapping[str, str], timeout_s: float) -> None:
        self._client_config = dict(client_config)
        self._timeout_s = timeout_s
        self._admin: AdminClient | None = None

    def partition_counts(self) -> dict[str, int]:
        """topic -> number of partitions, for every topic the client may see."""
        return kafka_admin.list_partition_counts(self._client(), timeout_s=self._timeout_s)

    def log_offsets(
        self, keys: Sequence[PartitionKey]
    ) -> tuple[dict[PartitionKey, int], dict[PartitionKey, int]]:
        """(log start, log end) per partition; the end honours the configured isolation.level."""
        read_committed = self._client_config.get("isolation.level") == "read_committed"
        return tuple(  # type: ignore[return-value]
            kafka_admin.list_log_offsets(
                self._client(), keys, spec, timeout_s=self._timeout_s, read_committed=read_committed
            )
            for spec in (OffsetSpec.earliest(), OffsetSpec.latest())
        )

    def close(self) -> None:
        """Hand the admin client's queued log lines over and let it go."""
        if self._admin is not None:
            clients.flush_logs(self._admin)
            self._admin = None

    def _client(self) -> AdminClient:
        if self._admin is None:
            self._admin = clients.new_admin(self._client_config)
        return self._admin


class KafkaBatchReader(DataSourceReader):
    def __init__(self, options: KafkaReadOptions) -> None:
        self.options = options

    def partitions(self) -> list[InputPartition]:
        metadata = ClusterMetadata(self.options.client_config, self.options.poll_timeout_s)
        try:
            keys = self.options.subscription.select(metadata.partition_counts())
            log_start, log_end = metadata.log_offsets(keys)
        finally:
            metadata.close()
        ranges = plan_batch_ranges(
            keys,
            log_start,
            log_end,
            self.options.starting,
            self.options.ending,
            fail_on_data_loss=self.options.fail_on_data_loss,
        )
        return [KafkaRangePartition(r) for r in split_ranges(ranges, self.options.max_records_per_partition)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read_partition(self.options, partition)


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches over offset ranges; lives on the driver between triggers."""

    def __init__(self, options: KafkaReadOptions) -> None:
        self.options = options
        self._available_now_target: dict[PartitionKey, int] | None = None
        self._metadata: ClusterMetadata | None = None
        self._unreachable = False

    def __getstate__(self) -> dict[str, Any]:
        # The reader is pickled to Spark workers for read(); the admin client stays behind.
        return {**self.__dict__, "_metadata": None}

    def initialOffset(self) -> dict[str, dict[str, int]]:  # noqa: N802 (Spark API)
        layout = self._reachable_layout()
        if layout is None:
            # No partition known yet: once the cluster answers, every partition is read from its
            # log start (what startingOffsets=earliest, the pipeline's setting, would have done).
            return to_stream_offset({})
        keys, log_start, log_end = layout
        return to_stream_offset(
            self.options.starting.resolve(keys, log_start, log_end, option="startingOffsets")
        )

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802 (Spark API)
        if self.options.max_offsets_per_trigger is None:
            return ReadAllAvailable()
        return ReadMaxRows(self.options.max_offsets_per_trigger)

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802 (Spark API)
        layout = self._reachable_layout()
        self._available_now_target = None if layout is None else layout[2]

    def latestOffset(  # noqa: N802 (Spark API)
        self, start: dict[str, dict[str, int]] | None = None, limit: ReadLimit | None = None
    ) -> dict[str, dict[str, int]]:
        """PySpark 4.2 passes the batch's start and limit; 4.0 passes neither (spark_compat.py)."""
        layout = self._reachable_layout(can_skip=start is not None)
        if layout is None:
            return start  # type: ignore[return-value]  # the same offset: no batch, nothing skipped
        _, log_start, log_end = layout
        end = next_stream_end(
            from_stream_offset(start or {}),
            log_start,
            log_end,
            fail_on_data_loss=self.options.fail_on_data_loss,
            max_offsets=limit.max_rows if isinstance(limit, ReadMaxRows) else None,
            target=self._available_now_target,
        )
        return to_stream_offset(end)

    def partitions(
        self, start: dict[str, dict[str, int]], end: dict[str, dict[str, int]]
    ) -> list[InputPartition]:
        end_offsets = from_stream_offset(end)
        start_offsets = from_stream_offset(start)
        if not ADMISSION_CONTROL:  # latestOffset did not see the start, so it could not check this
            report_vanished(start_offsets, end_offsets, fail_on_data_loss=self.options.fail_on_data_loss)
        log_start, _ = self._cluster().log_offsets(sorted(end_offsets))
        ranges = plan_stream_ranges(
            start_offsets,
            end_offsets,
            log_start,
            fail_on_data_loss=self.options.fail_on_data_loss,
        )
        return [KafkaRangePartition(r) for r in split_ranges(ranges, self.options.max_records_per_partition)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read_partition(self.options, partition)

    def stop(self) -> None:
        if self._metadata is not None:
            self._metadata.close()

    def _reachable_layout(
        self, *, can_skip: bool = True
    ) -> tuple[list[PartitionKey], dict[PartitionKey, int], dict[PartitionKey, int]] | None:
        """The layout, or None when the cluster does not answer and onUnreachable=skip. Once it
        did not answer, this reader does not ask again: an update pays the timeout once.

        Skipping means answering with the stream's own start offset, so it needs ``can_skip``: on
        PySpark before 4.2 latestOffset is not told the start, and any other answer would move the
        stream's position; there an unreachable cluster fails the stream (after the timeout)."""
        if self._unreachable:
            return None
        try:
            return self._current_layout()
        except KafkaAdminError as error:
            if not self.options.skip_unreachable:
                raise
            if not can_skip:
                raise KafkaAdminError(
                    f"{error} (onUnreachable=skip needs PySpark 4.2 or later: this Spark does not tell "
                    "the source where its stream stands, so it cannot skip without losing its place)"
                ) from error
            self._unreachable = True
            _LOG.warning(
                "cluster %s did not answer (%s): no records from it this micro-batch",
                self.options.client_config.get("bootstrap.servers"),
                error,
            )
            return None

    def _current_layout(self) -> tuple[list[PartitionKey], dict[PartitionKey, int], dict[PartitionKey, int]]:
        metadata = self._cluster()
        keys = self.options.subscription.select(metadata.partition_counts())
        log_start, log_end = metadata.log_offsets(keys)
        return keys, log_start, log_end

    def _cluster(self) -> ClusterMetadata:
        if self._metadata is None:
            self._metadata = ClusterMetadata(self.options.client_config, self.options.metadata_timeout_s)
        return self._metadata


class KafkaDataSource(DataSource):
    """``spark.read.format("offsetlake_kafka")`` / ``spark.readStream.format("offsetlake_kafka")``."""

    @classmethod
    def name(cls) -> str:
        return KAFKA_SOURCE_NAME

    def schema(self) -> StructType:
        return KAFKA_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkaBatchReader(KafkaReadOptions.parse(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802 (Spark API)
        return KafkaStreamReader(KafkaReadOptions.parse(self.options, streaming=True))


def _read_partition(options: KafkaReadOptions, partition: InputPartition) -> Iterator[pa.RecordBatch]:
    if not isinstance(partition, KafkaRangePartition):
        # Spark plans one placeholder partition when a batch read has no ranges at all.
        return iter(())
    return read_offset_range(
        options.client_config,
        partition.offset_range,
        KAFKA_ARROW_SCHEMA,
        fail_on_data_loss=options.fail_on_data_loss,
        poll_timeout_s=options.poll_timeout_s,
    )
