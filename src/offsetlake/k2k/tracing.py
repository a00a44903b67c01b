"""Translation from K2K's record-tracing headers: a bounded binary search over one target partition.

K2K can stamp each replicated record with where it came from (``k2k_topic``, ``k2k_partition``,
``k2k_offset``; Lenses K2K docs, "Tracing Headers"). A replicated partition keeps its order, so
among the target records of ONE source partition the traced source offset rises with the target
offset, whatever else is interleaved (records of other source partitions, records that were on
the target before replication, which carry no headers). That is enough to translate a committed
source position U from target data alone, by the offset-sync rule: the record with the largest
traced source offset s <= U gives its target offset t; exact (s == U) -> t, otherwise t + 1
(consumers may re-read, never skip); no such record -> no translation (never guess).

The search only needs a *probe*: "the first record of the sought source partition at target
offset >= start and < end". A probe may give up after scanning a bounded number of records
(:class:`Scanned`); the search then continues from where it stopped. Whatever limit ends the
search, its best record so far is a real record with s <= U, so the answer is still safe.

Many positions of one source partition in one target partition are searched together
(:func:`search_translations`): their searches share one memo of the probes, and when there are
many, the range their answers lie in is read once (a *scan*) and each U answered from it, every
answer the one its own search would give.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Final

from offsetlake.errors import InvalidValueError

DEFAULT_MAX_PROBES: Final = 64
"""Enough for a binary search over any partition (2 x 63 bits would be the worst case with every
probe halving the range only once), with room for probes continued past headerless stretches."""
SCAN_RECORDS_PER_PROBE: Final = 500
"""Records a sequential read gets through in the time of one probe: the crossover of
:func:`search_translations`. Measured on the local broker: a probe (re-assign, a small fetch, its
first record) 12 ms median; a sequential read 18-22 us a record, headers parsed: ~600. A little
lower: where the two are close, probes read less."""
TIME_LIMIT: Final = "time limit reached"


@dataclass(frozen=True)
class TracingHeaderNames:
    """The header names K2K writes (``tracing.headers`` in its configuration; these are its defaults)."""

    topic: str = "k2k_topic"
    partition: str = "k2k_partition"
    offset: str = "k2k_offset"

    @classmethod
    def parse(cls, text: str) -> TracingHeaderNames:
        """``topic=a,partition=b,offset=c``, any subset (the rest keep K2K's defaults)."""
        known = {spec.name for spec in fields(cls)}
        names: dict[str, str] = {}
        for entry in filter(None, (part.strip() for part in text.split(","))):
            part, _, name = (piece.strip() for piece in entry.partition("="))
            if part not in known or not name:
                raise InvalidValueError(
                    f"K2K tracing header names: {entry!r} is not one of topic=, partition=, offset= "
                    "followed by a header name"
                )
            names[part] = name
        return cls(**names)

    def text(self) -> str:
        return f"topic={self.topic},partition={self.partition},offset={self.offset}"


Headers = Sequence[tuple[str, bytes | None]] | None
"""A record's headers as confluent-kafka gives them (None when the record has none)."""


def traced_origin(headers: Headers, names: TracingHeaderNames) -> tuple[str, int, int] | None:
    """(source topic, partition, offset) from a record's tracing headers; None when any is missing
    or not a decimal number >= 0 (a repeated header: the last one counts, as Kafka's lastHeader)."""
    if not headers:
        return None
    found = dict(headers)  # one C call (a sequential read parses every record's): the last one wins
    topic, partition, offset = (found.get(names.topic), found.get(names.partition), found.get(names.offset))
    if not topic or partition is None or offset is None:
        return None
    try:
        source_topic = topic.decode("utf-8")
        source_partition, source_offset = int(partition.decode("ascii")), int(offset.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return None
    if source_partition < 0 or source_offset < 0:
        return None
    return source_topic, source_partition, source_offset


@dataclass(frozen=True)
class TracedRecord:
    """A target record of the sought source partition: where it is, and which source record it is."""

    target_offset: int
    source_offset: int


class MixedPartitionsError(Exception):
    """The searched target partition holds records of another partition of the sought source topic."""


def sought_record(
    origin: tuple[str, int, int] | None, source_topic: str, source_partition: int, target_offset: int
) -> TracedRecord | None:
    """The record at ``target_offset`` (``origin``: its traced_origin) if it is of the sought source
    partition, else None. A record of the same source topic from another source partition refuses
    the search (MixedPartitionsError): K2K did not keep the partition here (producer-defined
    partitioning), so the sought partition's records are spread over target partitions and no one
    target position holds its committed position. A record of another topic is stepped past."""
    if origin is None or origin[0] != source_topic:
        return None
    if origin[1] != source_partition:
        raise MixedPartitionsError(
            f"target offset {target_offset} holds {source_topic}[{origin[1]}]@{origin[2]}, not only "
            f"{source_topic}[{source_partition}]: K2K does not keep the source partition here, so no "
            "target position translates it (route the topic with sink.partition: source, or unroute it)"
        )
    return TracedRecord(target_offset, origin[2])


@dataclass(frozen=True)
class Scanned:
    """The probe scanned [start, until) without finding a record of the sought partition, and stopped."""

    until: int


ProbeResult = TracedRecord | Scanned | None
"""A record found; a bounded scan that stopped early; None: no such record in [start, end)."""
Probe = Callable[[int, int], ProbeResult]


@dataclass(frozen=True)
class TracingTranslation:
    """The search's answer: the translated position (None: none) and how it was found."""

    downstream_offset: int | None
    matched_source_offset: int | None = None
    matched_target_offset: int | None = None
    exact: bool = False
    probes: int = 0
    reason: str | None = None
    """None when the search completed and translated; otherwise why there is no (or only a
    possibly imprecise) translation, in an operator's words."""
    cut_short: bool = False
    """A bound (probes, the partition's time, the call's budget) stopped the search before it
    completed: its answer, if any, is safe but may re-read more; without one, another method's row
    (or none) stands in."""


def search_translation(
    probe: Probe,
    low: int,
    high: int,
    upstream_offset: int,
    *,
    where: str,
    max_probes: int = DEFAULT_MAX_PROBES,
    expired: Callable[[], bool] = lambda: False,
) -> TracingTranslation:
    """Translate ``upstream_offset`` U over the target partition's offsets [low, high).

    ``where`` names the partitions for reasons (``orders[0] in east.orders[0]``). Each probe
    halves [lo, hi): a record with s <= U is the best so far and everything before it is ruled out;
    a record with s > U, or none, rules out [mid, hi). ``expired`` is the caller's time budget.
    """
    if upstream_offset < 0:
        raise ValueError(f"upstream_offset must be >= 0 (a committed position), got {upstream_offset}")
    if high <= low:
        return TracingTranslation(None, reason=f"target partition is empty ({where})")
    found = _search(probe, low, high, upstream_offset, max_probes=max_probes, expired=expired)
    return _answer(found, upstream_offset=upstream_offset, where=where, span=(low, high))


@dataclass(frozen=True)
class _Found:
    """Where one position's binary search stopped: its best record (s <= U), the first record above
    U it saw, the probes its path took, and the limit that stopped it early (None: completed)."""

    best: TracedRecord | None
    first_above: TracedRecord | None
    probes: int
    limit: str | None


def _search(
    probe: Probe, low: int, high: int, upstream_offset: int, *, max_probes: int, expired: Callable[[], bool]
) -> _Found:
    lo, hi, probes = low, high, 0
    best: TracedRecord | None = None
    first_above: TracedRecord | None = None
    limit: str | None = None
    while lo < hi:
        if probes >= max_probes:
            limit = f"probe limit ({max_probes}) reached"
            break
        if expired():
            limit = TIME_LIMIT
            break
        mid = (lo + hi) // 2
        found = probe(mid, hi)
        probes += 1
        while isinstance(found, Scanned) and found.until < hi and probes < max_probes and not expired():
            found = probe(found.until, hi)  # nothing in [mid, until): go on from there
            probes += 1
        if isinstance(found, Scanned):
            if found.until < hi:  # stopped by a limit inside [mid, hi): that part stays unknown
                limit = f"probe limit ({max_probes}) reached" if probes >= max_probes else TIME_LIMIT
                break
            found = None
        if found is not None and found.source_offset <= upstream_offset:
            best, lo = found, found.target_offset + 1
        else:
            if found is not None and (first_above is None or found.target_offset < first_above.target_offset):
                first_above = found
            hi = mid
    return _Found(best, first_above, probes, limit)


def _answer(found: _Found, *, upstream_offset: int, where: str, span: tuple[int, int]) -> TracingTranslation:
    best, limit, probes = found.best, found.limit, found.probes
    if best is None:
        if limit is not None:
            reason = f"{limit} before a record at or below {upstream_offset} was found ({where})"
        elif found.first_above is not None:
            reason = (
                f"target partition starts after the committed offset: its first traced record of {where} "
                f"is source offset {found.first_above.source_offset} > {upstream_offset}"
            )
        else:
            reason = f"no record of {where} in offsets [{span[0]}, {span[1]}) carries K2K tracing headers"
        return TracingTranslation(None, probes=probes, reason=reason, cut_short=limit is not None)
    exact = best.source_offset == upstream_offset
    reason = None if limit is None else f"{limit}: safe, but may re-read more than needed ({where})"
    return TracingTranslation(
        best.target_offset if exact else best.target_offset + 1,
        matched_source_offset=best.source_offset,
        matched_target_offset=best.target_offset,
        exact=exact,
        probes=probes,
        reason=reason,
        cut_short=limit is not None,
    )


@dataclass(frozen=True)
class ScanResult:
    """A sequential read of [start, end): the sought partition's records in it, in target order,
    how far it got (``until`` < end: stopped by its time limit) and how many records it read."""

    records: tuple[TracedRecord, ...]
    until: int
    read: int


Scan = Callable[[int, int], ScanResult]


@dataclass(frozen=True)
class BatchTranslations:
    """The answers for many positions of one (target partition, source partition), and their cost."""

    translations: Mapping[int, TracingTranslation]
    """By upstream offset U."""
    probes: int
    """Probes made (positioned reads): a probe several positions' searches share is made once."""
    scanned: int
    """Records read by the sequential read (0: none was worth it)."""


def search_translations(
    probe: Probe,
    scan: Scan,
    low: int,
    high: int,
    upstream_offsets: Iterable[int],
    *,
    where: str,
    max_probes: int = DEFAULT_MAX_PROBES,
    expired: Callable[[], bool] = lambda: False,
    records_per_probe: int = SCAN_RECORDS_PER_PROBE,
) -> BatchTranslations:
    """Translate every U of ``upstream_offsets`` over [low, high), each answer the one
    :func:`search_translation` gives, for a fraction of its fetches.

    Each search's probes go through one memo, so the top of the binary search (the same probes
    for every U until their paths part) is read once. The lowest and the highest U are searched
    first: every other U's answer lies between their records (traced source offsets rise with
    target offsets). When reading that range once costs less than searching each U in it
    (``records_per_probe``: records one sequential read gets through in the time of one probe),
    it is read once and each U answered by bisection over what it held; else each U is searched.
    """
    uppers = sorted(set(upstream_offsets))
    if not uppers:
        return BatchTranslations({}, probes=0, scanned=0)
    if uppers[0] < 0:
        raise ValueError(f"upstream_offset must be >= 0 (a committed position), got {uppers[0]}")
    if high <= low:
        empty = TracingTranslation(None, reason=f"target partition is empty ({where})")
        return BatchTranslations(dict.fromkeys(uppers, empty), probes=0, scanned=0)
    memo = _MemoProbe(probe)

    def search(upstream: int) -> _Found:
        return _search(memo, low, high, upstream, max_probes=max_probes, expired=expired)

    found = {upstream: search(upstream) for upstream in dict.fromkeys((uppers[0], uppers[-1]))}
    lowest, highest, middle = found[uppers[0]], found[uppers[-1]], uppers[1:-1]
    scanned = 0
    if not middle:
        pass
    elif highest.limit is None and highest.best is None:
        # Nothing traced at or below the highest U, hence below none: each is refused as it is.
        found |= dict.fromkeys(middle, highest)
    elif (
        lowest.limit is None
        and highest.limit is None
        and highest.best is not None
        and (start := lowest.best or lowest.first_above) is not None
        and scan_pays(highest.best.target_offset + 1 - start.target_offset, len(middle), records_per_probe)
    ):
        end = highest.best.target_offset + 1
        read = scan(start.target_offset, end)
        scanned = read.read
        found |= _merge(read, middle, complete=read.until >= end)
    else:
        found |= {upstream: search(upstream) for upstream in middle}
    translations = {
        upstream: _answer(found[upstream], upstream_offset=upstream, where=where, span=(low, high))
        for upstream in uppers
    }
    return BatchTranslations(translations, probes=memo.made, scanned=scanned)


def scan_pays(span: int, positions: int, records_per_probe: int) -> bool:
    """Whether one sequential read of ``span`` records costs less than binary searches of
    ``positions`` positions in it (about log2(span / positions) new probes each, the rest shared)."""
    searches = positions * max(1.0, math.log2(max(span, 1) / positions))
    return span <= searches * records_per_probe


def _merge(read: ScanResult, uppers: Sequence[int], *, complete: bool) -> dict[int, _Found]:
    """Each U's search outcome from the sequential read of the range its answer lies in: the last
    record with s <= U; decided once a record above U was read or the whole range was."""
    sources = [record.source_offset for record in read.records]
    found: dict[int, _Found] = {}
    for upstream in uppers:
        index = bisect.bisect_right(sources, upstream)
        best = read.records[index - 1] if index else None
        above = read.records[index] if index < len(read.records) else None
        decided = complete or above is not None
        found[upstream] = _Found(best, above, probes=1, limit=None if decided else TIME_LIMIT)
    return found


class _MemoProbe:
    """A probe that remembers what each start offset's probe found, whatever end it was asked for:
    the first record at or after that start, or that none is before some offset."""

    def __init__(self, probe: Probe) -> None:
        self.probe, self.made = probe, 0
        self.seen: dict[int, TracedRecord | Scanned] = {}
        """start -> the sought partition's first record at or after it, or Scanned(u): none in [start, u)."""

    def __call__(self, start: int, end: int) -> ProbeResult:
        known = self.seen.get(start)
        if isinstance(known, TracedRecord):
            return known if known.target_offset < end else None
        if known is not None and known.until >= end:
            return None
        # Nothing known before ``until``: the first record from there is the first from ``start``.
        origin = start if known is None else known.until
        result = self.probe(origin, end)
        self.made += 1
        self.seen[start] = Scanned(end) if result is None else result
        return result
