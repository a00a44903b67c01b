"""The ``offsetlake_kafka`` Python data source against real brokers and a real local Spark.

Every expectation comes from what the test produced (delivery reports give the offsets) or from a
bare confluent-kafka read, never from the source under test.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from confluent_kafka import KafkaError, Message, Producer, TopicPartition

from offsetlake.data_sources import register_data_sources
from offsetlake.data_sources.offsetlake_kafka import KAFKA_SCHEMA
from offsetlake.data_sources.spark_compat import ADMISSION_CONTROL
from tests.kafka_helpers import (
    TIMEOUT_S,
    ClustersUnderTest,
    admin_client,
    consume_all,
    create_topic,
    log_end_offset,
    produce,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

Headers = list[tuple[str, bytes | None]]
# (partition, key, value, headers, timestamp_ms)
Produced = tuple[int, bytes | None, bytes | None, Headers | None, int]


@pytest.fixture(scope="module")
def kafka_spark(spark: SparkSession) -> SparkSession:
    register_data_sources(spark)
    register_data_sources(spark)  # idempotent: the pipeline and tests may both call it
    return spark


def produce_with_headers(bootstrap: str, topic: str, records: list[Produced]) -> list[int]:
    """Produce records with headers (which kafka_helpers.produce does not take); returns offsets.

    Tansu quirk: ListOffsets "latest" is wrong after a multi-record batch, so flush after each record.
    """
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    offsets: list[int] = []

    def delivered(error: KafkaError | None, message: Message) -> None:
        assert error is None, error
        offsets.append(message.offset())

    for partition, key, value, headers, timestamp_ms in records:
        producer.produce(
            topic,
            key=key,
            value=value,
            headers=headers,
            timestamp=timestamp_ms,
            partition=partition,
            on_delivery=delivered,
        )
        assert producer.flush(TIMEOUT_S) == 0
    return offsets


def kafka_reader(spark: SparkSession, bootstrap: str, **options: str) -> DataFrame:
    reader = spark.read.format("offsetlake_kafka").option("kafka.bootstrap.servers", bootstrap)
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def group_ids(bootstrap: str) -> set[str]:
    admin = admin_client(bootstrap)  # referenced until the future completes (see admin_client)
    listing = admin.list_consumer_groups().result(timeout=TIMEOUT_S)
    return {group.group_id for group in listing.valid}


def test_batch_read_returns_exactly_what_was_produced(
    kafka_spark: SparkSession, source_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    topic = unique_name("batch")
    create_topic(source_bootstrap, topic, partitions=2)
    records: list[Produced] = [
        (0, b"k0", b"v0", [("h1", b"x"), ("h2", None)], 1_700_000_000_000),
        (0, None, b"no key", None, 1_700_000_000_001),
        (1, b"tombstone", None, [("h", b"")], 1_700_000_000_002),
        (1, b"k3", b"v3", None, 1_700_000_000_003),
        (1, b"", b"", [("dup", b"1"), ("dup", b"2")], 1_700_000_000_004),
    ]
    offsets = produce_with_headers(source_bootstrap, topic, records)
    groups_before = group_ids(source_bootstrap)

    frame = kafka_reader(kafka_spark, source_bootstrap, subscribe=topic)

    assert frame.schema == KAFKA_SCHEMA
    rows = sorted(frame.collect(), key=lambda row: (row.partition, row.offset))
    expected = sorted(
        (
            (partition, offset, key, value, [tuple(h) for h in headers] if headers else None, timestamp_ms)
            for (partition, key, value, headers, timestamp_ms), offset in zip(records, offsets, strict=True)
        ),
    )
    actual = [
        (
            row.partition,
            row.offset,
            row.key,
            row.value,
            [(header.key, header.value) for header in row.headers] if row.headers is not None else None,
            int(row.timestamp.replace(tzinfo=UTC).timestamp() * 1000),
        )
        for row in rows
    ]
    assert actual == expected
    assert {row.topic for row in rows} == {topic}
    assert {row.timestampType for row in rows} == {0}  # CreateTime
    # A bare confluent-kafka read agrees, partition by partition.
    for partition in (0, 1):
        bare = [(r.offset, r.key, r.value) for r in consume_all(source_bootstrap, topic, partition)]
        assert bare == [(o, k, v) for p, o, k, v, _, _ in actual if p == partition]
    # Reading assigns partitions directly: no consumer group appears on the cluster.
    assert group_ids(source_bootstrap) == groups_before


def test_json_offsets_select_a_slice_and_large_ranges_are_split(
    kafka_spark: SparkSession, source_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    topic = unique_name("slice")
    create_topic(source_bootstrap, topic, partitions=2)
    produce(source_bootstrap, topic, [(None, f"a{i}".encode()) for i in range(8)], partition=0)
    produce(source_bootstrap, topic, [(None, f"b{i}".encode()) for i in range(3)], partition=1)

    frame = kafka_reader(
        kafka_spark,
        source_bootstrap,
        subscribe=topic,
        startingOffsets=f'{{"{topic}": {{"0": 2, "1": -2}}}}',
        endingOffsets=f'{{"{topic}": {{"0": 7, "1": -1}}}}',
        maxRecordsPerPartition="2",
    )

    assert sorted((row.partition, row.offset, row.value) for row in frame.collect()) == [
        (0, 2, b"a2"),
        (0, 3, b"a3"),
        (0, 4, b"a4"),
        (0, 5, b"a5"),
        (0, 6, b"a6"),
        (1, 0, b"b0"),
        (1, 1, b"b1"),
        (1, 2, b"b2"),
    ]
    # [2, 7) -> 3 pieces of at most 2, [0, 3) -> 2 pieces.
    assert frame.rdd.getNumPartitions() == 5


def test_subscribe_pattern_reads_every_matching_topic_and_nothing_else(
    kafka_spark: SparkSession, source_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    prefix = unique_name("pattern")
    matching = [f"{prefix}-orders", f"{prefix}-payments"]
    other = f"{prefix}x-orders"
    for index, topic in enumerate([*matching, other]):
        create_topic(source_bootstrap, topic)
        produce(source_bootstrap, topic, [(None, f"{index}-{i}".encode()) for i in range(index + 1)])

    frame = kafka_reader(kafka_spark, source_bootstrap, subscribePattern=f"{prefix}-.*")

    assert sorted((row.topic, row.offset, row.value) for row in frame.collect()) == [
        (matching[0], 0, b"0-0"),
        (matching[1], 0, b"1-0"),
        (matching[1], 1, b"1-1"),
    ]


def test_streaming_reads_only_new_records_and_picks_up_new_topics(
    kafka_spark: SparkSession, source_bootstrap: str, unique_name: Callable[[str], str], tmp_path: Path
) -> None:
    prefix = unique_name("stream")
    first, second = f"{prefix}-a", f"{prefix}-b"
    create_topic(source_bootstrap, first)
    produce(source_bootstrap, first, [(None, b"a0"), (None, b"a1"), (None, b"a2")])
    sink, checkpoint = tmp_path / "sink", tmp_path / "checkpoint"
    groups_before = group_ids(source_bootstrap)

    batch_sizes: list[list[int]] = []
    # A read limit exists from PySpark 4.2 on (admission control); before, one batch per run.
    limit = {"maxOffsetsPerTrigger": "2"} if ADMISSION_CONTROL else {}

    def run_available_now() -> list[tuple[str, int, bytes]]:
        stream = (
            kafka_spark.readStream.format("offsetlake_kafka")
            .option("kafka.bootstrap.servers", source_bootstrap)
            .option("subscribePattern", f"{prefix}-.*")
            .option("startingOffsets", "earliest")
            .options(**limit)
            .load()
        )
        query = (
            stream.writeStream.format("parquet")
            .option("path", str(sink))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)
        assert query.exception() is None
        batch_sizes.append([progress["numInputRows"] for progress in query.recentProgress])
        return sorted(
            (row.topic, row.offset, row.value) for row in kafka_spark.read.parquet(str(sink)).collect()
        )

    assert run_available_now() == [(first, 0, b"a0"), (first, 1, b"a1"), (first, 2, b"a2")]

    produce(source_bootstrap, first, [(None, b"a3")])
    create_topic(source_bootstrap, second)
    produce(source_bootstrap, second, [(None, b"b0"), (None, b"b1")])
    assert run_available_now() == [
        (first, 0, b"a0"),
        (first, 1, b"a1"),
        (first, 2, b"a2"),
        (first, 3, b"a3"),
        (second, 0, b"b0"),
        (second, 1, b"b1"),
    ]

    # maxOffsetsPerTrigger=2: the backlog is cut into micro-batches of at most 2 offsets.
    assert batch_sizes == ([[2, 1], [2, 1]] if ADMISSION_CONTROL else [[3], [3]])

    files_before = sorted(path.name for path in sink.glob("*.parquet"))
    assert len(run_available_now()) == 6
    assert sorted(path.name for path in sink.glob("*.parquet")) == files_before
    assert group_ids(source_bootstrap) == groups_before


def test_fail_on_data_loss_when_records_were_deleted_before_the_start(
    kafka_spark: SparkSession,
    kafka_clusters: ClustersUnderTest,
    source_bootstrap: str,
    unique_name: Callable[[str], str],
) -> None:
    if kafka_clusters.is_tansu:
        # Tansu quirk: DeleteRecords is unimplemented and panics the broker, and memory storage has
        # no retention, so the log start cannot move; tests/unit/test_offset_ranges.py covers the rule.
        pytest.skip("Tansu cannot delete records; runs against a real Kafka pair")
    topic = unique_name("deleted")
    create_topic(source_bootstrap, topic)
    produce(source_bootstrap, topic, [(None, f"v{i}".encode()) for i in range(5)])
    admin = admin_client(source_bootstrap)
    deleted = admin.delete_records([TopicPartition(topic, 0, 3)])
    deleted[TopicPartition(topic, 0, 3)].result(timeout=TIMEOUT_S)

    start = f'{{"{topic}": {{"0": 1}}}}'
    with pytest.raises(Exception, match=r"offsets 1\.\.2 were deleted before they were read"):
        kafka_reader(kafka_spark, source_bootstrap, subscribe=topic, startingOffsets=start).collect()

    lenient = kafka_reader(
        kafka_spark, source_bootstrap, subscribe=topic, startingOffsets=start, failOnDataLoss="false"
    )
    assert sorted((row.offset, row.value) for row in lenient.collect()) == [(3, b"v3"), (4, b"v4")]


def test_a_range_ending_on_a_transaction_marker_does_not_hang(
    kafka_spark: SparkSession, source_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    topic = unique_name("transactional")
    create_topic(source_bootstrap, topic)
    producer = Producer({"bootstrap.servers": source_bootstrap, "transactional.id": unique_name("txn")})
    producer.init_transactions(TIMEOUT_S)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, value=f"t{i}".encode(), partition=0)
    producer.commit_transaction(TIMEOUT_S)
    assert log_end_offset(source_bootstrap, topic) == 4, "3 records and the commit marker"

    started = datetime.now(UTC)
    frame = kafka_reader(
        kafka_spark, source_bootstrap, subscribe=topic, **{"kafkaConsumer.pollTimeoutMs": "20000"}
    )
    rows = sorted((row.offset, row.value) for row in frame.collect())

    # The commit marker takes the last offset: the range [0, 4) has no record at offset 3.
    assert rows == [(0, b"t0"), (1, b"t1"), (2, b"t2")]
    assert (datetime.now(UTC) - started).total_seconds() < 15, (
        "the read waited for an offset that never comes"
    )
