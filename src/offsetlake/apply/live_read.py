"""Read the source clusters now, for a failover whose sources answer: each selected group's commits
and MM2's offset syncs beyond what the pipeline ingested, translated and merged with gold
(apply/live_syncs.py). This is what a pipeline update before the failover would add, at the cost of
the new data: a group snapshot and the syncs topic's records, no JVM.

Per source, bounded by the request's timeout: a source whose groups cannot be read now adds nothing
and is reported; its partitions are planned from gold's newest snapshot, as with a source that did
not answer. A syncs partition that cannot be read to its end adds none of its records (silver's
history still translates, perhaps less precisely: a re-read, never a skip).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Self

from offsetlake.apply.live_syncs import LiveMerge, SyncIndex, merge_live, translated_snapshot, with_new_syncs
from offsetlake.apply.placement import TopicRouting
from offsetlake.apply.planner import Selection
from offsetlake.apply.store import GoldStore
from offsetlake.apply.tail_merge import gold_key
from offsetlake.contract.gold import GoldOffset
from offsetlake.kafka.admin import KafkaAdminError
from offsetlake.kafka.group_offsets import GroupOffset, snapshot_group_offsets
from offsetlake.kafka.offset_sync_tail import (
    OffsetSyncTail,
    OffsetSyncTailError,
    SyncRecord,
    read_offset_sync_tail,
)
from offsetlake.mirror.policy import ReplicationPolicy


@dataclass(frozen=True)
class LiveSource:
    """A source cluster that answered the failover's probe: its alias and client settings."""

    alias: str
    config: Mapping[str, str] = field(repr=False)


@dataclass(frozen=True)
class LiveSources:
    """The sources to read now and how the pipeline reads them (its settings)."""

    sources: tuple[LiveSource, ...]
    policy: ReplicationPolicy
    target_alias: str = ""
    offset_syncs_location: str = "source"
    groups_include: str = ".*"
    groups_exclude: str | None = None


@dataclass(frozen=True)
class LiveRead:
    """What reading the sources now gave: the merge, each read source's snapshot (the partitions
    its groups committed now) and what could not be read, per source, with why."""

    merge: LiveMerge
    snapshots: dict[str, list[GroupOffset]]
    gaps: tuple[tuple[str, str], ...] = ()


class SourceReads:
    """Every source's snapshot and syncs, read in threads from construction (beside whatever the
    run reads meanwhile: the checkpoint tail), each bounded by ``timeout_s`` without progress;
    :meth:`merged` waits for them. Leaving the block waits for any read still out."""

    def __init__(
        self, live: LiveSources, *, target: Mapping[str, str], selection: Selection, timeout_s: float
    ) -> None:
        self._live = live
        sources = live.sources
        self._pool = ThreadPoolExecutor(max_workers=2 * len(sources) or 1, thread_name_prefix="live")
        self._snapshots = {
            s.alias: self._pool.submit(_snapshot, live, s, selection, timeout_s) for s in sources
        }
        if live.offset_syncs_location == "source":
            self._tails = {
                s.alias: self._pool.submit(_sync_tail, live, s.config, s.alias, timeout_s) for s in sources
            }
        else:  # one read of the target's syncs topics, each record's source named by its topic
            on_target = self._pool.submit(_sync_tail, live, target, None, timeout_s)
            self._tails = dict.fromkeys((s.alias for s in sources), on_target)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self._pool.shutdown(wait=True)

    def merged(self, store: GoldStore, gold: Sequence[GoldOffset], precedence: Sequence[str]) -> LiveRead:
        """Gold's rows (``gold``: after the checkpoint tail) with what the sources say now."""
        gaps: list[tuple[str, str]] = []
        read = {alias: _snapshot_or_gap(future, alias, gaps) for alias, future in self._snapshots.items()}
        synced = {alias: _syncs_or_gap(future.result(), alias, gaps) for alias, future in self._tails.items()}
        by_key = {gold_key(offset): offset for offset in gold}
        naming = TopicRouting(self._live.policy, self._live.target_alias)
        translated: list[GoldOffset] = []
        new_syncs = rejected = 0
        done = {alias: snapshot for alias, snapshot in read.items() if snapshot is not None}
        for alias, snapshot in done.items():
            records = [record for record in synced[alias] if record.source_cluster == alias]
            silver = store.offset_syncs(alias, {row.topic for row in snapshot})
            history, added = with_new_syncs(silver, records, store.offset_sync_positions(alias))
            new_syncs += added
            rejected += sum(1 for record in records if record.sync is None)
            translated += translated_snapshot(alias, snapshot, SyncIndex(history), naming, by_key)
        offsets, replaced = merge_live(gold, translated, precedence)
        merge = LiveMerge(
            offsets, sum(map(len, done.values())), len(translated), replaced, new_syncs, rejected
        )
        return LiveRead(merge, done, tuple(gaps))


def _snapshot_or_gap(
    future: Future[list[GroupOffset]], alias: str, gaps: list[tuple[str, str]]
) -> list[GroupOffset] | None:
    try:
        return future.result()
    except KafkaAdminError as error:
        gaps.append((alias, f"its groups could not be read now ({error}): planned from gold's snapshot"))
        return None


def _snapshot(
    live: LiveSources, source: LiveSource, selection: Selection, timeout_s: float
) -> list[GroupOffset]:
    return snapshot_group_offsets(
        source.config,
        live.groups_include,
        live.groups_exclude,
        timeout_s,
        wanted=selection.selects_group,
    )


def _sync_tail(
    live: LiveSources, config: Mapping[str, str], alias: str | None, timeout_s: float
) -> OffsetSyncTail | str:
    """The syncs topics' records, or why they could not be listed."""
    try:
        return read_offset_sync_tail(
            config, live.policy, timeout_s=timeout_s, source_alias=alias, target_alias=live.target_alias
        )
    except OffsetSyncTailError as error:
        return str(error)


def _syncs_or_gap(
    tail: OffsetSyncTail | str, alias: str, gaps: list[tuple[str, str]]
) -> tuple[SyncRecord, ...]:
    """The records read (none when the topics could not be listed: silver's history still
    translates, perhaps less precisely), each gap noted."""
    if isinstance(tail, str):
        gaps.append((alias, f"its offset syncs beyond the pipeline's could not be read ({tail})"))
        return ()
    for part in tail.unreadable:
        where = f"{part.topic}-{part.partition}"
        gaps.append((alias, f"offset syncs {where} not read to its end ({part.reason})"))
    return tail.records
