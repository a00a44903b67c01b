"""How far MM2 has replicated a source partition, and what failing over now would cost a group.

MM2 has no consumer group, so consumer lag cannot say how far replication is behind. Its position
is in two places (docs/mm2-reference.md §1.6, §2.1):

- **Connect offsets** (``mm2-offsets.<source>.internal`` / ``connect-offsets``):
  MirrorSourceConnector stores ``{"offset": u}``, the upstream offset of the last replicated
  record, every ``offset.flush.interval.ms``; ``MirrorSourceTask`` resumes at u + 1. A tombstone
  (or no integer offset) is a reset: MM2 would restart from ``auto.offset.reset`` (``earliest``).
- **Offset syncs**: a sync (u, d) is written once record u is on the target, so the target holds
  everything through u. A sync can be fresher than the last flush of Connect offsets.

This module is the pure reference for ``pipeline/replication_progress.py``: the position as of a
time, and the per-group data-loss figures. Positions are *next* offsets (the first upstream
offset not known to be on the target), like log ends and committed offsets, so differences are
record counts (offsets: transaction markers and filtered records count, as they do in lag).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

INT64_MAX = (1 << 63) - 1


def next_after(upstream_offset: int) -> int:
    """The offset after ``upstream_offset``, saturating at Kafka's largest offset (a record there is
    the log's last possible one; a position past it cannot be stored in an INT64)."""
    return min(upstream_offset + 1, INT64_MAX)


class ReplicationStatus(StrEnum):
    REPLICATING = "replicating"
    """A position is known (Connect offset, or a sync fresher than the last reset)."""
    RESET = "reset"
    """The newest Connect offset is a tombstone (or holds no integer offset), no sync since."""
    NEVER_REPLICATED = "never_replicated"
    """No Connect offset and no offset sync for the partition."""


@dataclass(frozen=True)
class PositionObservation:
    """One record telling where MM2 stood: ``kind`` ``connect_offset`` or ``offset_sync``.

    ``upstream_offset`` is the last replicated upstream offset (Connect's ``offset``, the sync's
    ``upstreamOffset``); ``None`` only for a Connect reset. ``order`` breaks timestamp ties
    (Kafka offset of the record).
    """

    kind: str
    observed_at: datetime
    order: int
    upstream_offset: int | None


@dataclass(frozen=True)
class ReplicatedPosition:
    status: ReplicationStatus
    next_offset: int | None
    """First upstream offset not known to be on the target; None unless replicating."""
    method: str | None
    """``connect_offset`` or ``offset_sync``: which record gave ``next_offset``."""
    last_progress_at: datetime | None
    """When the position last changed (the newest observation that moved it); None unless replicating."""


def _latest(observations: Iterable[PositionObservation]) -> PositionObservation | None:
    return max(observations, key=lambda o: (o.observed_at, o.order), default=None)


def _position_now(known: Sequence[PositionObservation]) -> tuple[ReplicationStatus, int | None, str | None]:
    connect = _latest(o for o in known if o.kind == "connect_offset")
    sync = _latest(o for o in known if o.kind == "offset_sync")
    sync_is_fresher = sync is not None and (connect is None or sync.observed_at > connect.observed_at)
    candidates: list[tuple[int, str]] = []
    if connect is not None and connect.upstream_offset is not None:
        candidates.append((next_after(connect.upstream_offset), "connect_offset"))
    if sync is not None and sync.upstream_offset is not None and sync_is_fresher:
        candidates.append((next_after(sync.upstream_offset), "offset_sync"))
    if not candidates:
        status = ReplicationStatus.NEVER_REPLICATED if connect is None else ReplicationStatus.RESET
        return status, None, None
    next_offset, method = max(candidates, key=lambda candidate: candidate[0])  # a tie: Connect's
    return ReplicationStatus.REPLICATING, next_offset, method


def replicated_position(observations: Iterable[PositionObservation], as_of: datetime) -> ReplicatedPosition:
    """MM2's position on one source partition from what had been observed by ``as_of``.

    The newest Connect offset gives it; the newest sync raises it when the sync was written after
    that Connect record (a sync older than a reset says nothing about the restarted task).
    ``last_progress_at`` is the time of the newest observation that changed the position.
    """
    known = sorted(
        (o for o in observations if o.observed_at <= as_of), key=lambda o: (o.observed_at, o.order)
    )
    status, next_offset, method = _position_now(known)
    last_progress_at = None
    previous: tuple[ReplicationStatus, int | None] = (ReplicationStatus.NEVER_REPLICATED, None)
    for index, observation in enumerate(known):
        current = _position_now(known[: index + 1])[:2]
        if current != previous:
            last_progress_at = observation.observed_at
        previous = current
    if status != ReplicationStatus.REPLICATING:
        last_progress_at = None
    return ReplicatedPosition(status, next_offset, method, last_progress_at)


@dataclass(frozen=True)
class DataLoss:
    """What a failover now would cost one group on one partition, in records (offsets)."""

    consumed_not_replicated: int
    """Consumed by the group on the source (below its committed offset) but not on the target."""
    unconsumed_lost: int
    """Not consumed yet and not on the target: the group will never see them after failover."""


def data_loss(committed_offset: int, next_replicated: int, log_end: int) -> DataLoss:
    """Split the unreplicated records [next_replicated, log_end) at the group's committed offset.

    ``next_replicated`` is the log start for a partition MM2 never replicated (nothing is on the
    target). A committed offset past the log end (snapshots taken moments apart) is capped there.
    """
    committed = min(committed_offset, log_end)
    return DataLoss(
        consumed_not_replicated=max(0, committed - next_replicated),
        unconsumed_lost=max(0, log_end - max(committed, next_replicated)),
    )
