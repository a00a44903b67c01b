"""Read one Kafka offset range [start, end) into Arrow record batches (runs in Spark workers).

The range is read by :mod:`offsetlake.kafka.read_to_end`: an assigned consumer that never joins,
and never commits to, a consumer group on the user's cluster, so Spark's checkpoint alone decides
what has been read. A range can end on offsets that hold no record (compaction, transaction
markers): it ends on the first record at or past ``end`` or at the log's end (partition EOF), so
it never waits for an offset that will not come; a broker that gives no record for the poll
timeout (``kafkaConsumer.pollTimeoutMs``) is an error rather than a hang. Here: what an unfinished
range means (an error, or data loss as ``failOnDataLoss`` says) and the Arrow batches.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pyarrow as pa
from confluent_kafka import Message

from offsetlake.errors import ExternalError
from offsetlake.kafka import clients
from offsetlake.kafka.offset_ranges import DataLossError, OffsetRange, report_data_loss
from offsetlake.kafka.read_to_end import (
    PartitionRead,
    PartitionToRead,
    ReadOutcome,
    ReadToEnd,
    reader_consumer_config,
)

ARROW_BATCH_ROWS = 4096

# confluent-kafka timestamp types -> Kafka's TimestampType ids, which Spark's source reports.
_TIMESTAMP_TYPE_IDS = {0: -1, 1: 0, 2: 1}  # not available, CreateTime, LogAppendTime


class KafkaReadError(ExternalError):
    """The broker failed or stopped answering while a range was being read."""


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
    wanted = PartitionToRead(offset_range.topic, offset_range.partition, offset_range.start, offset_range.end)
    config = reader_consumer_config(client_config, fail_on_data_loss=fail_on_data_loss)
    with clients.consumer(config) as consumer:
        read = ReadToEnd(consumer, [wanted], timeout_s=poll_timeout_s, batch_size=batch_rows)
        for records in read:
            for message in records:
                builder.add(message)
                if len(builder) >= batch_rows:
                    yield builder.flush()
        (result,) = read.results
    _finished(result, offset_range, fail_on_data_loss=fail_on_data_loss, poll_timeout_s=poll_timeout_s)
    if len(builder):
        yield builder.flush()


def _finished(
    result: PartitionRead, offset_range: OffsetRange, *, fail_on_data_loss: bool, poll_timeout_s: float
) -> None:
    """Raise unless the range was read to its end; a log that ended before it is data loss."""
    name, position = result.name, result.position
    if result.outcome is ReadOutcome.END:
        if result.log_end is not None and result.log_end < offset_range.end:
            report_data_loss(
                fail_on_data_loss, f"{name}: the log now ends at {result.log_end}, before {offset_range.end}"
            )
    elif result.outcome is ReadOutcome.LOST:
        raise DataLossError(
            f"{name}: offset {position} is no longer available ({result.error}). "
            "Set failOnDataLoss=false to skip to the earliest available offset."
        )
    elif result.outcome is ReadOutcome.STALLED:
        raise KafkaReadError(
            f"{name}: no progress for {poll_timeout_s:.0f}s while reading offset {position} of "
            f"[{offset_range.start}, {offset_range.end}) "
            "(raise kafkaConsumer.pollTimeoutMs if the cluster is just slow)"
        )
    else:
        raise KafkaReadError(f"{name}: reading offset {position} failed: {result.error}")


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
