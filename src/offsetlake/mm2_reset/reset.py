"""``offsetlake mm2 reset-offsets``: delete a connector's stored Connect offsets, safely.

What operators do by hand to make MM2 replicate a topic again from the start: stop the
connectors, tombstone their Connect offsets, start again (``MirrorSourceTask.initializeConsumer``
then finds no offset and does not seek, so the consumer's ``auto.offset.reset``, ``earliest`` for
MM2, applies). Done by hand it goes wrong in two quiet ways, which this module rules out:

- **Key bytes.** Connect and compaction match a key by its bytes. A tombstone re-serialized from
  parsed JSON may differ (key order, escapes) and delete nothing. Each tombstone reuses the exact
  key bytes read from the topic.
- **Partition.** Connect's offset producer is a Java producer with the default partitioner
  (``KafkaOffsetBackingStore``), so a key lives in ``toPositive(murmur2(key)) % partitions``;
  librdkafka's default partitioner differs. The partition is computed
  (``kafka/java_partitioner.py``), named explicitly, and must equal the partition the key was read
  from; a key found elsewhere is not touched.

A running connector would overwrite the tombstones at its next offset flush, so ``--execute``
is refused unless the operator confirms the connectors are stopped. With a Connect REST URL the
safer path is taken instead (Kafka 3.6+, KIP-875, ``kafka/connect_rest.py``): the worker stops the
connector and resets its offsets itself, and refuses to while the connector runs. Dry run is the default:
it reads and plans, writes nothing to Kafka. After writing, the topic is read again and each
key's newest record must be the tombstone.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from offsetlake.codecs import CodecError
from offsetlake.codecs.connect import ConnectOffset, decode_connect_offset
from offsetlake.errors import ExternalError, UsageError
from offsetlake.kafka import admin as kafka_admin
from offsetlake.kafka.client_logging import flush_client_logs, with_client_logger
from offsetlake.kafka.connect_rest import ConnectRest, StoredOffset
from offsetlake.kafka.java_partitioner import java_partition


class ResetError(ExternalError):
    """The offsets topic could not be read or written, or a tombstone did not verify."""


class ResetAction(StrEnum):
    TOMBSTONE = "tombstone"
    ALREADY_RESET = "already_reset"
    """The key's newest record is a tombstone already: nothing to do."""
    SKIP_WRONG_PARTITION = "skip_wrong_partition"
    """The key is not in the partition Connect would use: a tombstone there would not delete it."""
    RESET_VIA_REST = "reset_via_rest"
    """Reset by the Connect worker (REST offsets API), not by a tombstone of ours."""


@dataclass(frozen=True)
class StoredKey:
    """The newest record of one key in one partition of the offsets topic."""

    partition: int
    kafka_offset: int
    key: bytes
    value: bytes | None


@dataclass(frozen=True)
class ResetRow:
    stored: StoredKey
    record: ConnectOffset
    java_partition: int
    action: ResetAction

    @property
    def source_partition(self) -> Mapping[str, object]:
        return self.record.partition


def read_offsets_topic(
    config: Mapping[str, str], topic: str, *, timeout_s: float
) -> tuple[int, list[StoredKey]]:
    """(partition count, newest record per key and partition), read from the log start to its end."""
    consumer = Consumer(
        with_client_logger(
            {
                **config,
                "group.id": "offsetlake-mm2-reset",  # required by librdkafka; never joined or committed
                "enable.auto.commit": False,
                "enable.partition.eof": True,
            }
        )
    )
    try:
        metadata = consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
        if metadata is None or metadata.error is not None or not metadata.partitions:
            reason = metadata.error if metadata is not None and metadata.error else "it does not exist"
            raise UsageError(f"offsets topic {topic!r} cannot be read: {reason}")
        partitions = len(metadata.partitions)
        ends: dict[int, int] = {}
        for partition in range(partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout_s)
            if high > low:
                ends[partition] = high
        newest: dict[tuple[int, bytes], StoredKey] = {}
        if ends:
            consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in ends])
            _drain(consumer, topic, ends, newest, timeout_s)
        return partitions, sorted(newest.values(), key=lambda s: (s.partition, s.kafka_offset))
    except KafkaException as error:
        raise ResetError(f"reading {topic}: {error.args[0]}") from error
    finally:
        consumer.close()


def _drain(
    consumer: Consumer,
    topic: str,
    ends: Mapping[int, int],
    newest: dict[tuple[int, bytes], StoredKey],
    timeout_s: float,
) -> None:
    waiting = set(ends)
    deadline = time.monotonic() + timeout_s
    while waiting:
        if time.monotonic() > deadline:
            raise ResetError(
                f"{topic}: not read to its end within {timeout_s:g} s (partitions {sorted(waiting)})"
            )
        for message in consumer.consume(num_messages=500, timeout=0.5):
            error = message.error()
            partition = message.partition() or 0
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    waiting.discard(partition)
                    continue
                raise ResetError(f"reading {topic}[{partition}]: {error}")
            offset = message.offset() or 0
            key = message.key()
            if key is not None:
                newest[(partition, key)] = StoredKey(partition, offset, key, message.value())
            if offset + 1 >= ends[partition]:
                waiting.discard(partition)


def plan_reset(
    stored: Iterable[StoredKey], partitions: int, connector: str, topics: str | None
) -> list[ResetRow]:
    """Every stored key of ``connector`` (whose source partition's ``topic`` fully matches
    ``topics`` when given) and what to do with it. Keys of other connectors, and records that do
    not decode, are never touched."""
    topic_filter = re.compile(topics) if topics else None
    rows: list[ResetRow] = []
    for entry in stored:
        try:
            record = decode_connect_offset(entry.key, entry.value)
        except CodecError:
            continue
        if record.connector != connector:
            continue
        if topic_filter is not None:
            topic = record.partition.get("topic")
            if not isinstance(topic, str) or topic_filter.fullmatch(topic) is None:
                continue
        expected = java_partition(entry.key, partitions)
        if record.offset is None:
            action = ResetAction.ALREADY_RESET
        elif expected != entry.partition:
            action = ResetAction.SKIP_WRONG_PARTITION
        else:
            action = ResetAction.TOMBSTONE
        rows.append(ResetRow(entry, record, expected, action))
    return rows


def write_tombstones(
    config: Mapping[str, str], topic: str, rows: Sequence[ResetRow], *, timeout_s: float
) -> None:
    """A tombstone per TOMBSTONE row: the exact key bytes, in the partition Java would choose."""
    producer = Producer(
        with_client_logger(
            {**config, "partitioner": "murmur2_random", "linger.ms": 0, "enable.idempotence": True}
        )
    )
    failures: list[str] = []

    def delivered(error: KafkaError | None, message: object, expected: int) -> None:
        if error is not None:
            failures.append(str(error))
        elif message.partition() != expected:  # type: ignore[attr-defined]
            failures.append(f"landed in partition {message.partition()}, not {expected}")  # type: ignore[attr-defined]

    for row in rows:
        if row.action != ResetAction.TOMBSTONE:
            continue
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


def verify_tombstones(stored_after: Iterable[StoredKey], rows: Sequence[ResetRow]) -> list[ResetRow]:
    """The TOMBSTONE rows whose key's newest record is still not a tombstone (empty: verified)."""
    newest = {(entry.partition, entry.key): entry for entry in stored_after}
    return [
        row
        for row in rows
        if row.action == ResetAction.TOMBSTONE
        and newest.get((row.java_partition, row.stored.key), row.stored).value is not None
    ]


@dataclass(frozen=True)
class Truncation:
    """One partition of the offset-syncs topic: its log before, and the log start after (None: dry run)."""

    partition: int
    log_start: int
    log_end: int
    log_start_after: int | None = None

    @property
    def verified(self) -> bool:
        return self.log_start_after is not None and self.log_start_after >= self.log_end


def truncate_offset_syncs(
    config: Mapping[str, str], topic: str, *, execute: bool, timeout_s: float
) -> list[Truncation]:
    """Delete every record of MM2's offset-syncs topic (DeleteRecords up to each log end), so the
    restarted connectors do not translate with syncs from before the reset. Dry run: the sizes only."""
    admin = AdminClient(with_client_logger(dict(config)))
    try:
        counts = kafka_admin.list_partition_counts(admin, timeout_s=timeout_s)
        if topic not in counts:
            raise UsageError(f"offset-syncs topic {topic!r} not found")
        keys = [(topic, partition) for partition in range(counts[topic])]
        bounds = kafka_admin.list_log_bounds(admin, keys, timeout_s=timeout_s)
        planned = [Truncation(p, bounds[(t, p)].log_start, bounds[(t, p)].log_end) for t, p in keys]
        if not execute:
            return planned
        starts = kafka_admin.delete_records_before(
            admin, {(topic, row.partition): row.log_end for row in planned}, timeout_s=timeout_s
        )
    finally:
        flush_client_logs(admin)
    return [replace(row, log_start_after=starts[(topic, row.partition)]) for row in planned]


@dataclass(frozen=True)
class ResetRequest:
    connector: str
    offsets_topic: str
    client_config: Mapping[str, str]
    topics: str | None = None
    execute: bool = False
    connectors_stopped: bool = False
    timeout_s: float = 30.0
    connect_url: str | None = None
    """A Kafka Connect worker's REST URL: stop and reset through it instead of writing tombstones."""


@dataclass(frozen=True)
class ResetResult:
    request: ResetRequest
    partitions: int
    rows: list[ResetRow]
    not_verified: list[ResetRow]

    @property
    def executed(self) -> bool:
        return self.request.execute


_REST_ACTION = {True: ResetAction.ALREADY_RESET, False: ResetAction.RESET_VIA_REST}  # by "offset is None"


@dataclass(frozen=True)
class RestResetRow:
    stored: StoredOffset
    action: ResetAction


@dataclass(frozen=True)
class RestResetResult:
    request: ResetRequest
    rows: list[RestResetRow]
    not_verified: list[RestResetRow]

    @property
    def executed(self) -> bool:
        return self.request.execute


def run_rest_reset(request: ResetRequest, rest: ConnectRest) -> RestResetResult:
    """Through the worker: list the connector's offsets (always); with ``execute`` stop it, reset the
    selected partitions (all of them: DELETE; some: PATCH with null offsets) and list them again."""
    topic_filter = re.compile(request.topics) if request.topics else None
    rows = [
        RestResetRow(
            stored, ResetAction.ALREADY_RESET if stored.offset is None else ResetAction.RESET_VIA_REST
        )
        for stored in rest.offsets(request.connector)
        if topic_filter is None
        or (isinstance(topic := stored.partition.get("topic"), str) and topic_filter.fullmatch(topic))
    ]
    if not request.execute:
        return RestResetResult(request, rows, [])
    rest.stop(request.connector, wait_s=request.timeout_s)
    selected = [row.stored.partition for row in rows if row.action is ResetAction.RESET_VIA_REST]
    if topic_filter is None:
        rest.reset_all(request.connector)
    elif selected:
        rest.reset(request.connector, selected)
    remaining = {
        _partition_key(stored.partition)
        for stored in rest.offsets(request.connector)
        if stored.offset is not None
    }
    not_verified = [
        row
        for row in rows
        if row.action is ResetAction.RESET_VIA_REST and _partition_key(row.stored.partition) in remaining
    ]
    return RestResetResult(request, rows, not_verified)


def _partition_key(partition: Mapping[str, object]) -> str:
    return json.dumps(dict(partition), sort_keys=True)


def run_reset(request: ResetRequest) -> ResetResult | RestResetResult:
    """Plan (always), then with ``execute`` write the tombstones and read them back; through the
    Connect REST API instead when ``connect_url`` is given."""
    if request.connect_url:
        return run_rest_reset(request, ConnectRest(request.connect_url, timeout_s=request.timeout_s))
    if request.execute and not request.connectors_stopped:
        raise UsageError(
            f"refusing to reset {request.connector!r}: a running connector rewrites its offsets "
            "at its next flush. Stop it (PUT /connectors/<name>/stop, or stop MirrorMaker), "
            "then pass --connectors-stopped; or give --connect-url to let the worker stop and reset it"
        )
    partitions, stored = read_offsets_topic(
        request.client_config, request.offsets_topic, timeout_s=request.timeout_s
    )
    rows = plan_reset(stored, partitions, request.connector, request.topics)
    if not request.execute:
        return ResetResult(request, partitions, rows, [])
    write_tombstones(request.client_config, request.offsets_topic, rows, timeout_s=request.timeout_s)
    _, after = read_offsets_topic(request.client_config, request.offsets_topic, timeout_s=request.timeout_s)
    return ResetResult(request, partitions, rows, verify_tombstones(after, rows))
