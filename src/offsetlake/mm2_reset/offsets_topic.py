"""The Kafka side of an MM2 offset reset: read the Connect offsets topic, write tombstones, and
truncate MM2's offset-syncs topic. Clients come from offsetlake.kafka.clients, admin calls go
through offsetlake.kafka.admin; what to write is decided in :mod:`offsetlake.mm2_reset.plan`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException

from offsetlake.errors import ExternalError, UsageError
from offsetlake.kafka import admin as kafka_admin
from offsetlake.kafka import clients
from offsetlake.kafka.read_to_end import PartitionRead, PartitionToRead, ReadOutcome, ReadToEnd
from offsetlake.mm2_reset.plan import (
    ResetRow,
    StoredKey,
    Truncation,
    delete_before,
    plan_truncation,
    truncated,
)


class ResetError(ExternalError):
    """The offsets topic could not be read or written, or a tombstone did not verify."""


def read_offsets_topic(
    config: Mapping[str, str], topic: str, *, timeout_s: float
) -> tuple[int, list[StoredKey]]:
    """(partition count, newest record per key and partition), each partition read from its log start
    to its end (:mod:`offsetlake.kafka.read_to_end`); a partition not read to its end is an error."""
    newest: dict[tuple[int, bytes], StoredKey] = {}
    try:
        with clients.consumer({**config, "enable.partition.eof": True}) as consumer:
            metadata = consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
            if metadata is None or metadata.error is not None or not metadata.partitions:
                reason = metadata.error if metadata is not None and metadata.error else "it does not exist"
                raise UsageError(f"offsets topic {topic!r} cannot be read: {reason}")
            partitions = len(metadata.partitions)
            wanted = [PartitionToRead(topic, partition, OFFSET_BEGINNING) for partition in range(partitions)]
            read = ReadToEnd(consumer, wanted, timeout_s=timeout_s)
            for batch in read:
                for message in batch:
                    partition, offset, key = message.partition() or 0, message.offset() or 0, message.key()
                    if key is not None:
                        newest[(partition, key)] = StoredKey(partition, offset, key, message.value())
    except KafkaException as error:
        raise ResetError(f"reading {topic}: {error.args[0]}") from error
    require_read_whole(topic, read.results, timeout_s)
    return partitions, sorted(newest.values(), key=lambda s: (s.partition, s.kafka_offset))


def require_read_whole(topic: str, results: Sequence[PartitionRead], timeout_s: float) -> None:
    """A key's newest record may be in the part not read: a partition not read to its end is an error."""
    for result in results:
        if result.outcome in (ReadOutcome.FAILED, ReadOutcome.LOST):
            raise ResetError(f"reading {topic}[{result.partition}]: {result.error}")
    stalled = [result.partition for result in results if result.outcome is ReadOutcome.STALLED]
    if stalled:
        raise ResetError(
            f"{topic}: not read to its end, no progress for {timeout_s:g} s (partitions {stalled})"
        )


def write_tombstones(
    config: Mapping[str, str], topic: str, rows: Sequence[ResetRow], *, timeout_s: float
) -> None:
    """A tombstone per row: the exact key bytes, in the partition Java would choose."""
    failures: list[str] = []

    def delivered(error: KafkaError | None, message: object, expected: int) -> None:
        if error is not None:
            failures.append(str(error))
        elif message.partition() != expected:  # type: ignore[attr-defined]
            failures.append(f"landed in partition {message.partition()}, not {expected}")  # type: ignore[attr-defined]

    with clients.producer(
        {**config, "partitioner": "murmur2_random", "linger.ms": 0, "enable.idempotence": True}
    ) as producer:
        for row in rows:
            producer.produce(
                topic,
                key=row.stored.key,
                value=None,
                partition=row.java_partition,
                on_delivery=lambda error, message, expected=row.java_partition: delivered(
                    error, message, expected
                ),
            )
        if producer.flush(timeout_s) > 0:
            raise ResetError(f"tombstones to {topic} still undelivered after {timeout_s:g} s")
    if failures:
        raise ResetError(f"writing tombstones to {topic}: {failures[0]} ({len(failures)} failed)")


def truncate_offset_syncs(
    config: Mapping[str, str], topic: str, *, execute: bool, timeout_s: float
) -> list[Truncation]:
    """Delete every record of MM2's offset-syncs topic (DeleteRecords up to each log end), so the
    restarted connectors do not translate with syncs from before the reset. Dry run: the sizes only."""
    with clients.admin(config) as admin:
        counts = kafka_admin.list_partition_counts(admin, timeout_s=timeout_s)
        if topic not in counts:
            raise UsageError(f"offset-syncs topic {topic!r} not found")
        keys = [(topic, partition) for partition in range(counts[topic])]
        bounds = kafka_admin.list_log_bounds(admin, keys, timeout_s=timeout_s)
        planned = plan_truncation({partition: bounds[(topic, partition)] for _, partition in keys})
        if not execute:
            return planned
        starts = kafka_admin.delete_records_before(
            admin,
            {(topic, partition): end for partition, end in delete_before(planned).items()},
            timeout_s=timeout_s,
        )
    return truncated(planned, {partition: start for (_, partition), start in starts.items()})
