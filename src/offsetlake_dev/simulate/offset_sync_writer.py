"""When MirrorMaker 2 writes an offset sync: a port of ``OffsetSyncWriter`` (connect/mirror).

The simulator must emit syncs exactly when MM2 would, or translation precision (and so the
re-reads a failover causes) would not be what production sees. Rules, docs/mm2-reference.md §2.1:
a sync is sent *immediately* for the first record of a partition in the task's lifetime, after an
upstream gap, after a downstream truncation, or once ``D - (lastSyncD + 1) >= offset.lag.max``;
otherwise it is *delayed* and only the latest delayed sync per partition is sent at the next
offset commit (``promoteDelayedOffsetSyncs``). As in Kafka, a promoted delayed sync does not
reset the lag counter: ``lastSyncD`` only moves on immediate syncs.
"""

from __future__ import annotations

from dataclasses import dataclass

from offsetlake.codecs.mm2 import OffsetSync

DEFAULT_OFFSET_LAG_MAX = 100
"""MM2's ``offset.lag.max`` default (MirrorSourceConfig)."""

_NONE = -1


@dataclass
class _PartitionState:
    """``OffsetSyncWriter.PartitionState``: what the last record and the last immediate sync were."""

    offset_lag_max: int
    previous_upstream_offset: int = _NONE
    previous_downstream_offset: int = _NONE
    last_sync_downstream_offset: int = _NONE

    def needs_immediate_sync(self, upstream_offset: int, downstream_offset: int) -> bool:
        first_sync_this_lifetime = self.last_sync_downstream_offset == _NONE
        # translateDownstream answers one past the last sync, hence the + 1.
        translation_too_stale = (
            downstream_offset - (self.last_sync_downstream_offset + 1) >= self.offset_lag_max
        )
        skipped_upstream_record = upstream_offset - self.previous_upstream_offset != 1
        truncated_downstream = downstream_offset < self.previous_downstream_offset
        immediate = (
            first_sync_this_lifetime
            or translation_too_stale
            or skipped_upstream_record
            or truncated_downstream
        )
        if immediate:
            self.last_sync_downstream_offset = downstream_offset
        self.previous_upstream_offset = upstream_offset
        self.previous_downstream_offset = downstream_offset
        return immediate


class OffsetSyncWriter:
    """Decides which offset syncs one MM2 source task sends, record by record and at each commit."""

    def __init__(self, offset_lag_max: int = DEFAULT_OFFSET_LAG_MAX) -> None:
        if offset_lag_max < 0:
            raise ValueError(f"offset.lag.max must be >= 0, got {offset_lag_max}")
        self.offset_lag_max = offset_lag_max
        self._states: dict[tuple[str, int], _PartitionState] = {}
        self._delayed: dict[tuple[str, int], OffsetSync] = {}

    def record_replicated(
        self, topic: str, partition: int, upstream_offset: int, downstream_offset: int
    ) -> OffsetSync | None:
        """Called per acknowledged record (``commitRecord``); returns the sync to send now, if any.

        ``topic`` is the upstream (source-cluster) name, as in MM2's offset syncs.
        """
        if upstream_offset < 0 or downstream_offset < 0:
            raise ValueError(
                f"offsets must be >= 0, got upstream {upstream_offset} downstream {downstream_offset}"
            )
        key = (topic, partition)
        state = self._states.setdefault(key, _PartitionState(self.offset_lag_max))
        sync = OffsetSync(topic, partition, upstream_offset, downstream_offset)
        if state.needs_immediate_sync(upstream_offset, downstream_offset):
            self._delayed.pop(key, None)
            return sync
        self._delayed[key] = sync
        return None

    def commit(self) -> list[OffsetSync]:
        """The periodic offset flush: every held-back sync (the latest per partition) is sent now."""
        promoted = list(self._delayed.values())
        self._delayed.clear()
        return promoted
