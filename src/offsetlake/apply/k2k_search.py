"""The k2k_tracing_headers method at failover time: the newest group snapshots, searched on the target now.

The pipeline searches each snapshot when it takes it (data_sources/offsetlake_k2k_tracing.py), so
gold already holds a translation of every group's newest committed position U. A failover reads
the target anyway, and what K2K replicated since that update can only make the answer exact where
it was "past the last replicated record": so the apply searches the newest snapshot of each
selected group-partition again, with no JVM and no source cluster (U comes from
``latest_group_offsets``, which the failover's refresh updates with the lookups). The answer is the
k2k_tracing_headers method's observation at the snapshot's time, as the pipeline records it; it
replaces gold's row only when that snapshot is at least as new as gold's row's last observation
(one clock: offsetlake's), and competes with another method's row by tail_merge.tail_replaces. A
search that cannot translate leaves gold as it is and is reported with its reason; a search a
bound cut short is counted with what stood in (its safe answer, gold's row, or none).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from offsetlake.apply.tail_merge import OUR_CLOCK, Key, clock, gold_key, input_time, tail_replaces
from offsetlake.contract.gold import GoldOffset
from offsetlake.k2k.routing import TracingRoute
from offsetlake.k2k.tracing import TracingHeaderNames
from offsetlake.kafka.group_offsets import GroupOffset
from offsetlake.kafka.tracing_reader import SearchLimits, TracingLookup, look_up_snapshot

METHOD: Final = "k2k_tracing_headers"


@dataclass(frozen=True)
class K2KTracing:
    """Where K2K wrote each source's topics (``offsetlake.k2k.tracing.topics``) and its header names."""

    routes: tuple[TracingRoute, ...]
    names: TracingHeaderNames = field(default_factory=TracingHeaderNames)


@dataclass(frozen=True)
class CutShort:
    """Searches a bound stopped before they completed (SearchLimits: the partition's time, the call's
    budget, the probes), by what the plan used instead."""

    searched: int = 0
    """Their answer, from the records read before the bound, is used (safe: a real record <= U, it
    may re-read more)."""
    gold: int = 0
    """Gold's row of the group-partition is used (no answer, or gold's row is fresher)."""
    none: int = 0
    """No answer and no gold row: the group-partition has no translation."""

    @property
    def total(self) -> int:
        return self.searched + self.gold + self.none


@dataclass(frozen=True)
class SearchedNow:
    offsets: tuple[GoldOffset, ...]
    """Gold's rows, each replaced where the search now translates more freshly."""
    searched: int
    """Group-partitions searched (the selected groups' newest snapshots of a routed source)."""
    replaced: int
    """Group-partitions whose translation now comes from the search."""
    unanswered: tuple[str, ...]
    """Why a search gave no translation (each names its partitions); gold's row stands for it."""
    older: int = 0
    """Searches of a snapshot older than gold's row of the same method (gold's row kept)."""
    cut_short: CutShort = field(default_factory=CutShort)
    """Searches a bound stopped early, by what was used instead."""


def search_newest_snapshots(
    config: Mapping[str, Any],
    snapshots: Mapping[str, Sequence[GroupOffset]],
    tracing: K2KTracing,
    limits: SearchLimits,
) -> list[tuple[str, TracingLookup]]:
    """Every snapshot row of a routed source alias searched on the target (``config``)."""
    lookups: list[tuple[str, TracingLookup]] = []
    for route in tracing.routes:
        rows = snapshots.get(route.alias, ())
        lookups += [
            (route.alias, lookup) for lookup in look_up_snapshot(config, rows, route, tracing.names, limits)
        ]
    return lookups


def merge_searched(
    gold: Sequence[GoldOffset], lookups: Sequence[tuple[str, TracingLookup]], precedence: Sequence[str]
) -> SearchedNow:
    """Pure: gold's rows with every key the search translates more freshly replaced (``from_tail``):
    by tail_merge.tail_replaces, so a search of a snapshot older than gold's row of this method
    (``snapshot_time`` against ``last_observed_at``, both offsetlake's clock) never replaces it."""
    by_key: dict[Key, GoldOffset] = {gold_key(offset): offset for offset in gold}
    replaced = older = 0
    cut = Counter[str]()
    unanswered: list[str] = []
    for alias, lookup in lookups:
        candidate = _translation(alias, lookup)
        cut_short = lookup.result.translation.cut_short
        if candidate is None:
            unanswered.append(f"{lookup.request.where}: {lookup.result.translation.reason}")
            if cut_short:
                cut["gold" if _lookup_key(alias, lookup) in by_key else "none"] += 1
            continue
        key = gold_key(candidate)
        current = by_key.get(key)
        if current is None:
            by_key[key] = candidate
            replaced += 1
            cut["searched"] += cut_short
            continue
        same = current.method == METHOD and _same(current, candidate)  # the pipeline's search said it
        wins = not same and tail_replaces(candidate, current, precedence)
        kept = candidate if wins else current
        if current.upstream_offset == candidate.upstream_offset and clock(current.method) == OUR_CLOCK:
            # The same position, observed by both: as late as either saw it (one clock).
            kept = replace(kept, observed_at=max(input_time(candidate), input_time(current)))
        by_key[key] = kept
        replaced += wins
        older += not same and not wins and current.method == METHOD
        cut["searched" if same or wins else "gold"] += cut_short
    return SearchedNow(
        tuple(by_key.values()), len(lookups), replaced, tuple(unanswered), older, CutShort(**cut)
    )


def _lookup_key(alias: str, lookup: TracingLookup) -> Key:
    return (
        alias,
        lookup.snapshot.consumer_group,
        lookup.request.target_topic,
        lookup.request.target_partition,
    )


def _translation(alias: str, lookup: TracingLookup) -> GoldOffset | None:
    translation = lookup.result.translation
    if translation.downstream_offset is None:
        return None
    snapshot = lookup.snapshot
    return GoldOffset(
        source_cluster=alias,
        consumer_group=snapshot.consumer_group,
        topic=lookup.request.target_topic,
        partition=lookup.request.target_partition,
        downstream_offset=translation.downstream_offset,
        source_timestamp=snapshot.snapshot_time,
        method=METHOD,
        observed_at=snapshot.snapshot_time,
        metadata=snapshot.metadata,
        upstream_offset=lookup.request.upstream_offset,
        from_tail=True,
    )


def _same(current: GoldOffset, candidate: GoldOffset) -> bool:
    return (current.upstream_offset, current.downstream_offset) == (
        candidate.upstream_offset,
        candidate.downstream_offset,
    )
