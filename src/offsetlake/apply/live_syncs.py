"""Gold plus each source group's commits read now, translated with MM2's offset syncs: what the
pipeline's next update would add by the ``offset_sync`` method, without a JVM.

Pure: the snapshots come from offsetlake.kafka.group_offsets (the same snapshot bronze_group_offsets
takes), the syncs from silver_offset_syncs (the full history the pipeline ingested) and from the
syncs topic's records beyond it (offsetlake.kafka.offset_sync_tail). The rules are the pipeline's:

- a committed position is translated by ``offsetlake.mirror.translation.translate`` (the oracle
  translation_spark is tested against), here over every sync of the partition indexed once
  (:class:`SyncIndex`, property-tested against the oracle): the largest upstream offset at or
  below it, exact -> its downstream, otherwise downstream + 1, none -> no row;
- the row is named on the target as MM2's replication policy names the topic
  (history.offset_sync_observations' ``downstream_topic``), observed at the snapshot's time; its
  ``source_timestamp`` is gold's when gold's offset_sync row already is this translation (the
  version continues), else the snapshot's;
- it competes with gold's row (and the checkpoint tail's) by :func:`tail_replaces`, with
  ``after_gold``: the snapshot was taken after everything gold and the tail hold.

A position no sync translates adds nothing: gold's row, a translation of an older commit (it may
re-read, never skip), stays; a partition with no row at all is placed from the snapshot
(apply/placement.py).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from offsetlake.apply.placement import TopicRouting
from offsetlake.apply.tail_merge import Key, gold_key, tail_replaces
from offsetlake.contract.gold import GoldOffset
from offsetlake.kafka.group_offsets import GroupOffset
from offsetlake.kafka.offset_sync_tail import SyncRecord

METHOD = "offset_sync"
SyncHistory = list[tuple[int, int]]
"""One upstream partition's offset syncs (upstream, downstream) in the order MM2 wrote them."""


def with_new_syncs(
    history: Mapping[tuple[str, int], SyncHistory],
    records: Iterable[SyncRecord],
    ingested: Mapping[tuple[str, int], int],
) -> tuple[dict[tuple[str, int], SyncHistory], int]:
    """silver's ``history`` (per upstream topic-partition) followed by each decoded record of the
    syncs topic at or past ``ingested`` (per syncs topic-partition, the next offset after what
    silver holds), in Kafka's order: what silver will hold after the next update. Also how many
    records were added."""
    combined = {key: list(syncs) for key, syncs in history.items()}
    added = 0
    for record in sorted(records, key=lambda r: (r.topic, r.partition, r.offset)):
        sync = record.sync
        if sync is None or record.offset < ingested.get((record.topic, record.partition), 0):
            continue
        combined.setdefault((sync.topic, sync.partition), []).append(
            (sync.upstream_offset, sync.downstream_offset)
        )
        added += 1
    return combined, added


class SyncIndex:
    """Every partition's syncs indexed once, so each of 46,000 positions costs a bisection instead
    of a pass over the partition's history; answers exactly as ``mirror.translation.translate``."""

    def __init__(self, histories: Mapping[tuple[str, int], SyncHistory]) -> None:
        self._index: dict[tuple[str, int], tuple[list[int], list[int]]] = {}
        for key, syncs in histories.items():
            latest = dict(syncs)  # of one upstream offset, the latest written wins
            upstreams = sorted(latest)
            self._index[key] = (upstreams, [latest[upstream] for upstream in upstreams])

    def translate(self, topic: str, partition: int, upstream_offset: int) -> int | None:
        """The downstream position of committed ``upstream_offset`` (None: no sync at or below it)."""
        if upstream_offset < 0:
            raise ValueError(f"upstream_offset must be >= 0 (a committed position), got {upstream_offset}")
        upstreams, downstreams = self._index.get((topic, partition), ((), ()))
        at = bisect_right(upstreams, upstream_offset) - 1
        if at < 0:
            return None
        return downstreams[at] if upstreams[at] == upstream_offset else downstreams[at] + 1


def translated_snapshot(
    alias: str,
    snapshot: Iterable[GroupOffset],
    index: SyncIndex,
    naming: TopicRouting,
    gold: Mapping[Key, GoldOffset],
) -> list[GoldOffset]:
    """Each committed position of ``alias``'s snapshot a sync translates, as a gold row
    (``from_tail``); ``gold`` by key, for the versions that continue."""
    rows: list[GoldOffset] = []
    for committed in snapshot:
        if committed.committed_offset < 0 or not committed.topic or not committed.consumer_group:
            continue
        downstream = index.translate(committed.topic, committed.partition, committed.committed_offset)
        if downstream is None:
            continue
        topic = naming.target_topic(alias, committed.topic)
        current = gold.get((alias, committed.consumer_group, topic, committed.partition))
        continues = (
            current is not None
            and current.method == METHOD
            and (current.upstream_offset, current.downstream_offset)
            == (committed.committed_offset, downstream)
        )
        rows.append(
            GoldOffset(
                source_cluster=alias,
                consumer_group=committed.consumer_group,
                topic=topic,
                partition=committed.partition,
                downstream_offset=downstream,
                source_timestamp=current.source_timestamp
                if continues and current
                else committed.snapshot_time,
                method=METHOD,
                observed_at=committed.snapshot_time,
                metadata=committed.metadata,
                upstream_offset=committed.committed_offset,
                from_tail=True,
            )
        )
    return rows


@dataclass(frozen=True)
class LiveMerge:
    """What reading the sources now added to gold."""

    offsets: tuple[GoldOffset, ...]
    snapshots: int
    """Group-partitions the sources' groups have committed now (offset >= 0)."""
    translated: int
    """Of those, the ones an offset sync translates."""
    replaced: int
    """Group-partitions whose translation now comes from the sources read now."""
    new_syncs: int = 0
    """Offset-sync records read beyond what silver_offset_syncs holds."""
    rejected: int = 0
    """Offset-sync records that did not decode (never used)."""


def merge_live(
    gold: Sequence[GoldOffset], live: Sequence[GoldOffset], precedence: Sequence[str]
) -> tuple[tuple[GoldOffset, ...], int]:
    """Gold's rows with every key a live translation replaces (:func:`tail_replaces`, after gold),
    and how many were replaced."""
    by_key: dict[Key, GoldOffset] = {gold_key(offset): offset for offset in gold}
    replaced = 0
    for candidate in live:
        key = gold_key(candidate)
        current = by_key.get(key)
        if current == candidate:
            continue
        if current is None or tail_replaces(candidate, current, precedence, after_gold=True):
            by_key[key] = candidate
            replaced += 1
    return tuple(by_key.values()), replaced
