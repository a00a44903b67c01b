"""Reference offset translation from offset syncs: the oracle the Spark implementation is tested against.

An offset sync (U, D) says the upstream record at offset U was written downstream at offset D.
A committed upstream offset is a *position* (the next record to read), so:

- a sync with upstream == U gives the exact downstream position D;
- otherwise the best sync below U only proves that the next record lands after D, so the answer
  is D + 1 (MM2's "+1 rule", docs/mm2-reference.md §2.2): consumers may re-read, never skip;
- with no sync at or below U nothing is known, and guessing could skip data, so the answer is None.

Unlike MM2's ``OffsetSyncStore`` (64 exponentially spaced slots), this uses the full sync history
it is given, so it is at least as precise as MM2 for any group that MM2 could translate.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol


class SyncLike(Protocol):
    """Anything shaped like an offset sync, e.g. ``offsetlake.codecs.mm2.OffsetSync``."""

    @property
    def upstream_offset(self) -> int: ...

    @property
    def downstream_offset(self) -> int: ...


def translate(syncs: Sequence[tuple[int, int]], upstream_offset: int) -> int | None:
    """Translate one committed upstream position using ``syncs`` in the order they were written.

    ``syncs`` are (upstream_offset, downstream_offset) pairs. Among syncs with upstream <= U the
    largest upstream wins; if several share it, the latest-written one wins (it reflects the
    latest copy of that record). Returns None when no sync has upstream <= U.
    """
    if upstream_offset < 0:
        raise ValueError(f"upstream_offset must be >= 0 (a committed position), got {upstream_offset}")
    best: tuple[int, int] | None = None
    for sync_upstream, sync_downstream in syncs:
        if sync_upstream <= upstream_offset and (best is None or sync_upstream >= best[0]):
            best = (sync_upstream, sync_downstream)
    if best is None:
        return None
    best_upstream, best_downstream = best
    return best_downstream if best_upstream == upstream_offset else best_downstream + 1


def sync_pairs(offset_syncs: Iterable[SyncLike]) -> list[tuple[int, int]]:
    """(upstream_offset, downstream_offset) pairs from OffsetSync-like objects, keeping their order."""
    return [(sync.upstream_offset, sync.downstream_offset) for sync in offset_syncs]
