"""The k2k_tracing_headers method at failover time: the newest group snapshots, searched on the target now.

The pipeline searches each snapshot when it takes it (data_sources/offsetlake_k2k_tracing.py), so
gold already holds a translation of every group's newest committed position U. A failover reads
the target anyway, and what K2K replicated since that update can only make the answer exact where
it was "past the last replicated record": so the apply searches the newest snapshot of each
selected group-partition again, with no JVM and no source cluster (U comes from
``latest_group_offsets``). The answer competes with gold's row by the pipeline's rules: it is the
k2k_tracing_headers method's newest observation (observed at the snapshot's time, as the pipeline
records it), replaces gold's row of that method, and competes with another method's row by the
precedence rule (mirror/precedence.py). A search that cannot translate leaves gold as it is and
is reported with its reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from offsetlake.apply.planner import GoldOffset
from offsetlake.apply.tail_merge import Key, gold_key, tail_replaces
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
class SearchedNow:
    offsets: tuple[GoldOffset, ...]
    """Gold's rows, each replaced where the search now translates more freshly."""
    searched: int
    """Group-partitions searched (the selected groups' newest snapshots of a routed source)."""
    replaced: int
    """Group-partitions whose translation now comes from the search."""
    unanswered: tuple[str, ...]
    """Why a search gave no translation (each names its partitions); gold's row stands for it."""


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
    """Pure: gold's rows with every key the search translates more freshly replaced (``from_tail``)."""
    by_key: dict[Key, GoldOffset] = {gold_key(offset): offset for offset in gold}
    replaced = 0
    unanswered: list[str] = []
    for alias, lookup in lookups:
        candidate = _translation(alias, lookup)
        if candidate is None:
            unanswered.append(f"{lookup.request.where}: {lookup.result.translation.reason}")
            continue
        key = gold_key(candidate)
        current = by_key.get(key)
        if current is not None and current.method == METHOD and _same(current, candidate):
            continue  # the pipeline's search of this snapshot said the same
        if current is None or tail_replaces(candidate, current, precedence):
            by_key[key] = candidate
            replaced += 1
    return SearchedNow(tuple(by_key.values()), len(lookups), replaced, tuple(unanswered))


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
