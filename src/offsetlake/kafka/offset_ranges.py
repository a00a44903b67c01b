"""Pure planning for the Kafka source: which offsets of which partitions a read covers.

Kept free of Kafka clients and Spark so every decision (subscriptions, starting/ending offsets,
data-loss handling, rate limiting, splitting) is unit-testable; data_sources/offsetlake_kafka.py
only feeds it broker metadata and turns its ranges into Spark input partitions. Option names and semantics
follow Spark's built-in Kafka source so the pipeline can switch between the two.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from offsetlake.errors import ExternalError, UsageError

EARLIEST = -2
LATEST = -1

PartitionKey = tuple[str, int]
"""(topic, partition)"""

# Never matched by subscribePattern, as the Java consumer's exclude.internal.topics=true does.
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})

_log = logging.getLogger(__name__)


class OffsetOptionError(UsageError, ValueError):
    """An offsets or subscription option that cannot be understood."""


class DataLossError(ExternalError):
    """Records the query should have read are gone; raised only with failOnDataLoss=true."""


@dataclass(frozen=True)
class OffsetRange:
    """Offsets [start, end) of one topic-partition; ``end`` is exclusive, like Kafka's log end."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class Subscription:
    """Exactly one of Spark's ``subscribe``, ``subscribePattern`` or ``assign``."""

    topics: frozenset[str] = frozenset()
    pattern: str | None = None
    assigned: frozenset[PartitionKey] = frozenset()

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> Subscription:
        # Spark hands Python data sources their options with lower-cased names.
        lowered = {name.lower(): value for name, value in options.items()}
        given = [name for name in ("subscribe", "subscribePattern", "assign") if lowered.get(name.lower())]
        if len(given) != 1:
            raise OffsetOptionError(
                f"set exactly one of subscribe, subscribePattern or assign (got {given or 'none'})"
            )
        (name,) = given
        value = lowered[name.lower()]
        if name == "subscribe":
            topics = frozenset(topic.strip() for topic in value.split(",") if topic.strip())
            if not topics:
                raise OffsetOptionError("subscribe names no topic")
            return cls(topics=topics)
        if name == "subscribePattern":
            try:
                re.compile(value)
            except re.error as error:
                raise OffsetOptionError(
                    f"subscribePattern {value!r} is not a valid regex: {error}"
                ) from error
            return cls(pattern=value)
        return cls(assigned=frozenset(parse_assign(value)))

    def select(self, partition_counts: Mapping[str, int]) -> list[PartitionKey]:
        """The subscribed partitions among the cluster's topics (topic -> partition count).

        Subscribed topics that do not exist yet select nothing (a later trigger picks them up);
        an assigned partition that does not exist is an error, as it would never be read.
        """
        if self.assigned:
            missing = sorted(key for key in self.assigned if key[1] >= partition_counts.get(key[0], 0))
            if missing:
                raise OffsetOptionError(f"assigned partitions do not exist: {_names(missing)}")
            return sorted(self.assigned)
        if self.pattern is not None:
            pattern = re.compile(self.pattern)
            topics = [t for t in partition_counts if t not in INTERNAL_TOPICS and pattern.fullmatch(t)]
        else:
            topics = [t for t in partition_counts if t in self.topics]
        return sorted((topic, p) for topic in topics for p in range(partition_counts[topic]))


@dataclass(frozen=True)
class OffsetsSpec:
    """startingOffsets / endingOffsets: a default (earliest or latest) plus per-partition values."""

    default: int
    specific: Mapping[PartitionKey, int]

    @classmethod
    def parse(cls, text: str | None, *, option: str, default: int) -> OffsetsSpec:
        """Parse ``earliest``, ``latest`` or ``{"topic": {"0": 23, "1": -2}}`` (-2 earliest, -1 latest)."""
        if text is None or not text.strip():
            return cls(default=default, specific={})
        keyword = text.strip().lower()
        if keyword == "earliest":
            return cls(default=EARLIEST, specific={})
        if keyword == "latest":
            return cls(default=LATEST, specific={})
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError as error:
            raise OffsetOptionError(
                f'{option} must be earliest, latest or JSON like {{"topic": {{"0": 23, "1": -2}}}}: {error}'
            ) from error
        specific = _parse_partition_offsets(parsed, option)
        bad = {key: offset for key, offset in specific.items() if offset < EARLIEST}
        if bad:
            raise OffsetOptionError(f"{option} offsets must be >= -2 (-2 earliest, -1 latest): {bad}")
        return cls(default=default, specific=specific)

    def resolve(
        self,
        partitions: Iterable[PartitionKey],
        log_start: Mapping[PartitionKey, int],
        log_end: Mapping[PartitionKey, int],
        *,
        option: str,
    ) -> dict[PartitionKey, int]:
        """Concrete offsets for ``partitions``; partitions the JSON does not name take the default."""
        wanted = list(partitions)
        unknown = sorted(set(self.specific) - set(wanted))
        if unknown:
            raise OffsetOptionError(f"{option} names partitions that are not subscribed: {_names(unknown)}")
        resolved = {}
        for key in wanted:
            offset = self.specific.get(key, self.default)
            if offset == EARLIEST:
                offset = log_start[key]
            elif offset == LATEST:
                offset = log_end[key]
            resolved[key] = offset
        return resolved


def parse_assign(text: str) -> list[PartitionKey]:
    """``{"topicA": [0, 1], "topicB": [2]}`` -> [(topicA, 0), (topicA, 1), (topicB, 2)]."""
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as error:
        raise OffsetOptionError(f'assign must be JSON like {{"topic": [0, 1]}}: {error}') from error
    if not isinstance(parsed, dict) or not parsed:
        raise OffsetOptionError('assign must be a non-empty JSON object like {"topic": [0, 1]}')
    keys = []
    for topic, partitions in parsed.items():
        if not isinstance(partitions, list) or not all(_is_int(p) and p >= 0 for p in partitions):
            raise OffsetOptionError(f"assign[{topic!r}] must be a list of partition numbers")
        keys.extend((topic, p) for p in partitions)
    return sorted(set(keys))


def effective_start(
    key: PartitionKey,
    requested: int,
    log_start: int,
    end: int,
    *,
    fail_on_data_loss: bool,
) -> int:
    """Where reading [requested, end) really starts, given the log now starts at ``log_start``.

    Records below the log start were deleted (retention) before being read; an end below the
    requested start means the partition was truncated or the topic recreated. Both lose data:
    an error with failOnDataLoss, else the read continues from the log start, as Spark's does.
    """
    if requested < log_start:
        report_data_loss(
            fail_on_data_loss,
            f"{_names([key])}: offsets {requested}..{log_start - 1} were deleted before they were read "
            f"(log start is {log_start})",
        )
        return log_start
    if requested > end:
        report_data_loss(
            fail_on_data_loss,
            f"{_names([key])}: offset went back from {requested} to {end} "
            "(partition truncated or topic recreated)",
        )
        return log_start
    return requested


def plan_batch_ranges(
    partitions: Iterable[PartitionKey],
    log_start: Mapping[PartitionKey, int],
    log_end: Mapping[PartitionKey, int],
    starting: OffsetsSpec,
    ending: OffsetsSpec,
    *,
    fail_on_data_loss: bool,
) -> list[OffsetRange]:
    """The ranges a batch read covers, one per partition (empty ones included, not yet split)."""
    if ending.default == EARLIEST or EARLIEST in ending.specific.values():
        raise OffsetOptionError("endingOffsets cannot be earliest (-2)")
    wanted = list(partitions)
    start = starting.resolve(wanted, log_start, log_end, option="startingOffsets")
    end = ending.resolve(wanted, log_start, log_end, option="endingOffsets")
    ranges = []
    for key in wanted:
        if end[key] > log_end[key]:
            raise OffsetOptionError(
                f"endingOffsets {end[key]} for {_names([key])} is past the log end {log_end[key]}"
            )
        if start[key] > end[key]:
            raise OffsetOptionError(
                f"startingOffsets {start[key]} for {_names([key])} is after endingOffsets {end[key]}"
            )
        begin = effective_start(
            key, start[key], log_start[key], end[key], fail_on_data_loss=fail_on_data_loss
        )
        ranges.append(OffsetRange(key[0], key[1], begin, end[key]))
    return ranges


def next_stream_end(
    start: Mapping[PartitionKey, int],
    log_start: Mapping[PartitionKey, int],
    log_end: Mapping[PartitionKey, int],
    *,
    fail_on_data_loss: bool,
    max_offsets: int | None = None,
    target: Mapping[PartitionKey, int] | None = None,
) -> dict[PartitionKey, int]:
    """The end offsets of the next micro-batch (DataSourceStreamReader.latestOffset).

    ``log_start``/``log_end`` cover the partitions subscribed now; new ones are read from their
    log start. ``target`` is the Trigger.AvailableNow snapshot that the batch must not pass.
    """
    report_vanished(start, log_end, fail_on_data_loss=fail_on_data_loss)
    end = dict(log_end)
    if target is not None:
        end = {key: min(offset, target[key]) for key, offset in end.items() if key in target}
    if max_offsets is not None:
        readable_start = {
            key: _readable_start(start.get(key, log_start[key]), log_start[key], log_end[key]) for key in end
        }
        end = cap_offsets(readable_start, end, max_offsets)
    return end


def report_vanished(
    start: Mapping[PartitionKey, int], current: Mapping[PartitionKey, int], *, fail_on_data_loss: bool
) -> None:
    """Partitions the stream had that the cluster no longer has are data loss."""
    vanished = sorted(set(start) - set(current))
    if vanished:
        report_data_loss(fail_on_data_loss, f"partitions disappeared: {_names(vanished)}")


def plan_stream_ranges(
    start: Mapping[PartitionKey, int],
    end: Mapping[PartitionKey, int],
    log_start: Mapping[PartitionKey, int],
    *,
    fail_on_data_loss: bool,
) -> list[OffsetRange]:
    """The ranges of one micro-batch: partitions new since ``start`` are read from their log start."""
    ranges = []
    for key, stop in end.items():
        requested = start.get(key, log_start[key])
        begin = effective_start(key, requested, log_start[key], stop, fail_on_data_loss=fail_on_data_loss)
        ranges.append(OffsetRange(key[0], key[1], begin, stop))
    return ranges


def _readable_start(requested: int, log_start: int, log_end: int) -> int:
    """Where a read will begin once data loss (if allowed) has been skipped."""
    return requested if log_start <= requested <= log_end else log_start


def split_ranges(ranges: Iterable[OffsetRange], max_records_per_partition: int) -> list[OffsetRange]:
    """Drop empty ranges and cut large ones into near-equal pieces of at most the given size."""
    if max_records_per_partition < 1:
        raise OffsetOptionError("maxRecordsPerPartition must be >= 1")
    pieces = []
    for offset_range in sorted(ranges, key=lambda r: (r.topic, r.partition, r.start)):
        if offset_range.size <= 0:
            continue
        count = math.ceil(offset_range.size / max_records_per_partition)
        bounds = [offset_range.start + offset_range.size * i // count for i in range(count + 1)]
        pieces.extend(
            OffsetRange(offset_range.topic, offset_range.partition, lo, hi)
            for lo, hi in itertools.pairwise(bounds)
        )
    return pieces


def cap_offsets(
    start: Mapping[PartitionKey, int], end: Mapping[PartitionKey, int], max_offsets: int
) -> dict[PartitionKey, int]:
    """Move at most ``max_offsets`` offsets past ``start`` in total (maxOffsetsPerTrigger).

    Each partition gets a share proportional to its backlog (largest remainder, so the total is
    exact). ``start`` must cover every partition of ``end`` (new partitions at their log start).
    """
    if max_offsets < 1:
        raise OffsetOptionError("maxOffsetsPerTrigger must be >= 1")
    backlog = {key: max(0, offset - start[key]) for key, offset in end.items()}
    total = sum(backlog.values())
    if total <= max_offsets:
        return dict(end)
    shares = {key: size * max_offsets / total for key, size in backlog.items()}
    taken = {key: math.floor(share) for key, share in shares.items()}
    leftover = max_offsets - sum(taken.values())
    by_remainder = sorted(shares, key=lambda key: (taken[key] - shares[key], key))
    for key in by_remainder[:leftover]:
        taken[key] += 1
    return {key: end[key] if backlog[key] == 0 else start[key] + taken[key] for key in end}


def to_stream_offset(offsets: Mapping[PartitionKey, int]) -> dict[str, dict[str, int]]:
    """Spark's checkpoint JSON shape for Kafka offsets: {topic: {"partition": next_offset}}."""
    nested: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        nested.setdefault(topic, {})[str(partition)] = offset
    return nested


def from_stream_offset(offset: Mapping[str, Mapping[str, int]]) -> dict[PartitionKey, int]:
    return _parse_partition_offsets(offset, "streaming offset")


def _parse_partition_offsets(parsed: object, option: str) -> dict[PartitionKey, int]:
    if not isinstance(parsed, Mapping):
        raise OffsetOptionError(f'{option} must be a JSON object like {{"topic": {{"0": 23}}}}')
    offsets = {}
    for topic, partitions in parsed.items():
        if not isinstance(partitions, Mapping):
            raise OffsetOptionError(f'{option}[{topic!r}] must be an object like {{"0": 23}}')
        for partition, offset in partitions.items():
            if not str(partition).isdigit() or not _is_int(offset):
                raise OffsetOptionError(
                    f"{option}[{topic!r}][{partition!r}] must map a partition to an offset"
                )
            offsets[(str(topic), int(partition))] = offset
    return offsets


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def report_data_loss(fail_on_data_loss: bool, message: str) -> None:
    """Raise DataLossError, or with failOnDataLoss=false log a warning and let the read go on."""
    if fail_on_data_loss:
        raise DataLossError(
            f"{message}. Set failOnDataLoss=false to continue from the earliest available offset."
        )
    _log.warning("Kafka data loss (failOnDataLoss=false, continuing from the log start): %s", message)


def _names(keys: Iterable[PartitionKey]) -> str:
    return ", ".join(f"{topic}-{partition}" for topic, partition in keys)
