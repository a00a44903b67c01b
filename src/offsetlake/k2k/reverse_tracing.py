"""Reverse translation from K2K's record-tracing headers (failback): a group's position D on a
target partition, back to the source partition the records came from. Pure: the reads are a probe.

Every replicated record names its origin (``k2k_offset``), and K2K keeps a source partition's
order, so the answer needs no history: the first record of the source partition at or after D is
the next one the group reads, and its ``k2k_offset`` is where to resume, exact. With none at or
after D (the group has read everything replicated), the last one before D was read: resume at its
``k2k_offset`` + 1. Records without headers (on the target before replication) and of other
source partitions are stepped over by the probe (offsetlake.k2k.tracing).

A position before the target's log start has no answer: the records it had not read there are
deleted, and their origins with them. A search a limit stops early falls back to the last traced
record before D + 1: every record before D was read, so that never skips.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from offsetlake.k2k.tracing import DEFAULT_MAX_PROBES, TIME_LIMIT, Probe, Scanned, search_translation

NO_TRACED_RECORDS: Final = "no_traced_records"
BEFORE_LOG_START: Final = "before_log_start"
_ANY_SOURCE_OFFSET: Final = (1 << 63) - 1


@dataclass(frozen=True)
class ReverseTraced:
    """The source position a target position resumes at (None: none, ``untranslated`` names why
    with the values of offsetlake.mirror.reverse_translation.NoReverseTranslation), how it was found."""

    upstream_offset: int | None
    exact: bool = False
    matched_target_offset: int | None = None
    probes: int = 0
    untranslated: str | None = None
    reason: str | None = None


def reverse_search(
    probe: Probe,
    low: int,
    high: int,
    downstream_offset: int,
    *,
    where: str,
    max_probes: int = DEFAULT_MAX_PROBES,
    expired: Callable[[], bool] = lambda: False,
) -> ReverseTraced:
    """The source position of target position D over the target partition's offsets [low, high)."""
    if downstream_offset < 0:
        raise ValueError(f"downstream_offset must be >= 0 (a committed position), got {downstream_offset}")
    if downstream_offset < low:
        return ReverseTraced(
            None,
            untranslated=BEFORE_LOG_START,
            reason=f"position {downstream_offset} precedes the target's log start {low} ({where})",
        )
    probes, start, limit = 0, downstream_offset, None
    while start < high:
        if probes >= max_probes or expired():
            limit = f"probe limit ({max_probes}) reached" if probes >= max_probes else TIME_LIMIT
            break
        found = probe(start, high)
        probes += 1
        if found is None:
            break
        if isinstance(found, Scanned):
            start = found.until
            continue
        return ReverseTraced(found.source_offset, exact=True, matched_target_offset=found.target_offset,
                             probes=probes)  # fmt: skip
    before = search_translation(
        probe, low, min(downstream_offset, high), _ANY_SOURCE_OFFSET, where=where,
        max_probes=max_probes, expired=expired,
    )  # fmt: skip
    probes += before.probes
    if before.matched_source_offset is None:
        reason = limit or f"no record of {where} around {downstream_offset} carries K2K tracing headers"
        return ReverseTraced(None, probes=probes, untranslated=NO_TRACED_RECORDS, reason=reason)
    note = None if limit is None else f"{limit} past {downstream_offset}: safe, may re-read more ({where})"
    return ReverseTraced(
        before.matched_source_offset + 1,
        matched_target_offset=before.matched_target_offset,
        probes=probes,
        reason=note,
    )
