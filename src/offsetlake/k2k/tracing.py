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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Final

from offsetlake.errors import InvalidValueError

DEFAULT_MAX_PROBES: Final = 64
"""Enough for a binary search over any partition (2 x 63 bits would be the worst case with every
probe halving the range only once), with room for probes continued past headerless stretches."""


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
    found: dict[str, bytes | None] = {}
    for name, value in headers:
        if name in (names.topic, names.partition, names.offset):
            found[name] = value
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
    lo, hi, probes = low, high, 0
    best: TracedRecord | None = None
    first_above: TracedRecord | None = None
    limit: str | None = None
    while lo < hi:
        if probes >= max_probes:
            limit = f"probe limit ({max_probes}) reached"
            break
        if expired():
            limit = "time limit reached"
            break
        mid = (lo + hi) // 2
        found = probe(mid, hi)
        probes += 1
        while isinstance(found, Scanned) and found.until < hi and probes < max_probes and not expired():
            found = probe(found.until, hi)  # nothing in [mid, until): go on from there
            probes += 1
        if isinstance(found, Scanned):
            if found.until < hi:  # stopped by a limit inside [mid, hi): that part stays unknown
                limit = (
                    f"probe limit ({max_probes}) reached" if probes >= max_probes else "time limit reached"
                )
                break
            found = None
        if found is not None and found.source_offset <= upstream_offset:
            best, lo = found, found.target_offset + 1
        else:
            if found is not None and (first_above is None or found.target_offset < first_above.target_offset):
                first_above = found
            hi = mid
    return _answer(
        best,
        first_above,
        probes=probes,
        limit=limit,
        upstream_offset=upstream_offset,
        where=where,
        span=(low, high),
    )


def _answer(
    best: TracedRecord | None,
    first_above: TracedRecord | None,
    *,
    probes: int,
    limit: str | None,
    upstream_offset: int,
    where: str,
    span: tuple[int, int],
) -> TracingTranslation:
    if best is None:
        if limit is not None:
            reason = f"{limit} before a record at or below {upstream_offset} was found ({where})"
        elif first_above is not None:
            reason = (
                f"target partition starts after the committed offset: its first traced record of {where} "
                f"is source offset {first_above.source_offset} > {upstream_offset}"
            )
        else:
            reason = f"no record of {where} in offsets [{span[0]}, {span[1]}) carries K2K tracing headers"
        return TracingTranslation(None, probes=probes, reason=reason)
    exact = best.source_offset == upstream_offset
    reason = None if limit is None else f"{limit}: safe, but may re-read more than needed ({where})"
    return TracingTranslation(
        best.target_offset if exact else best.target_offset + 1,
        matched_source_offset=best.source_offset,
        matched_target_offset=best.target_offset,
        exact=exact,
        probes=probes,
        reason=reason,
    )
