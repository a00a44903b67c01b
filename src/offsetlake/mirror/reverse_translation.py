"""Reverse offset translation (failback): a group's position on a replicated topic of the target,
translated back to the source through the forward flow's offset syncs. Pure: no Spark, no Kafka.

An offset sync (U, D) says the upstream record at offset U was written downstream at offset D
(docs/mm2-reference.md §1.3). A committed downstream offset D is a *position*: the group has read
every record below D, and the record at D is the next it reads. The position to resume at on the
source is the upstream offset of the first replicated record the group has not read: the origin of
the first record at or after D. Replication keeps a partition's order, so upstream offsets rise
with downstream offsets, and the rule mirrors the forward one (mirror/translation.py, the +1 rule):

- the sync with the largest downstream offset <= D (the latest written on a tie) is the best
  evidence; when its downstream offset is D, the record at D came from its U: resume at U, exact;
- when it is below D, its record was read (it is below D) and the next unread one lies after it
  upstream: resume at U + 1. Every record between that and the true position is read again,
  never one skipped; at most the span to the next sync's U (the *re-read bound*);
- with no sync at or below D (the group is older than the retained history) nothing is known:
  guessing could skip, so there is no translation (:class:`NoReverseTranslation`), and the caller places
  the group at the source partition's log start or refuses it.

What "exact" cannot see: source records the forward flow never replicated (filtered by an SMT,
aborted transactions) and that lie right before the record at D were never delivered on the
target, and are not re-read either: the same as the forward translation, which skips them too.

A downstream rewind (a sync with a lower downstream offset than the one written before it: the
target topic was truncated or recreated) starts a new downstream history: only the syncs written
after the last one describe the offsets the group's position refers to.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum


class NoReverseTranslation(StrEnum):
    """Why a downstream position has no upstream translation."""

    NO_SYNCS = "no_syncs"
    """The forward flow's history holds no sync of this partition."""
    BEFORE_FIRST_SYNC = "before_first_sync"
    """The position precedes every retained sync: what was replicated before it is not known."""
    NO_TRACED_RECORDS = "no_traced_records"
    """No record of the target partition carries K2K's tracing headers of the source partition."""
    BEFORE_LOG_START = "before_log_start"
    """The position precedes the target partition's log start: the records the group had not read
    there are deleted, and where they came from with them."""


@dataclass(frozen=True)
class ReverseTranslation:
    """Where a downstream position resumes upstream, and how sure that is.

    ``upstream_offset`` None: no translation (``untranslated`` says why, ``detail`` in words).
    ``reread_bound``: at most this many upstream offsets between the answer and the true position
    are read again (0 when exact; None when the history does not bound it: past the last sync
    without the source partition's log end, or an upstream rewind). A rewind the syncs do not show
    (a restarted task's copies of records read already, its last syncs lost) is beyond it."""

    upstream_offset: int | None
    exact: bool = False
    matched: tuple[int, int] | None = None
    """The sync (upstream, downstream) the answer rests on."""
    reread_bound: int | None = None
    untranslated: NoReverseTranslation | None = None
    detail: str = ""


def current_history(syncs: Sequence[tuple[int, int]]) -> Sequence[tuple[int, int]]:
    """The syncs (in the order written) after the last downstream rewind, which describe the target
    partition as it is now."""
    start = 0
    for index in range(1, len(syncs)):
        if syncs[index][1] < syncs[index - 1][1]:
            start = index
    return syncs[start:]


def translate_back(
    syncs: Sequence[tuple[int, int]], downstream_offset: int, *, source_log_end: int | None = None
) -> ReverseTranslation:
    """Translate the committed downstream position D through ``syncs`` ((upstream, downstream)
    pairs in the order they were written). ``source_log_end``: the source partition's log end,
    which bounds the re-reads of a position past the last sync."""
    if downstream_offset < 0:
        raise ValueError(f"downstream_offset must be >= 0 (a committed position), got {downstream_offset}")
    history = current_history(syncs)
    if not history:
        return ReverseTranslation(None, untranslated=NoReverseTranslation.NO_SYNCS, detail="no offset sync")
    best: tuple[int, int] | None = None
    above: tuple[int, int] | None = None
    for upstream, downstream in history:
        if downstream <= downstream_offset:
            if best is None or downstream >= best[1]:
                best = (upstream, downstream)
        elif above is None or downstream < above[1]:
            above = (upstream, downstream)
    if best is None:
        first = min(downstream for _, downstream in history)
        return ReverseTranslation(
            None,
            untranslated=NoReverseTranslation.BEFORE_FIRST_SYNC,
            detail=f"position {downstream_offset} precedes the first retained sync (downstream {first})",
        )
    upstream, downstream = best
    # After an upstream rewind (MM2 replicating again from an earlier offset) records below D may
    # be copies of later ones, read already: the syncs no longer bound how much is read again.
    monotone = _monotone(history)
    if downstream == downstream_offset:
        return ReverseTranslation(upstream, exact=True, matched=best, reread_bound=0 if monotone else None)
    answer = upstream + 1
    ceiling = above[0] if above is not None else source_log_end
    bound = None if ceiling is None or not monotone or ceiling < answer else ceiling - answer
    return ReverseTranslation(answer, matched=best, reread_bound=bound)


def _monotone(history: Sequence[tuple[int, int]]) -> bool:
    """Upstream offsets rise with downstream offsets: no upstream rewind in this history."""
    ordered = sorted(history, key=lambda sync: sync[1])
    return all(before[0] <= after[0] for before, after in itertools.pairwise(ordered))
