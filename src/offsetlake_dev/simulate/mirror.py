"""A MirrorMaker 2 replication simulator against real brokers: records, offset syncs, checkpoints.

It produces source topics whose values are unique record ids (``orders:p0:r42``), replicates them
to ``<source-alias>.<topic>`` on the target the way MM2 does, and writes what MM2 writes, byte for
byte (docs/mm2-reference.md §1-§2):

- offset syncs to ``mm2-offset-syncs.<target-alias>.internal`` on the SOURCE cluster
  (``offset-syncs.topic.location=source``), emitted by :class:`OffsetSyncWriter`'s rules;
- checkpoints to ``<source-alias>.checkpoints.internal`` on the TARGET cluster, computed by
  :class:`CheckpointEmitter` over the syncs MM2's ``OffsetSyncStore`` would still hold;
- Connect offsets to ``mm2-offsets.<source-alias>.internal`` on the TARGET cluster (dedicated
  mode), as MirrorSourceTask's records make Connect store them: key
  ``["MirrorSourceConnector",{"cluster":…,"partition":…,"topic":…}]``, value ``{"offset": u}`` with u
  the last replicated upstream offset, in the partition the Java producer picks (murmur2). They are
  written only by :meth:`MirrorSimulator.commit` (Connect's ``offset.flush.interval.ms`` flush), so
  the stored offset lags what was replicated in between, as in production; a record the filter
  drops is not acknowledged, so it does not advance the stored offset (``WorkerSourceTask
  .recordDropped``);
- optionally, Lenses K2K-style per-record mappings (``k2k-json-v1``) for chosen topics (in
  ``__k2k_offset_mappings``, K2K's default name, over as many partitions as asked, optionally a
  duplicate routing of each), and K2K's record-tracing headers (``k2k_topic``, ``k2k_partition``,
  ``k2k_offset``, ``k2k_pipeline``) on the replicated records of chosen topics.

Target offsets diverge from source offsets for the reasons they do in production:

- records already on the target topic before replication starts;
- transaction commit markers on the source (transactional produce), which occupy offsets that
  are never replicated;
- records dropped by a filtering SMT (a Connect ``Filter`` on the ``HasHeaderKey`` predicate,
  header :data:`FILTER_HEADER`): to MM2 this is the same upstream gap compaction leaves. Real
  compaction is not used because the local Tansu broker never compacts.

The ground truth (every record's target offset) is kept in :attr:`MirrorSimulator.ground_truth`.
All produce calls send one record per batch: Tansu quirk, ListOffsets "latest" is wrong for a
partition whose last batch holds several records, and the pipeline and apply read log ends. The
checkpoints of one poll (46,000 at 10,000 groups) are batched but for the last record, alone.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import Any, Self

from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from offsetlake.codecs.connect import ConnectOffset, encode_connect_offset
from offsetlake.codecs.mappings import OffsetMapping, encode_k2k_json_v1
from offsetlake.codecs.mm2 import Checkpoint, OffsetSync, encode_checkpoint, encode_offset_sync
from offsetlake.errors import ExternalError
from offsetlake.kafka import admin as kafka_admin
from offsetlake.mirror.policy import ReplicationPolicy
from offsetlake.mirror.positions import CommittedOffset
from offsetlake_dev.simulate.checkpoint_emitter import (
    DEFAULT_GROUPS_EXCLUDE,
    DEFAULT_TOPICS_EXCLUDE,
    CheckpointEmitter,
)
from offsetlake_dev.simulate.ground_truth import GroundTruth, ReplicatedRecord, record_id
from offsetlake_dev.simulate.offset_sync_store import OffsetSyncStore
from offsetlake_dev.simulate.offset_sync_writer import DEFAULT_OFFSET_LAG_MAX, OffsetSyncWriter

FILTER_HEADER = "offsetlake-simulator-filtered"
"""Records carrying this header are dropped by the simulated filtering SMT (an upstream gap)."""
DEFAULT_MAPPING_TOPIC = "__k2k_offset_mappings"
"""K2K's documented default ``offsetMapping.topic``."""
TRACING_HEADERS = ("k2k_topic", "k2k_partition", "k2k_offset", "k2k_pipeline")
"""K2K's record-tracing header names (its ``tracing.headers`` defaults)."""
SOURCE_CONNECTOR = "MirrorSourceConnector"
"""Dedicated mode names each connector by its class (``MirrorMaker``: ``getSimpleName()``)."""
CONNECT_OFFSETS_PARTITIONS = 25
"""Connect's ``offset.storage.partitions`` default."""
PREEXISTING_VALUE_PREFIX = "preexisting"
TIMEOUT_S = 30.0
_ONE_RECORD_PER_BATCH = {"linger.ms": 0, "batch.num.messages": 1}


class SimulationError(ExternalError):
    """The simulator could not write or read what it needed; the message names the topic and cause."""


@dataclass(frozen=True)
class MirrorSettings:
    """One MM2 flow ``source_alias`` -> ``target_alias`` and what the simulator adds to it."""

    source_alias: str
    target_alias: str
    source_bootstrap: str
    target_bootstrap: str
    offset_lag_max: int = DEFAULT_OFFSET_LAG_MAX
    policy: ReplicationPolicy = field(default_factory=ReplicationPolicy)
    mapping_topic: str = DEFAULT_MAPPING_TOPIC
    mapped_topics: frozenset[str] = frozenset()
    """Source topics whose records also get a K2K per-record mapping."""
    mapping_partitions: int = 1
    """Partitions of the mapping topic when the simulator creates it (K2K's sample: 6). A mapping goes
    to partition ``source_partition % mapping_partitions``: one source partition's mappings stay in
    order, those of different partitions are not comparable by Kafka offset."""
    duplicate_mapping_topic: str | None = None
    """When set, each mapping is written a second time naming this target topic: two K2K routings
    of one source record (K2K docs, error handling: "Duplicate offset mappings"). Data is not copied."""
    traced_topics: frozenset[str] = frozenset()
    """Source topics whose replicated records carry K2K's record-tracing headers."""
    k2k_pipeline: str = "offsetlake-simulator"
    """The ``k2k_pipeline`` header's value (K2K writes its application name)."""
    groups_exclude: tuple[str, ...] = DEFAULT_GROUPS_EXCLUDE
    topics_exclude: tuple[str, ...] = DEFAULT_TOPICS_EXCLUDE
    connect_offsets_partitions: int = CONNECT_OFFSETS_PARTITIONS

    def __post_init__(self) -> None:
        """Refuse a bad count here rather than with a ZeroDivisionError mid-replication."""
        if self.mapping_partitions < 1:
            raise ValueError(f"mapping_partitions must be >= 1, got {self.mapping_partitions}")

    @property
    def connect_offsets_topic(self) -> str:
        """Dedicated MM2's ``offset.storage.topic`` (``MirrorMakerConfig.workerConfig``): no separator."""
        return f"mm2-offsets.{self.source_alias}.internal"

    @property
    def offset_syncs_topic(self) -> str:
        # Location "source": on the source cluster, named after the target alias.
        return self.policy.offset_syncs_topic(self.target_alias)

    @property
    def checkpoints_topic(self) -> str:
        return self.policy.checkpoints_topic(self.source_alias)

    def remote_topic(self, topic: str) -> str:
        return self.policy.format_remote_topic(self.source_alias, topic)


@dataclass(frozen=True)
class _SourceRecord:
    record_id: str
    offset: int
    filtered: bool


@dataclass(frozen=True)
class ReplicationReport:
    """What one :meth:`MirrorSimulator.replicate` call did."""

    replicated: int
    filtered: int
    offset_syncs: tuple[OffsetSync, ...]
    mappings: int
    """Mapping records written: two per record when a duplicate routing is configured."""


class MirrorSimulator:
    """Drives one simulated MM2 flow; use as a context manager so its clients are closed."""

    def __init__(self, settings: MirrorSettings) -> None:
        self.settings = settings
        self.ground_truth = GroundTruth()
        self.offset_syncs: list[OffsetSync] = []
        """Every offset sync written, in order."""
        self.checkpoints: list[Checkpoint] = []
        """Every checkpoint written, in order."""
        self._sync_writer = OffsetSyncWriter(settings.offset_lag_max)
        self._sync_store = OffsetSyncStore()
        self._checkpoint_emitter = CheckpointEmitter(
            settings.source_alias,
            settings.target_alias,
            self._sync_store,
            policy=settings.policy,
            groups_exclude=settings.groups_exclude,
            topics_exclude=settings.topics_exclude,
        )
        self._source_admin = AdminClient({"bootstrap.servers": settings.source_bootstrap})
        self._target_admin = AdminClient({"bootstrap.servers": settings.target_bootstrap})
        self._source_producer = Producer(
            {
                "bootstrap.servers": settings.source_bootstrap,
                "enable.idempotence": True,
                **_ONE_RECORD_PER_BATCH,
            }
        )
        self._target_producer = Producer(
            {
                "bootstrap.servers": settings.target_bootstrap,
                "enable.idempotence": True,
                **_ONE_RECORD_PER_BATCH,
            }
        )
        # MM2's checkpoint task writes a poll's checkpoints in batches (10,000 groups: 46,000 records).
        self._checkpoint_producer = Producer(
            {"bootstrap.servers": settings.target_bootstrap, "enable.idempotence": True, "linger.ms": 5}
        )
        # Connect's offset producer is a Java producer with the default (murmur2) partitioner.
        self._connect_producer = Producer(
            {
                "bootstrap.servers": settings.target_bootstrap,
                "partitioner": "murmur2_random",
                **_ONE_RECORD_PER_BATCH,
            }
        )
        self._transactional_producer: Producer | None = None
        self._replicated_through: dict[tuple[str, int], int] = {}
        self._stored_offsets: dict[tuple[str, int], int | None] = {}
        self._unflushed: set[tuple[str, int]] = set()
        """Partitions with records acknowledged since the last flush (OffsetStorageWriter's data)."""
        self._partitions: dict[str, int] = {}
        self._next_sequence: dict[tuple[str, int], int] = {}
        self._unreplicated: dict[tuple[str, int], list[_SourceRecord]] = {}
        self._next_upstream_offset: dict[tuple[str, int], int] = {}
        try:
            self._create_internal_topics()
        except BaseException:
            self.close()  # the clients would otherwise keep reconnecting
            raise

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Deliver what is queued and release the clients (they would otherwise keep reconnecting)."""
        for producer in (
            self._source_producer,
            self._target_producer,
            self._checkpoint_producer,
            self._connect_producer,
            self._transactional_producer,
        ):
            if producer is not None:
                producer.flush(TIMEOUT_S)
                producer.close()
        self._transactional_producer = None

    # -- topics ------------------------------------------------------------------------------------

    def create_topic(self, topic: str, partitions: int, *, preexisting_target_records: int = 0) -> str:
        """Create ``topic`` on the source and its remote copy on the target; returns the remote name.

        ``preexisting_target_records`` per partition are written to the remote topic first, so
        downstream offsets start ahead of upstream ones (the target topic was not empty).
        """
        if partitions < 1:
            raise ValueError(f"partitions must be >= 1, got {partitions}")
        remote = self.settings.remote_topic(topic)
        self._create_topics(self._source_admin, [NewTopic(topic, partitions)])
        self._create_topics(self._target_admin, [NewTopic(remote, partitions)])
        self._partitions[topic] = partitions
        for partition in range(partitions):
            self._next_sequence[(topic, partition)] = 0
            self._unreplicated[(topic, partition)] = []
            self._next_upstream_offset[(topic, partition)] = 0
            for index in range(preexisting_target_records):
                value = f"{PREEXISTING_VALUE_PREFIX}:{remote}:p{partition}:n{index}"
                self._target_producer.produce(remote, value=value.encode(), partition=partition)
        _flush(self._target_producer, remote)
        return remote

    # -- source records ----------------------------------------------------------------------------

    def produce(
        self, topic: str, records_per_partition: int, *, transaction_size: int = 0, filter_every: int = 0
    ) -> int:
        """Append records to every partition of a source topic; returns how many were produced.

        ``transaction_size`` > 0 commits every that many records of a partition as one transaction,
        so a commit marker follows each group of records. ``filter_every`` > 0 marks every that-many-th
        record for the filtering SMT, which drops it.
        """
        self._known_topic(topic)
        if records_per_partition < 0 or transaction_size < 0 or filter_every < 0:
            raise ValueError("records_per_partition, transaction_size and filter_every must be >= 0")
        produced: list[tuple[tuple[str, int], str, bool, Message | None, KafkaError | None]] = []

        def send(producer: Producer, partition: int) -> None:
            key = (topic, partition)
            sequence = self._next_sequence[key]
            self._next_sequence[key] = sequence + 1
            identifier = record_id(topic, partition, sequence)
            filtered = filter_every > 0 and sequence % filter_every == filter_every - 1
            slot = len(produced)
            produced.append((key, identifier, filtered, None, None))

            def on_delivery(error: KafkaError | None, message: Message) -> None:
                produced[slot] = (key, identifier, filtered, message, error)

            producer.produce(
                topic,
                key=identifier.encode(),
                value=identifier.encode(),
                partition=partition,
                headers=[(FILTER_HEADER, b"true")] if filtered else None,
                on_delivery=on_delivery,
            )

        for partition in range(self._partitions[topic]):
            if transaction_size:
                producer = self._transactional()
                remaining = records_per_partition
                while remaining:
                    chunk = min(transaction_size, remaining)
                    producer.begin_transaction()
                    for _ in range(chunk):
                        send(producer, partition)
                    producer.commit_transaction(TIMEOUT_S)  # flushes; the commit marker takes an offset
                    remaining -= chunk
            else:
                for _ in range(records_per_partition):
                    send(self._source_producer, partition)
        _flush(self._source_producer, topic)

        for key, identifier, filtered, message, error in produced:
            if error is not None or message is None:
                raise SimulationError(
                    f"producing {identifier} to {topic} failed: {error or 'no delivery report'}"
                )
            self._unreplicated[key].append(_SourceRecord(identifier, message.offset(), filtered))
        for records in self._unreplicated.values():
            records.sort(key=lambda record: record.offset)
        return len(produced)

    def commit_source_group(self, group: str, offsets: Mapping[tuple[str, int], int]) -> None:
        """Commit ``group``'s positions on the source cluster, as a consumer of the source would."""
        partitions = [
            TopicPartition(topic, partition, offset) for (topic, partition), offset in offsets.items()
        ]
        # A client of its own: one that lived through a paused source broker (SIGSTOP/SIGCONT in the
        # failover tests and benchmarks) may never get its group coordinator back.
        admin = AdminClient({"bootstrap.servers": self.settings.source_bootstrap})
        future = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, partitions)])
        result = future[group].result(timeout=TIMEOUT_S)
        _raise_partition_errors(f"committing {group} on the source", result.topic_partitions)

    def commit_source_groups(
        self, offsets: Mapping[str, Mapping[tuple[str, int], int]], *, in_flight: int = 256
    ) -> None:
        """:meth:`commit_source_group` for many groups at once (benchmarks build 10,000 of them): one
        client, up to ``in_flight`` requests pipelined (librdkafka takes one group per request)."""
        admin = AdminClient({"bootstrap.servers": self.settings.source_bootstrap})  # see above
        queued = iter(offsets.items())
        pending: dict[Future[Any], str] = {}

        def submit_next() -> None:
            item = next(queued, None)
            if item is not None:
                group, positions = item
                partitions = [TopicPartition(t, p, offset) for (t, p), offset in positions.items()]
                (future,) = admin.alter_consumer_group_offsets(
                    [ConsumerGroupTopicPartitions(group, partitions)], request_timeout=TIMEOUT_S
                ).values()
                pending[future] = group

        for _ in range(in_flight):
            submit_next()
        while pending:
            done, _ = wait(pending, timeout=TIMEOUT_S, return_when=FIRST_COMPLETED)
            if not done:
                raise SimulationError(f"committing {len(pending)} groups on the source timed out")
            for future in done:
                group = pending.pop(future)
                _raise_partition_errors(f"committing {group} on the source", future.result().topic_partitions)
                submit_next()

    def source_log_end(self, topic: str, partition: int) -> int:
        """One past the last offset the simulator produced (including a trailing commit marker)."""
        consumer = Consumer(
            {"bootstrap.servers": self.settings.source_bootstrap, "group.id": "offsetlake-sim"}
        )
        try:
            _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=TIMEOUT_S)
        finally:
            consumer.close()
        return int(high)

    # -- replication -------------------------------------------------------------------------------

    def replicate(self) -> ReplicationReport:
        """Mirror every produced, not yet replicated source record; emit the immediate offset syncs."""
        pending = {key: records for key, records in self._unreplicated.items() if records}
        if not pending:
            return ReplicationReport(0, 0, (), 0)
        consumed = self._consume_source(pending)

        acknowledged: dict[tuple[str, int], list[tuple[Message, Message]]] = {key: [] for key in pending}
        errors: list[str] = []
        filtered = 0
        for key, messages in consumed.items():
            topic, partition = key
            for message in messages:
                if _is_filtered(message):  # the filtering SMT drops it: an upstream gap
                    filtered += 1
                    continue

                def on_delivery(
                    error: KafkaError | None,
                    delivered: Message,
                    key: tuple[str, int] = key,
                    source: Message = message,
                ) -> None:
                    if error is not None:
                        errors.append(f"{source.value()!r}: {error}")
                    else:
                        acknowledged[key].append((source, delivered))

                _, timestamp_ms = message.timestamp()
                self._target_producer.produce(
                    self.settings.remote_topic(topic),
                    key=message.key(),
                    value=message.value(),
                    partition=partition,
                    timestamp=timestamp_ms,
                    headers=self._replicated_headers(message),
                    on_delivery=on_delivery,
                )
        _flush(self._target_producer, "the target topics")
        if errors:
            raise SimulationError(f"replicating to the target failed: {errors[0]} ({len(errors)} errors)")

        syncs: list[OffsetSync] = []
        mappings = 0
        mapping_errors: list[str] = []
        for key, pairs in acknowledged.items():
            topic, partition = key
            remote = self.settings.remote_topic(topic)
            for source, delivered in sorted(pairs, key=lambda pair: pair[0].offset()):
                upstream_offset, downstream_offset = source.offset(), delivered.offset()
                self._replicated_through[key] = upstream_offset
                self._unflushed.add(key)
                self.ground_truth.add(
                    ReplicatedRecord(
                        (source.value() or b"").decode(),
                        topic,
                        partition,
                        upstream_offset,
                        remote,
                        partition,
                        downstream_offset,
                    )
                )
                sync = self._sync_writer.record_replicated(
                    topic, partition, upstream_offset, downstream_offset
                )
                if sync is not None:
                    syncs.append(sync)
                if topic in self.settings.mapped_topics:
                    mapping = OffsetMapping(
                        topic, partition, upstream_offset, remote, partition, downstream_offset
                    )
                    mappings += self._write_mappings(mapping, mapping_errors)
            self._unreplicated[key] = []
        self._write_offset_syncs(syncs)
        _flush(self._target_producer, self.settings.mapping_topic)
        if mapping_errors:
            raise SimulationError(
                f"writing mappings to {self.settings.mapping_topic} failed: {mapping_errors[0]} "
                f"({len(mapping_errors)} errors)"
            )
        return ReplicationReport(
            replicated=sum(len(pairs) for pairs in acknowledged.values()),
            filtered=filtered,
            offset_syncs=tuple(syncs),
            mappings=mappings,
        )

    def _replicated_headers(self, message: Message) -> list[tuple[str, bytes]] | None:
        """The source record's headers, plus K2K's tracing headers when its topic is traced."""
        headers = message.headers()
        if message.topic() not in self.settings.traced_topics:
            return headers
        origin = (
            message.topic(),
            str(message.partition()),
            str(message.offset()),
            self.settings.k2k_pipeline,
        )
        return [
            *(headers or []),
            *((name, value.encode()) for name, value in zip(TRACING_HEADERS, origin, strict=True)),
        ]

    def _write_mappings(self, mapping: OffsetMapping, errors: list[str]) -> int:
        """Queue the record's K2K mapping (and its duplicate routing, when configured); returns how
        many were queued. Delivery failures land in ``errors``: a lost mapping would go unnoticed."""
        routings = [mapping]
        if self.settings.duplicate_mapping_topic is not None:
            routings.append(replace(mapping, target_topic=self.settings.duplicate_mapping_topic))

        def on_delivery(error: KafkaError | None, _: Message) -> None:
            if error is not None:
                errors.append(str(error))

        for routing in routings:
            mapping_key, mapping_value = encode_k2k_json_v1(routing)
            self._target_producer.produce(
                self.settings.mapping_topic,
                key=mapping_key,
                value=mapping_value,
                # One source partition's mappings stay in one mapping partition, in order.
                partition=mapping.source_partition % self.settings.mapping_partitions,
                on_delivery=on_delivery,
            )
        return len(routings)

    def commit(self) -> list[OffsetSync]:
        """Connect's periodic offset flush (``offset.flush.interval.ms``): the replicated positions
        are stored as Connect offsets, and MM2's ``commit()`` writes the held-back syncs."""
        self._flush_connect_offsets()
        promoted = self._sync_writer.commit()
        self._write_offset_syncs(promoted)
        return promoted

    def reset_connect_offset(self, topic: str, partition: int) -> None:
        """What ``DELETE /connectors/<c>/offsets`` (or a manual reset) leaves: a tombstone."""
        key, _ = encode_connect_offset(self._connect_offset(topic, partition, None))
        self._connect_producer.produce(self.settings.connect_offsets_topic, key=key, value=None)
        _flush(self._connect_producer, self.settings.connect_offsets_topic)
        self._stored_offsets[(topic, partition)] = None

    def stored_offset(self, topic: str, partition: int) -> int | None:
        """The Connect offset stored now (last replicated upstream offset at the last flush);
        None after a reset; KeyError when none was ever stored (never replicated)."""
        return self._stored_offsets[(topic, partition)]

    def replicated_through(self, topic: str, partition: int) -> int | None:
        """The last upstream offset replicated (acknowledged by the target), flushed or not."""
        return self._replicated_through.get((topic, partition))

    def _connect_offset(self, topic: str, partition: int, offset: int | None) -> ConnectOffset:
        # MirrorUtils.wrapPartition in Java HashMap order, MirrorUtils.wrapOffset.
        source_partition = {"cluster": self.settings.source_alias, "partition": partition, "topic": topic}
        return ConnectOffset(
            SOURCE_CONNECTOR, source_partition, None if offset is None else {"offset": offset}
        )

    def _flush_connect_offsets(self) -> None:
        # Only offsets submitted since the last flush are written (OffsetStorageWriter.beginFlush
        # returns false when there is nothing new): a reset stays a reset until MM2 moves again.
        changed = {key: self._replicated_through[key] for key in self._unflushed}
        self._unflushed.clear()
        for (topic, partition), offset in sorted(changed.items()):
            key, value = encode_connect_offset(self._connect_offset(topic, partition, offset))
            self._connect_producer.produce(self.settings.connect_offsets_topic, key=key, value=value)
        _flush(self._connect_producer, self.settings.connect_offsets_topic)
        self._stored_offsets.update(changed)

    def emit_checkpoints(self, groups: Iterable[str]) -> list[Checkpoint]:
        """One checkpoint-task poll: read each group's source offsets, write the checkpoints due."""
        emitted: list[Checkpoint] = []
        listed = self._source_groups_offsets(
            [group for group in groups if self._checkpoint_emitter.replicates_group(group)]
        )
        records: list[tuple[bytes, bytes, int]] = []
        for group, committed in listed.items():
            listed_at_ms = int(time.time() * 1000)
            for checkpoint in self._checkpoint_emitter.checkpoints_for_group(group, committed):
                key, value = encode_checkpoint(checkpoint)
                records.append((key, value, listed_at_ms))
                emitted.append(checkpoint)
        # Batched, all but the last record, which goes alone (Tansu's log end: see the module).
        for producer, batch in (
            (self._checkpoint_producer, records[:-1]),
            (self._target_producer, records[-1:]),
        ):
            for key, value, listed_at_ms in batch:
                producer.produce(
                    self.settings.checkpoints_topic, key=key, value=value, partition=0, timestamp=listed_at_ms
                )
                producer.poll(0)  # serve delivery reports: the queue stays bounded
            _flush(producer, self.settings.checkpoints_topic)
        self.checkpoints.extend(emitted)
        return emitted

    def retained_offset_syncs(self, topic: str, partition: int) -> list[OffsetSync]:
        """The syncs MM2's checkpoint task holds now for one source partition, oldest first."""
        return self._sync_store.retained(topic, partition)

    # -- internals ---------------------------------------------------------------------------------

    def _known_topic(self, topic: str) -> str:
        if topic not in self._partitions:
            raise SimulationError(f"unknown source topic {topic!r}: create it with create_topic first")
        return topic

    def _transactional(self) -> Producer:
        if self._transactional_producer is None:
            producer = Producer(
                {
                    "bootstrap.servers": self.settings.source_bootstrap,
                    "transactional.id": f"offsetlake-simulator-{self.settings.source_alias}-{time.time_ns()}",
                    **_ONE_RECORD_PER_BATCH,
                }
            )
            producer.init_transactions(TIMEOUT_S)
            self._transactional_producer = producer
        return self._transactional_producer

    def _consume_source(
        self, pending: Mapping[tuple[str, int], list[_SourceRecord]]
    ) -> dict[tuple[str, int], list[Message]]:
        """Read each pending partition from the next unreplicated offset through its last produced record."""
        consumer = Consumer(
            {
                "bootstrap.servers": self.settings.source_bootstrap,
                "group.id": f"offsetlake-simulator-{self.settings.source_alias}",
                "enable.auto.commit": False,
                "enable.partition.eof": False,
            }
        )
        last_offsets = {key: records[-1].offset for key, records in pending.items()}
        consumed: dict[tuple[str, int], list[Message]] = {key: [] for key in pending}
        try:
            consumer.assign(
                [
                    TopicPartition(topic, partition, self._next_upstream_offset[(topic, partition)])
                    for topic, partition in pending
                ]
            )
            waiting = set(pending)
            deadline = time.monotonic() + TIMEOUT_S
            while waiting:
                if time.monotonic() > deadline:
                    raise SimulationError(
                        f"source records not readable within {TIMEOUT_S:g} s: {sorted(waiting)}"
                    )
                for message in consumer.consume(num_messages=500, timeout=0.5):
                    if message.error() is not None:
                        raise SimulationError(f"reading the source failed: {message.error()}")
                    key = (message.topic() or "", message.partition() or 0)
                    if key not in waiting or message.offset() > last_offsets[key]:
                        continue
                    consumed[key].append(message)
                    if message.offset() == last_offsets[key]:
                        waiting.discard(key)
        finally:
            consumer.close()
        for key, records in pending.items():
            # Ids, offsets and filter marks must read back exactly as produced.
            seen = [
                ((message.value() or b"").decode(), message.offset(), _is_filtered(message))
                for message in consumed[key]
            ]
            expected = [(record.record_id, record.offset, record.filtered) for record in records]
            if seen != expected:
                raise SimulationError(
                    f"{key}: read back {len(seen)} records, expected {len(expected)} in order"
                )
            self._next_upstream_offset[key] = records[-1].offset + 1
        return consumed

    def _write_offset_syncs(self, syncs: list[OffsetSync]) -> None:
        for sync in syncs:
            key, value = encode_offset_sync(sync)
            self._source_producer.produce(self.settings.offset_syncs_topic, key=key, value=value, partition=0)
            self._sync_store.add(sync)  # the checkpoint task reads every sync written
        _flush(self._source_producer, self.settings.offset_syncs_topic)
        self.offset_syncs.extend(syncs)

    def _check_mapping_partitions(self) -> None:
        """A mapping topic that already existed may have fewer partitions than the spread needs."""
        topic = self.settings.mapping_topic
        metadata = self._target_admin.list_topics(topic, timeout=TIMEOUT_S).topics[topic]
        if len(metadata.partitions) < self.settings.mapping_partitions:
            raise SimulationError(
                f"mapping topic {topic} already exists with {len(metadata.partitions)} partitions, "
                f"fewer than mapping_partitions={self.settings.mapping_partitions}"
            )

    def _source_groups_offsets(self, groups: list[str]) -> dict[str, dict[tuple[str, int], CommittedOffset]]:
        """Each group's committed offsets on the source, in ``groups``' order, the requests pipelined
        on one client (MM2's checkpoint task lists them one group at a time; the answers are the same)."""
        admin = AdminClient({"bootstrap.servers": self.settings.source_bootstrap})  # see commit_source_group
        found, failures = kafka_admin.list_committed_offsets_of_groups(
            admin, groups, timeout_s=TIMEOUT_S, max_in_flight=256
        )
        if failures:
            group, error = next(iter(failures.items()))
            raise SimulationError(f"reading {len(failures)} source groups' offsets failed, {group}: {error}")
        return {group: found[group] for group in groups}

    def _create_internal_topics(self) -> None:
        """MM2's internal topics (and the K2K mapping topic, when mappings are written)."""
        self._create_topics(
            self._source_admin,
            [NewTopic(self.settings.offset_syncs_topic, 1, config={"cleanup.policy": "compact"})],
        )
        self._create_topics(
            self._target_admin,
            [
                NewTopic(self.settings.checkpoints_topic, 1, config={"cleanup.policy": "compact"}),
                NewTopic(
                    self.settings.connect_offsets_topic,
                    self.settings.connect_offsets_partitions,
                    config={"cleanup.policy": "compact"},
                ),
                *(
                    [NewTopic(self.settings.mapping_topic, self.settings.mapping_partitions)]
                    if self.settings.mapped_topics
                    else []
                ),
            ],
        )
        if self.settings.mapped_topics:
            self._check_mapping_partitions()

    @staticmethod
    def _create_topics(admin: AdminClient, topics: list[NewTopic]) -> None:
        if not topics:
            return
        futures = admin.create_topics(topics, operation_timeout=TIMEOUT_S)
        for name, future in futures.items():
            try:
                future.result(timeout=TIMEOUT_S)
            except KafkaException as error:
                if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise SimulationError(f"creating topic {name} failed: {error}") from error
        _wait_for_leaders(admin, [topic.topic for topic in topics])


def _is_filtered(message: Message) -> bool:
    """The simulated ``Filter`` SMT's ``HasHeaderKey`` predicate."""
    return any(name == FILTER_HEADER for name, _ in message.headers() or [])


def _wait_for_leaders(admin: AdminClient, topics: list[str]) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        metadata = admin.list_topics(timeout=TIMEOUT_S).topics
        ready = [
            name
            for name in topics
            if name in metadata
            and metadata[name].error is None
            and metadata[name].partitions
            and all(partition.leader >= 0 for partition in metadata[name].partitions.values())
        ]
        if len(ready) == len(topics):
            return
        if time.monotonic() > deadline:
            raise SimulationError(
                f"topics without a leader after {TIMEOUT_S:g} s: {sorted(set(topics) - set(ready))}"
            )
        time.sleep(0.1)


def _flush(producer: Producer, what: str) -> None:
    if producer.flush(TIMEOUT_S) > 0:
        raise SimulationError(f"records to {what} still undelivered after {TIMEOUT_S:g} s")


def _raise_partition_errors(action: str, partitions: list[TopicPartition] | None) -> None:
    failed = [tp for tp in partitions or [] if tp.error is not None]
    if failed:
        raise SimulationError(
            f"{action}: {', '.join(f'{tp.topic}[{tp.partition}]: {tp.error}' for tp in failed)}"
        )
