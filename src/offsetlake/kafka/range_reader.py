"""Read one Kafka offset range [start, end) into Arrow record batches (runs in Spark workers).

The consumer is assigned its partition directly: it never joins, and never commits to, a consumer
group on the user's cluster, so Spark's checkpoint alone decides what has been read. A range can
end on offsets that hold no record (compaction, transaction markers): the loop stops on the first
record at or past ``end`` or on reaching the partition's end (librdkafka's partition-EOF event),
so it never waits for an offset that will not come; a broker that stops answering for the poll
timeout is an error rather than a hang.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa
from confluent_kafka import KafkaError, Message, TopicPartition

from offsetlake.errors import ExternalError
from offsetlake.kafka import clients
from offsetlake.kafka.offset_ranges import DataLossError, OffsetRange, report_data_loss

ARROW_BATCH_ROWS = 4096
_POLL_SLICE_S = 1.0

# confluent-kafka timestamp types -> Kafka's TimestampType ids, which Spark's source reports.
_TIMESTAMP_TYPE_IDS = {0: -1, 1: 0, 2: 1}  # not available, CreateTime, LogAppendTime

# Errors no retry can fix: raise at once rather than wait for the poll timeout.
_PERMANENT_ERRORS = frozenset(
    {
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError._UNKNOWN_TOPIC,
        KafkaError._UNKNOWN_PARTITION,
        KafkaError.SASL_AUTHENTICATION_FAILED,
        KafkaError._AUTHENTICATION,
        KafkaError._SSL,
        KafkaError._INVALID_ARG,
    }
)

_log = logging.getLogger(__name__)


class KafkaReadError(ExternalError):
    """The broker failed or stopped answering while a range was being read."""


def reader_consumer_config(client_config: Mapping[str, str], *, fail_on_data_loss: bool) -> dict[str, Any]:
    """Consumer settings for range reads: assign-only, no commits, loss surfaces as an error.

    librdkafka insists on a group.id; a random one that is never joined or committed leaves no
    trace on the cluster. Reads are read_uncommitted unless the user asks otherwise, as in Spark.
    """
    return {
        "isolation.level": "read_uncommitted",
        **client_config,
        "group.id": f"offsetlake-reader-{uuid.uuid4()}",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": True,
        "auto.offset.reset": "error" if fail_on_data_loss else "earliest",
    }


def read_offset_range(
    client_config: Mapping[str, str],
    offset_range: OffsetRange,
    arrow_schema: pa.Schema,
    *,
    fail_on_data_loss: bool,
    poll_timeout_s: float,
    batch_rows: int = ARROW_BATCH_ROWS,
) -> Iterator[pa.RecordBatch]:
    """Yield the records of ``offset_range`` as Arrow batches of ``arrow_schema`` (Spark's Kafka schema)."""
    builder = _BatchBuilder(offset_range.topic, offset_range.partition, arrow_schema)
    name = f"{offset_range.topic}-{offset_range.partition}"
    config = reader_consumer_config(client_config, fail_on_data_loss=fail_on_data_loss)
    with clients.consumer(config) as consumer:
        consumer.assign([TopicPartition(offset_range.topic, offset_range.partition, offset_range.start)])
        position = offset_range.start
        deadline = time.monotonic() + poll_timeout_s
        while position < offset_range.end:
            if time.monotonic() > deadline:
                raise KafkaReadError(
                    f"{name}: no progress for {poll_timeout_s:.0f}s while reading offset {position} of "
                    f"[{offset_range.start}, {offset_range.end}) "
                    "(raise kafkaConsumer.pollTimeoutMs if the cluster is just slow)"
                )
            wanted = min(batch_rows - len(builder), offset_range.end - position)
            for message in consumer.consume(num_messages=wanted, timeout=_POLL_SLICE_S):
                error = message.error()
                if error is None:
                    deadline = time.monotonic() + poll_timeout_s
                    if message.offset() >= offset_range.end:
                        position = offset_range.end
                        break
                    builder.add(message)
                    position = message.offset() + 1
                elif error.code() == KafkaError._PARTITION_EOF:
                    # Nothing left to fetch: the rest of the range holds no records.
                    if message.offset() < offset_range.end:
                        report_data_loss(
                            fail_on_data_loss,
                            f"{name}: the log now ends at {message.offset()}, before {offset_range.end}",
                        )
                    position = offset_range.end
                    break
                elif error.code() in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
                    raise DataLossError(
                        f"{name}: offset {position} is no longer available ({error.str()}). "
                        "Set failOnDataLoss=false to skip to the earliest available offset."
                    )
                elif error.fatal() or error.code() in _PERMANENT_ERRORS:
                    raise KafkaReadError(f"{name}: reading offset {position} failed: {error.str()}")
                else:
                    # librdkafka reports connection trouble and recovers by itself; the deadline
                    # above bounds how long that may take.
                    _log.warning("%s: Kafka error, librdkafka retries: %s", name, error.str())
            if len(builder) >= batch_rows:
                yield builder.flush()
        if len(builder):
            yield builder.flush()


class _BatchBuilder:
    """Column lists for one Arrow batch; Arrow arrays are built once per batch, not per row."""

    def __init__(self, topic: str, partition: int, schema: pa.Schema) -> None:
        self._topic = topic
        self._partition = partition
        self._schema = schema
        self._reset()

    def _reset(self) -> None:
        self._keys: list[bytes | None] = []
        self._values: list[bytes | None] = []
        self._offsets: list[int] = []
        self._timestamps_us: list[int] = []
        self._timestamp_types: list[int] = []
        self._headers: list[list[tuple[str, bytes | None]] | None] = []

    def __len__(self) -> int:
        return len(self._offsets)

    def add(self, message: Message) -> None:
        timestamp_type, timestamp_ms = message.timestamp()
        self._keys.append(message.key())
        self._values.append(message.value())
        self._offsets.append(message.offset())
        self._timestamps_us.append(timestamp_ms * 1000)
        self._timestamp_types.append(_TIMESTAMP_TYPE_IDS.get(timestamp_type, -1))
        # Spark's source gives NULL, not an empty array, for a record without headers.
        self._headers.append(message.headers() or None)

    def flush(self) -> pa.RecordBatch:
        schema = self._schema
        rows = len(self)
        columns = [
            pa.array(self._keys, pa.binary()),
            pa.array(self._values, pa.binary()),
            pa.array([self._topic] * rows, pa.string()),
            pa.array([self._partition] * rows, pa.int32()),
            pa.array(self._offsets, pa.int64()),
            pa.array(self._timestamps_us, schema.field("timestamp").type),
            pa.array(self._timestamp_types, pa.int32()),
            pa.array(self._headers, schema.field("headers").type),
        ]
        self._reset()
        return pa.RecordBatch.from_arrays(columns, schema=schema)
