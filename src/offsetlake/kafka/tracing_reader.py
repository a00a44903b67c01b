"""Translations from K2K's record-tracing headers, searched on the target cluster alone.

Each request is a source group's committed position U on a source partition and the target
partition K2K replicated it to; offsetlake.k2k.tracing does the search, this module gives it its
reads. The requests of one (target partition, source partition) are searched together
(:func:`offsetlake.k2k.tracing.search_translations`: shared probes, or one sequential read when
there are many), so thousands of groups cost about one search per partition, not one per group.
Partitions are searched by a small pool, each worker with its own assign-only consumers (never
joins, never commits): one for probes (re-assigned at each probe's start offset, small fetches,
reading forward to a record of the sought source partition, the probe's end, the partition's end
or a bounded scan), one for sequential reads (large fetches). Requests many groups share are
searched once. Nothing here raises for a cluster or partition problem: it is the request's reason,
and once the target has not answered, the requests left get that reason at once instead of each
costing another timeout.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any, Final

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from offsetlake.k2k.reverse_tracing import NO_TRACED_RECORDS, ReverseTraced, reverse_search
from offsetlake.k2k.routing import TracingRoute
from offsetlake.k2k.tracing import (
    DEFAULT_MAX_PROBES,
    SCAN_RECORDS_PER_PROBE,
    MixedPartitionsError,
    ProbeResult,
    Scanned,
    ScanResult,
    TracedRecord,
    TracingHeaderNames,
    TracingTranslation,
    search_translations,
    sought_record,
    traced_origin,
)
from offsetlake.kafka import clients
from offsetlake.kafka.group_offsets import GroupOffset
from offsetlake.kafka.read_to_end import reader_consumer_config

DEFAULT_SCAN_LIMIT: Final = 500
"""Records one probe reads past before it stops (a long stretch of untraced records)."""
DEFAULT_CONCURRENCY: Final = 4
"""Partitions searched at once: a probe mostly waits on the broker, a sequential read mostly
parses headers in Python (one core), so a few workers overlap the waits without crowding it."""
_POLL_SLICE_S: Final = 0.2
_SCAN_BATCH: Final = 1000
_SMALL_FETCHES: Final = {
    # A probe reads a few records and moves on: prefetching megabytes per re-assignment is waste.
    "max.partition.fetch.bytes": 65_536,
    "queued.max.messages.kbytes": 1024,
    # Measured on the local broker: each probe's first fetch took the whole fetch wait (librdkafka's
    # default 500 ms: 3.6 s per search; 50 ms: 0.42 s; 10 ms: 0.09 s). It only bounds an empty fetch.
    "fetch.wait.max.ms": 10,
}
_LARGE_FETCHES: Final = {
    # A sequential read: measured 65 us a record with the probes' 64 KiB fetches, 18-22 us with
    # librdkafka's default 1 MiB (then bound by parsing headers); the queue bounded to 8 MiB.
    "queued.max.messages.kbytes": 8192,
    "fetch.wait.max.ms": 10,
}


@dataclass(frozen=True)
class TracingRequest:
    """Translate the committed position ``upstream_offset`` of source ``source_topic[source_partition]``
    through target ``target_topic[target_partition]``."""

    target_topic: str
    target_partition: int
    source_topic: str
    source_partition: int
    upstream_offset: int

    @property
    def where(self) -> str:
        return f"{self.source_topic}[{self.source_partition}] in {self.target_topic}[{self.target_partition}]"


@dataclass(frozen=True)
class PartitionCost:
    """What searching one (target partition, source partition) cost, shared by its positions."""

    positions: int = 1
    """Distinct positions searched together."""
    probes: int = 0
    """Probes made (each a re-assignment and a small fetch)."""
    scanned: int = 0
    """Records read by its one sequential read (0: none)."""
    seconds: float = 0.0


@dataclass(frozen=True)
class TracingResult:
    request: TracingRequest
    translation: TracingTranslation
    seconds: float
    """This request's share of its partition's search time."""
    cost: PartitionCost = field(default_factory=PartitionCost)


@dataclass(frozen=True)
class SearchLimits:
    """What one partition's searches may cost: wall time (all its positions together), probes on
    each position's path, records one probe reads past; how many partitions are searched at once;
    where one sequential read replaces the searches (offsetlake.k2k.tracing.scan_pays); and what
    one call may cost in all (``budget_s``, None: no bound beyond each partition's)."""

    timeout_s: float = 10.0
    max_probes: int = DEFAULT_MAX_PROBES
    scan_limit: int = DEFAULT_SCAN_LIMIT
    budget_s: float | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    records_per_probe: int = SCAN_RECORDS_PER_PROBE

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {self.concurrency}")


class _UnreachableError(Exception):
    """The target did not answer a metadata or offsets request in time."""


class _ReadFailedError(Exception):
    """A fetch failed for a reason other than time (e.g. the offset was deleted meanwhile)."""


@dataclass(frozen=True)
class _PartitionKey:
    """The requests searched together: one source partition's positions in one target partition."""

    target_topic: str
    target_partition: int
    source_topic: str
    source_partition: int

    @classmethod
    def of(cls, request: TracingRequest) -> _PartitionKey:
        return cls(
            request.target_topic, request.target_partition, request.source_topic, request.source_partition
        )

    @property
    def where(self) -> str:
        return f"{self.source_topic}[{self.source_partition}] in {self.target_topic}[{self.target_partition}]"


def translate_from_tracing_headers(
    config: Mapping[str, Any],
    requests: Iterable[TracingRequest],
    names: TracingHeaderNames,
    limits: SearchLimits = SearchLimits(),
) -> list[TracingResult]:
    """One result per distinct request, in their order (``config``: the target's librdkafka
    settings), each partition's searches bounded by ``limits``, and the whole call by
    ``limits.budget_s``: the partitions left when it runs out get that reason without a fetch."""
    unique = list(dict.fromkeys(requests))
    by_partition: dict[_PartitionKey, list[TracingRequest]] = defaultdict(list)
    for request in unique:
        by_partition[_PartitionKey.of(request)].append(request)
    if not by_partition:
        return []
    call = _Call(limits)
    workers = min(limits.concurrency, len(by_partition))
    consumer_config = {**reader_consumer_config(config, fail_on_data_loss=True), **_SMALL_FETCHES}
    scan_config = {**reader_consumer_config(config, fail_on_data_loss=True), **_LARGE_FETCHES}
    found: dict[TracingRequest, TracingResult] = {}
    with ExitStack() as stack:
        readers: queue.Queue[_Readers] = queue.Queue()
        for _ in range(workers):
            readers.put(_Readers(stack, consumer_config, scan_config))

        def search(key: _PartitionKey, group: Sequence[TracingRequest]) -> list[TracingResult]:
            reader = readers.get()
            try:
                return call.search(reader, key, group, names)
            finally:
                readers.put(reader)

        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="k2k-tracing") as pool:
            for results in pool.map(search, by_partition, by_partition.values()):
                found |= {result.request: result for result in results}
    return [found[request] for request in unique]


class _Readers:
    """One worker's consumers: probes' (small fetches) and, made when first needed, reads' (large)."""

    def __init__(
        self, stack: ExitStack, probe_config: Mapping[str, Any], scan_config: Mapping[str, Any]
    ) -> None:
        self.stack, self.scan_config = stack, scan_config
        self.probes = stack.enter_context(clients.consumer(probe_config))
        self._scans: Consumer | None = None

    @property
    def scans(self) -> Consumer:
        if self._scans is None:
            self._scans = self.stack.enter_context(clients.consumer(self.scan_config))
        return self._scans

    @contextmanager
    def assigned(self) -> Iterator[None]:
        try:
            yield
        finally:
            self.probes.unassign()
            if self._scans is not None:
                self._scans.unassign()


class _Call:
    """What the partitions searched in one call share: the budget and why the rest are not searched."""

    def __init__(self, limits: SearchLimits) -> None:
        self.limits = limits
        self.budget_ends = None if limits.budget_s is None else time.monotonic() + limits.budget_s
        self._stopped: str | None = None
        self._budget_spent = False
        """Whether the call's budget (not the target) stopped it: those searches were cut short."""
        self._lock = threading.Lock()
        self.scan_turn = threading.Lock()
        """Held by the one sequential read running (_PartitionSearch.scan)."""

    def stop(self, reason: str, *, budget: bool = False) -> str:
        """The first reason to stop wins: every search not yet started gets it."""
        with self._lock:
            if self._stopped is None:
                self._stopped, self._budget_spent = reason, budget
            return self._stopped

    def search(
        self,
        readers: _Readers,
        key: _PartitionKey,
        group: Sequence[TracingRequest],
        names: TracingHeaderNames,
    ) -> list[TracingResult]:
        started = time.monotonic()
        if self.budget_ends is not None and started > self.budget_ends:
            self.stop(f"not searched: this call's budget of {self.limits.budget_s:g} s ran out", budget=True)
        stopped = self._stopped
        if stopped is None:
            try:
                search = _PartitionSearch(readers, key, names, self.limits, self.scan_turn)
                return search.run(group, started)
            except _UnreachableError as error:
                stopped = self.stop(f"target unreachable: {error}")
        cost = PartitionCost(positions=len(group), seconds=time.monotonic() - started)
        share = cost.seconds / len(group)
        return [
            TracingResult(
                request, TracingTranslation(None, reason=stopped, cut_short=self._budget_spent), share, cost
            )
            for request in group
        ]


class _PartitionSearch:
    """One partition's searches: its worker's probes and sequential read, within its limits."""

    def __init__(
        self,
        readers: _Readers,
        key: _PartitionKey,
        names: TracingHeaderNames,
        limits: SearchLimits,
        scan_turn: threading.Lock,
    ) -> None:
        self.readers, self.key, self.names, self.limits = readers, key, names, limits
        self.scan_turn = scan_turn
        self.deadline = time.monotonic() + limits.timeout_s
        self.partition = TopicPartition(key.target_topic, key.target_partition)

    def run(self, group: Sequence[TracingRequest], started: float) -> list[TracingResult]:
        uppers = [request.upstream_offset for request in group]
        cost = PartitionCost(positions=len(group))
        answers: Mapping[int, TracingTranslation]
        with self.readers.assigned():
            missing = self._missing_partition()
            if missing is not None:
                answers = dict.fromkeys(uppers, TracingTranslation(None, reason=missing))
            else:
                try:
                    batch = search_translations(
                        self.probe,
                        self.scan,
                        *self._watermarks(),
                        uppers,
                        where=self.key.where,
                        max_probes=self.limits.max_probes,
                        expired=self.expired,
                        records_per_probe=self.limits.records_per_probe,
                    )
                    answers = batch.translations
                    cost = PartitionCost(len(group), batch.probes, batch.scanned)
                except _ReadFailedError as error:
                    answers = dict.fromkeys(
                        uppers, TracingTranslation(None, reason=f"reading {self.key.where} failed: {error}")
                    )
                except MixedPartitionsError as error:
                    answers = dict.fromkeys(
                        uppers, TracingTranslation(None, reason=f"{self.key.where}: {error}")
                    )
        seconds = time.monotonic() - started
        cost = PartitionCost(cost.positions, cost.probes, cost.scanned, seconds)
        share = seconds / len(group)
        return [TracingResult(request, answers[request.upstream_offset], share, cost) for request in group]

    def expired(self) -> bool:
        return time.monotonic() >= self.deadline

    def _watermarks(self) -> tuple[int, int]:
        try:
            return self.readers.probes.get_watermark_offsets(
                self.partition, timeout=self.limits.timeout_s, cached=False
            )
        except KafkaException as error:
            raise _UnreachableError(
                f"listing the offsets of {self.key.where}: {error.args[0].str()}"
            ) from error

    def _missing_partition(self) -> str | None:
        """Why the target partition cannot be searched (no topic, no such partition), or None."""
        key = self.key
        try:
            metadata = self.readers.probes.list_topics(key.target_topic, timeout=self.limits.timeout_s)
        except KafkaException as error:
            raise _UnreachableError(f"listing topic {key.target_topic}: {error.args[0].str()}") from error
        topic = metadata.topics.get(key.target_topic)
        if topic is None or topic.error is not None:
            return f"target topic {key.target_topic} does not exist ({key.where})"
        if key.target_partition not in topic.partitions:
            return (
                f"target topic {key.target_topic} has no partition {key.target_partition} "
                f"({len(topic.partitions)} partitions; K2K is assumed to keep the source partition)"
            )
        return None

    def _sought(self, message: Message) -> TracedRecord | None:
        origin = traced_origin(message.headers(), self.names)
        return sought_record(origin, self.key.source_topic, self.key.source_partition, message.offset())

    def _remaining(self) -> float:
        return min(_POLL_SLICE_S, max(0.0, self.deadline - time.monotonic()))

    def probe(self, start: int, end: int) -> ProbeResult:
        """The first record of the sought source partition in [start, end), None, or where it stopped."""
        consumer = self.readers.probes
        consumer.assign([TopicPartition(self.key.target_topic, self.key.target_partition, start)])
        scanned, next_offset = 0, start
        while not self.expired():
            # poll, not consume(n): consume waits out its timeout unless n records arrive.
            message = consumer.poll(self._remaining())
            if message is None or not _readable(message):
                continue
            offset = message.offset()
            if offset < start:  # a fetch of the previous assignment still queued
                continue
            if offset >= end or _at_end(message):
                return None
            found = self._sought(message)
            if found is not None:
                return found
            scanned, next_offset = scanned + 1, offset + 1
            if scanned >= self.limits.scan_limit:
                return Scanned(next_offset)
        return Scanned(next_offset)

    def scan(self, start: int, end: int) -> ScanResult:
        """[start, end) read once, in large fetches, until done or the partition's time is up.

        One read at a time in a call: a read is bound by parsing headers in Python (one core), so
        reads side by side only slow each other past their partitions' time. The wait for its turn
        does not count against the partition's time."""
        waiting = time.monotonic()
        with self.scan_turn:
            self.deadline += time.monotonic() - waiting
            return self._scan(start, end)

    def _scan(self, start: int, end: int) -> ScanResult:
        consumer = self.readers.scans
        consumer.assign([TopicPartition(self.key.target_topic, self.key.target_partition, start)])
        records: list[TracedRecord] = []
        read, until = 0, start
        while until < end and not self.expired():
            for message in consumer.consume(_SCAN_BATCH, self._remaining()):
                if not _readable(message):
                    continue
                if _at_end(message):
                    return ScanResult(tuple(records), end, read)  # nothing more up to the log end
                offset = message.offset()
                if offset < start:
                    continue
                if offset >= end:
                    return ScanResult(tuple(records), end, read)
                read, until = read + 1, offset + 1
                found = self._sought(message)
                if found is not None:
                    records.append(found)
        return ScanResult(tuple(records), until, read)


def _readable(message: Message) -> bool:
    """A record, or the partition's end; False for a passing error; raises for a failed read."""
    error = message.error()
    if error is None or error.code() == KafkaError._PARTITION_EOF:
        return True
    if error.fatal() or not error.retriable():
        raise _ReadFailedError(error.str())
    return False


def _at_end(message: Message) -> bool:
    error = message.error()
    return error is not None and error.code() == KafkaError._PARTITION_EOF


@dataclass(frozen=True)
class TracingLookup:
    """One snapshot row's search: what k2k_tracing_lookups records for it."""

    snapshot: GroupOffset
    request: TracingRequest
    result: TracingResult


def look_up_snapshot(
    config: Mapping[str, Any],
    snapshot: Iterable[GroupOffset],
    route: TracingRoute,
    names: TracingHeaderNames,
    limits: SearchLimits = SearchLimits(),
) -> list[TracingLookup]:
    """Every committed position of ``snapshot`` searched on the target (``config``) through
    ``route``; a row with no committed offset (-1) has nothing to translate and is left out."""
    rows = [row for row in snapshot if row.committed_offset >= 0]
    requests = [
        TracingRequest(
            route.target_topic(row.topic), row.partition, row.topic, row.partition, row.committed_offset
        )
        for row in rows
    ]
    found = {
        result.request: result for result in translate_from_tracing_headers(config, requests, names, limits)
    }
    return [TracingLookup(row, request, found[request]) for row, request in zip(rows, requests, strict=True)]


@dataclass(frozen=True)
class ReverseTracingRequest:
    """Failback: the source position of the committed target position ``downstream_offset`` on
    ``target_topic[target_partition]``, for the records of ``source_topic[source_partition]``."""

    target_topic: str
    target_partition: int
    source_topic: str
    source_partition: int
    downstream_offset: int


def reverse_from_tracing_headers(
    config: Mapping[str, Any],
    requests: Iterable[ReverseTracingRequest],
    names: TracingHeaderNames,
    limits: SearchLimits = SearchLimits(),
) -> dict[ReverseTracingRequest, ReverseTraced]:
    """Each request's answer (offsetlake.k2k.reverse_tracing), searched on the cluster the records
    were replicated to (``config``), one partition at a time within ``limits.timeout_s``; a
    partition or cluster problem is the answer's reason, never an exception."""
    by_partition: dict[_PartitionKey, list[ReverseTracingRequest]] = defaultdict(list)
    for request in dict.fromkeys(requests):
        key = _PartitionKey(
            request.target_topic, request.target_partition, request.source_topic, request.source_partition
        )
        by_partition[key].append(request)
    answers: dict[ReverseTracingRequest, ReverseTraced] = {}
    if not by_partition:
        return answers
    probe_config = {**reader_consumer_config(config, fail_on_data_loss=True), **_SMALL_FETCHES}
    scan_config = {**reader_consumer_config(config, fail_on_data_loss=True), **_LARGE_FETCHES}
    stopped: str | None = None
    with ExitStack() as stack:
        readers = _Readers(stack, probe_config, scan_config)
        for key, group in by_partition.items():
            if stopped is None:
                try:
                    answers |= _reverse_partition(readers, key, group, names, limits)
                    continue
                except _UnreachableError as error:
                    stopped = f"cluster unreachable: {error}"
                except _ReadFailedError as error:
                    answers |= dict.fromkeys(group, _no_answer(f"reading {key.where} failed: {error}"))
                    continue
            answers |= dict.fromkeys(group, _no_answer(stopped))
    return answers


def _reverse_partition(
    readers: _Readers,
    key: _PartitionKey,
    group: Sequence[ReverseTracingRequest],
    names: TracingHeaderNames,
    limits: SearchLimits,
) -> dict[ReverseTracingRequest, ReverseTraced]:
    search = _PartitionSearch(readers, key, names, limits, threading.Lock())
    with readers.assigned():
        missing = search._missing_partition()
        if missing is not None:
            return dict.fromkeys(group, _no_answer(missing))
        low, high = search._watermarks()
        return {
            request: reverse_search(
                search.probe,
                low,
                high,
                request.downstream_offset,
                where=key.where,
                max_probes=limits.max_probes,
                expired=search.expired,
            )
            for request in group
        }


def _no_answer(reason: str) -> ReverseTraced:
    return ReverseTraced(None, untranslated=NO_TRACED_RECORDS, reason=reason)
