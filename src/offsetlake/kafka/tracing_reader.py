"""Translations from K2K's record-tracing headers, searched on the target cluster alone.

Each request is a source group's committed position U on a source partition and the target
partition K2K replicated it to; offsetlake.k2k.tracing does the search, this module gives it its
probes: one assign-only consumer (never joins, never commits) is re-assigned at each probe's start
offset and reads forward, small fetches, until a record of the sought source partition, the probe's
end, the partition's end (librdkafka's partition-EOF event) or a bounded scan. Requests many groups
share are searched once. Nothing here raises for a cluster or partition problem: it is the
request's reason, and once the target has not answered, the requests left get that reason at once
instead of each costing another timeout.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from offsetlake.k2k.routing import TracingRoute
from offsetlake.k2k.tracing import (
    DEFAULT_MAX_PROBES,
    ProbeResult,
    Scanned,
    TracedRecord,
    TracingHeaderNames,
    TracingTranslation,
    search_translation,
    traced_origin,
)
from offsetlake.kafka import clients
from offsetlake.kafka.group_offsets import GroupOffset
from offsetlake.kafka.range_reader import reader_consumer_config

DEFAULT_SCAN_LIMIT: Final = 500
"""Records one probe reads past before it stops (a long stretch of untraced records)."""
_POLL_SLICE_S: Final = 0.2
_SMALL_FETCHES: Final = {
    # A probe reads a few records and moves on: prefetching megabytes per re-assignment is waste.
    "max.partition.fetch.bytes": 65_536,
    "queued.max.messages.kbytes": 1024,
    # Measured on the local broker: each probe's first fetch took the whole fetch wait (librdkafka's
    # default 500 ms: 3.6 s per search; 50 ms: 0.42 s; 10 ms: 0.09 s). It only bounds an empty fetch.
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
class TracingResult:
    request: TracingRequest
    translation: TracingTranslation
    seconds: float


@dataclass(frozen=True)
class SearchLimits:
    """What one request's search may cost: wall time, fetches, records one probe reads past; and
    what one call may cost in all (``budget_s``, None: no bound beyond each search's)."""

    timeout_s: float = 10.0
    max_probes: int = DEFAULT_MAX_PROBES
    scan_limit: int = DEFAULT_SCAN_LIMIT
    budget_s: float | None = None


class _UnreachableError(Exception):
    """The target did not answer a metadata or offsets request in time."""


class _ReadFailedError(Exception):
    """A fetch failed for a reason other than time (e.g. the offset was deleted meanwhile)."""


def translate_from_tracing_headers(
    config: Mapping[str, Any],
    requests: Iterable[TracingRequest],
    names: TracingHeaderNames,
    limits: SearchLimits = SearchLimits(),
) -> list[TracingResult]:
    """One result per distinct request (``config``: the target's librdkafka settings), each search
    bounded by ``limits``, and the whole call by ``limits.budget_s``: the requests left when it runs
    out get that reason without a fetch."""
    unique = list(dict.fromkeys(requests))
    if not unique:
        return []
    results: list[TracingResult] = []
    stopped: str | None = None
    """Why the requests left are not searched (the target stopped answering, the budget ran out)."""
    consumer_config = {**reader_consumer_config(config, fail_on_data_loss=True), **_SMALL_FETCHES}
    budget_ends = None if limits.budget_s is None else time.monotonic() + limits.budget_s
    with clients.consumer(consumer_config) as consumer:
        for request in unique:
            started = time.monotonic()
            if stopped is None and budget_ends is not None and started > budget_ends:
                stopped = f"not searched: this call's budget of {limits.budget_s:g} s ran out"
            if stopped is None:
                try:
                    translation = _PartitionSearch(consumer, request, names, limits).run()
                except _UnreachableError as error:
                    stopped = f"target unreachable: {error}"
            if stopped is not None:
                translation = TracingTranslation(None, reason=stopped)
            results.append(TracingResult(request, translation, time.monotonic() - started))
    return results


class _PartitionSearch:
    """One request's search: its consumer's probes over the target partition, within its limits."""

    def __init__(
        self, consumer: Consumer, request: TracingRequest, names: TracingHeaderNames, limits: SearchLimits
    ) -> None:
        self.consumer, self.request, self.names, self.limits = consumer, request, names, limits
        self.deadline = time.monotonic() + limits.timeout_s

    def run(self) -> TracingTranslation:
        missing = self._missing_partition()
        if missing is not None:
            return TracingTranslation(None, reason=missing)
        request = self.request
        partition = TopicPartition(request.target_topic, request.target_partition)
        try:
            low, high = self.consumer.get_watermark_offsets(
                partition, timeout=self.limits.timeout_s, cached=False
            )
        except KafkaException as error:
            raise _UnreachableError(
                f"listing the offsets of {request.where}: {error.args[0].str()}"
            ) from error
        try:
            return search_translation(
                self.probe,
                low,
                high,
                request.upstream_offset,
                where=request.where,
                max_probes=self.limits.max_probes,
                expired=self.expired,
            )
        except _ReadFailedError as error:
            return TracingTranslation(None, reason=f"reading {request.where} failed: {error}")
        finally:
            self.consumer.unassign()

    def expired(self) -> bool:
        return time.monotonic() >= self.deadline

    def _missing_partition(self) -> str | None:
        """Why the target partition cannot be searched (no topic, no such partition), or None."""
        request = self.request
        try:
            metadata = self.consumer.list_topics(request.target_topic, timeout=self.limits.timeout_s)
        except KafkaException as error:
            raise _UnreachableError(f"listing topic {request.target_topic}: {error.args[0].str()}") from error
        topic = metadata.topics.get(request.target_topic)
        if topic is None or topic.error is not None:
            return f"target topic {request.target_topic} does not exist ({request.where})"
        if request.target_partition not in topic.partitions:
            return (
                f"target topic {request.target_topic} has no partition {request.target_partition} "
                f"({len(topic.partitions)} partitions; K2K is assumed to keep the source partition)"
            )
        return None

    def probe(self, start: int, end: int) -> ProbeResult:
        """The first record of the request's source partition in [start, end), None, or where it stopped."""
        request = self.request
        self.consumer.assign([TopicPartition(request.target_topic, request.target_partition, start)])
        scanned, next_offset = 0, start
        while not self.expired():
            # poll, not consume(n): consume waits out its timeout unless n records arrive.
            message = self.consumer.poll(min(_POLL_SLICE_S, max(0.0, self.deadline - time.monotonic())))
            if message is None:
                continue
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    return None
                if error.fatal() or not error.retriable():
                    raise _ReadFailedError(error.str())
                continue
            offset = message.offset()
            if offset < start:  # a fetch of the previous assignment still queued
                continue
            if offset >= end:
                return None
            origin = traced_origin(message.headers(), self.names)
            if origin is not None and origin[:2] == (request.source_topic, request.source_partition):
                return TracedRecord(offset, origin[2])
            scanned, next_offset = scanned + 1, offset + 1
            if scanned >= self.limits.scan_limit:
                return Scanned(next_offset)
        return Scanned(next_offset)


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
