"""Kafka helpers for tests: real clients against the test clusters, one short-lived client per call.

Every helper waits for the broker's answer and raises on any per-partition error, so a test reads
as a sequence of facts about the cluster. The clusters are Tansu locally or any real Kafka pair
(see ``kafka_clusters`` in conftest.py); Tansu quirks are worked around here, each named where it
is, so the same test holds on Apache Kafka.
"""

from __future__ import annotations

import base64
import contextlib
import struct
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from offsetlake_dev.simulate.target_consumers import active_member

TIMEOUT_S = 15.0
# Commit metadata as Kafka Streams writes it (StreamTask.encodeTimestamp): base64 of a magic byte (1)
# and the task's partition time as a big-endian long. Older Streams releases fail on anything else.
STREAMS_METADATA = base64.b64encode(struct.pack(">bq", 1, 1_763_726_400_000)).decode()

Bytes = bytes | str | None
TopicPartitionKey = tuple[str, int]
# (key, value) or (key, value, timestamp_ms)
ProducerRecord = tuple[Bytes, Bytes] | tuple[Bytes, Bytes, int]


@dataclass(frozen=True)
class ClustersUnderTest:
    """The source and target clusters a test session runs against."""

    source_bootstrap: str
    target_bootstrap: str
    is_tansu: bool  # False for a real Kafka pair named by OFFSETLAKE_TEST_{SOURCE,TARGET}_BOOTSTRAP


@dataclass(frozen=True)
class ConsumedRecord:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int
    headers: tuple[tuple[str, bytes | None], ...]


def admin_client(bootstrap: str) -> AdminClient:
    """An AdminClient; keep it referenced until its futures are done.

    A garbage-collected AdminClient never completes its futures: ``result()`` times out
    (measured with confluent-kafka 2.16.1).
    """
    return AdminClient({"bootstrap.servers": bootstrap})


def create_topic(
    bootstrap: str, topic: str, partitions: int = 1, config: Mapping[str, str] | None = None
) -> None:
    """Create a topic and wait until its metadata lists every partition with a leader."""
    admin = admin_client(bootstrap)
    new_topic = NewTopic(topic, num_partitions=partitions, config=dict(config or {}))
    admin.create_topics([new_topic], operation_timeout=TIMEOUT_S)[topic].result(timeout=TIMEOUT_S)
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        metadata = admin.list_topics(topic, timeout=TIMEOUT_S).topics[topic]
        if (
            metadata.error is None
            and len(metadata.partitions) == partitions
            and all(partition.leader >= 0 for partition in metadata.partitions.values())
        ):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {topic} has no leader for all {partitions} partitions: {metadata}")
        time.sleep(0.1)


def produce(
    bootstrap: str,
    topic: str,
    records: Iterable[ProducerRecord],
    partition: int = 0,
    *,
    one_per_batch: bool = True,
) -> list[int]:
    """Produce records to one partition in order; returns the offset each record got.

    ``one_per_batch`` flushes after every record. Tansu quirk: its ListOffsets "latest" is wrong for
    a partition whose last batch holds several records, so tests that look at the log-end offset
    need one record per batch.
    """
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0 if one_per_batch else 5})
    offsets: dict[int, int] = {}
    errors: list[KafkaError] = []

    def on_delivery_of(index: int) -> Callable[[KafkaError | None, Message], None]:
        def on_delivery(error: KafkaError | None, message: Message) -> None:
            if error is not None:
                errors.append(error)
            else:
                offsets[index] = message.offset()

        return on_delivery

    count = 0
    for count, (key, value, *timestamp) in enumerate(records, start=1):
        producer.produce(
            topic,
            value=value,
            key=key,
            partition=partition,
            timestamp=timestamp[0] if timestamp else 0,
            on_delivery=on_delivery_of(count - 1),
        )
        producer.poll(0)  # serve earlier delivery reports
        if one_per_batch:
            _flush(producer)
    _flush(producer)
    if errors:
        raise KafkaException(errors[0])
    return [offsets[index] for index in range(count)]


def _flush(producer: Producer) -> None:
    if producer.flush(TIMEOUT_S) > 0:
        raise TimeoutError(f"records still undelivered after {TIMEOUT_S} s")


def consume_all(
    bootstrap: str, topic: str, partition: int = 0, *, timeout_s: float = TIMEOUT_S
) -> list[ConsumedRecord]:
    """Every record from the log start to the log end as it is when the call starts.

    The log end comes from ListOffsets, so on Tansu the records must have been produced one per
    batch (see ``produce``) or the read stops early.
    """
    consumer = _assigning_consumer(bootstrap)
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout_s)
        records: list[ConsumedRecord] = []
        if high <= low:
            return records
        consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        deadline = time.monotonic() + timeout_s
        # Positions, not record counts: compaction and transaction markers leave gaps in offsets.
        while consumer.position([TopicPartition(topic, partition)])[0].offset < high:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}[{partition}]: read {len(records)} records, log end is {high}")
            message = consumer.poll(0.2)
            if message is None:
                continue
            if message.error() is not None:
                raise KafkaException(message.error())
            records.append(_consumed(message))
        return records
    finally:
        consumer.close()


def _consumed(message: Message) -> ConsumedRecord:
    _, timestamp_ms = message.timestamp()
    return ConsumedRecord(
        topic=str(message.topic()),
        partition=int(message.partition() or 0),
        offset=int(message.offset() or 0),
        key=message.key(),
        value=message.value(),
        timestamp_ms=timestamp_ms,
        headers=tuple(message.headers() or ()),
    )


def _assigning_consumer(bootstrap: str, group: str | None = None) -> Consumer:
    """A consumer that never joins its group (assign, not subscribe) and never commits on its own."""
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group or f"offsetlake-test-reader-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
        }
    )


def commit_offsets(
    bootstrap: str, group: str, offsets: Mapping[TopicPartitionKey, int], metadata: str = ""
) -> None:
    """Commit offsets for a group the way a standalone consumer does: no join, so no rebalance wait."""
    consumer = _assigning_consumer(bootstrap, group)
    try:
        committed = consumer.commit(
            offsets=[
                TopicPartition(topic, partition, offset, metadata)
                for (topic, partition), offset in offsets.items()
            ],
            asynchronous=False,
        )
        _raise_partition_errors(committed or [])
    finally:
        consumer.close()


def committed_offsets(
    bootstrap: str, group: str, topic_partitions: Iterable[TopicPartitionKey]
) -> dict[TopicPartitionKey, int]:
    """The group's committed offsets as the AdminClient lists them (OFFSET_INVALID, -1001, if none)."""
    request = ConsumerGroupTopicPartitions(
        group, [TopicPartition(topic, partition) for topic, partition in topic_partitions]
    )
    admin = admin_client(bootstrap)  # referenced until the future is done
    future = admin.list_consumer_group_offsets([request])[group]
    listed = future.result(timeout=TIMEOUT_S).topic_partitions
    _raise_partition_errors(listed)
    return {(tp.topic, tp.partition): tp.offset for tp in listed}


def alter_group_offsets(bootstrap: str, group: str, offsets: Mapping[TopicPartitionKey, int]) -> None:
    """Set a group's committed offsets through the AdminClient, as the failover apply job does."""
    request = ConsumerGroupTopicPartitions(
        group,
        [TopicPartition(topic, partition, offset) for (topic, partition), offset in offsets.items()],
    )
    admin = admin_client(bootstrap)  # referenced until the future is done
    future = admin.alter_consumer_group_offsets([request])[group]
    _raise_partition_errors(future.result(timeout=TIMEOUT_S).topic_partitions)


def log_start_offset(bootstrap: str, topic: str, partition: int = 0) -> int:
    return _list_offset(bootstrap, TopicPartition(topic, partition), OffsetSpec.earliest())


def log_end_offset(bootstrap: str, topic: str, partition: int = 0) -> int:
    """The offset the next record will get (see ``produce`` for the Tansu quirk)."""
    return _list_offset(bootstrap, TopicPartition(topic, partition), OffsetSpec.latest())


def _list_offset(bootstrap: str, topic_partition: TopicPartition, spec: OffsetSpec) -> int:
    admin = admin_client(bootstrap)  # referenced until the future is done
    future = admin.list_offsets({topic_partition: spec})[topic_partition]
    return int(future.result(timeout=TIMEOUT_S).offset)


def group_state(bootstrap: str, group: str) -> ConsumerGroupState:
    """The group's state (Tansu quirk: it reports no members, so tests rely on the state alone)."""
    admin = admin_client(bootstrap)  # referenced until the future is done
    future = admin.describe_consumer_groups([group])[group]
    return future.result(timeout=TIMEOUT_S).state


def active_consumer(
    bootstrap: str, group: str, topic: str, *, timeout_s: float = 30.0
) -> contextlib.AbstractContextManager[list[TopicPartitionKey]]:
    """A member that has joined ``group`` (subscribed to ``topic``) for the block; yields its assignment.

    The demo's own live member (offsetlake_dev.simulate.target_consumers.active_member): it keeps
    polling so it stays in the group, commits nothing, and uses the minimum group timeouts
    because a Tansu join waits for the rebalance timeout.
    """
    return active_member(bootstrap, group, [topic], timeout_s=timeout_s)


def _raise_partition_errors(topic_partitions: Iterable[TopicPartition]) -> None:
    for tp in topic_partitions:
        if tp.error is not None:
            raise KafkaException(tp.error)


Traced = tuple[str, int, int] | None
"""(source topic, source partition, source offset) in a record's K2K headers; None: no headers."""


def produce_traced(bootstrap: str, topic: str, records: list[Traced], *, partition: int = 0) -> list[int]:
    """One record per batch (Tansu's log end needs it) into ``partition``; returns each record's
    target offset."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    offsets: list[int] = []
    for origin in records:
        headers = (
            None
            if origin is None
            else [
                ("k2k_topic", origin[0].encode()),
                ("k2k_partition", str(origin[1]).encode()),
                ("k2k_offset", str(origin[2]).encode()),
                ("k2k_pipeline", b"test"),
            ]
        )
        producer.produce(
            topic,
            value=b"r",
            partition=partition,
            headers=headers,
            on_delivery=lambda error, message: offsets.append(message.offset()),
        )
        producer.flush(15)
    assert len(offsets) == len(records)
    return offsets
