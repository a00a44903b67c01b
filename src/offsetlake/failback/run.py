"""``run_failback``: the day after the outage, every group that ran on the target goes home.

During an outage the consumers ran on the target (``dr``) of the forward flow ``primary -> dr`` and
committed their positions there: on ``primary.<topic>`` (replicated) and on ``dr``'s own topics
(written by producers that failed over). Failback moves each group back to ``primary``:

- a position D on a replicated partition is translated **downstream -> upstream** through the
  forward flow's history (docs/failback.md): the retained offset syncs in silver
  (offsetlake.mirror.reverse_translation: the newest sync at or below D, exact at D, else U + 1)
  and, for a K2K-routed source, the tracing headers of the record at D on ``dr``
  (offsetlake.k2k.reverse_tracing, exact). Both never skip, so the larger answer wins;
- a position on ``dr``'s own topic goes the ordinary way, through the reverse flow ``dr -> primary``
  that replicates it to ``dr.<topic>`` on ``primary``: that flow's MM2 checkpoints, read on
  ``primary`` from their log start (kafka/checkpoint_tail.py), checked against the group's live
  position on ``dr`` (a checkpoint past it would skip, and is not used).

A partition with no translation either places its group at the source partition's log start
(re-reading all it holds) or refuses the whole group: a group moved back with one partition
missing would resume there wherever ``auto.offset.reset`` says. The translated positions are then
planned, applied, verified and audited by ``run_apply`` on ``primary``, with every guard of
``apply`` (active groups refused, no rewind unless asked, missing topics), ``direction`` failback.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final, Protocol

from confluent_kafka.admin import OffsetSpec

from offsetlake.apply.audit import Direction
from offsetlake.apply.k2k_search import K2KTracing
from offsetlake.apply.planner import GroupPartition, Selection, Untranslated
from offsetlake.apply.run import ApplyRequest, ApplyResult, ApplyStatus, run_apply
from offsetlake.apply.store import CheckpointPositions, GoldStore
from offsetlake.apply.tail_merge import merge_tail
from offsetlake.contract.gold import ClusterHealth, GoldOffset, GroupDataLoss, LastApplied
from offsetlake.k2k.reverse_tracing import ReverseTraced
from offsetlake.k2k.routing import TOPIC_PLACEHOLDER, TracingRoute
from offsetlake.kafka import admin as kafka_admin
from offsetlake.kafka import clients
from offsetlake.kafka.admin import KafkaAdminError
from offsetlake.kafka.checkpoint_tail import read_checkpoint_tail
from offsetlake.kafka.group_offsets import GroupOffset, snapshot_group_offsets
from offsetlake.kafka.secrets import SecretsProvider
from offsetlake.kafka.tracing_reader import ReverseTracingRequest, SearchLimits, reverse_from_tracing_headers
from offsetlake.mirror.policy import ReplicationPolicy
from offsetlake.mirror.reverse_translation import translate_back

if TYPE_CHECKING:
    from offsetlake.apply.gold_rows import SyncHistories  # pyarrow: not before a failback reads gold

METHOD_SYNCS: Final = "offset_sync (reverse)"
METHOD_TRACING: Final = "k2k_tracing_headers (reverse)"
METHOD_REVERSE_FLOW: Final = "checkpoint (reverse flow)"
METHOD_LOG_START: Final = "log_start (untranslated)"


class Route(StrEnum):
    """Which way a partition went back."""

    FORWARD_HISTORY = "forward flow's history"
    """A replicated partition, translated downstream -> upstream."""
    REVERSE_FLOW = "reverse flow"
    """The target's own topic, through the reverse flow's checkpoints (``dr.<topic>`` on the source)."""


class FailbackStore(GoldStore, Protocol):
    """A gold store that also reads the forward flow's offset syncs (both stores do)."""

    def offset_syncs(self, source_cluster: str, topics: Collection[str]) -> SyncHistories: ...


@dataclass(frozen=True)
class FailbackRequest:
    apply: ApplyRequest
    """Guards, selection, schema, timeouts; its target is the cluster going back to (``primary``)."""
    source_alias: str
    """The cluster going back to, as the forward flow names it (``primary.<topic>`` on ``dr``)."""
    source_config: Mapping[str, str] = field(repr=False)
    target_alias: str
    """The cluster the consumers ran on, as the reverse flow names it (``dr.<topic>`` on ``primary``)."""
    target_config: Mapping[str, str] = field(repr=False)
    policy: ReplicationPolicy = field(default_factory=ReplicationPolicy)
    tracing: K2KTracing | None = None
    """K2K's routes and header names: a routed source's partitions are also translated on headers."""
    untranslated: Untranslated = Untranslated.EARLIEST


@dataclass(frozen=True)
class PartitionPath:
    """One committed position on the target and the way it went back."""

    consumer_group: str
    topic: str
    """The topic on the cluster the consumers ran on."""
    partition: int
    committed: int
    route: Route
    source_topic: str
    """Its name on the cluster going back to (``orders``, or ``dr.payments`` for the reverse flow)."""
    resume_at: int | None
    """The position planned on the source (None: no translation)."""
    method: str = ""
    exact: bool = False
    reread_bound: int | None = None
    """At most this many records are read again (None: not bounded by the history)."""
    reason: str = ""


@dataclass(frozen=True)
class FailbackResult:
    apply: ApplyResult
    paths: tuple[PartitionPath, ...]
    refused_groups: tuple[str, ...] = ()
    """Groups left where they are: a partition without translation (``Untranslated.REFUSE``)."""
    translate_seconds: float = 0.0

    @property
    def status(self) -> ApplyStatus:
        """The apply's status; refused groups make an otherwise good run, or one left with nothing
        to apply, REFUSED; nothing to move back at all is FAILED, as an apply with an empty gold."""
        if self.refused_groups and (self.apply.status is ApplyStatus.OK or not self.apply.gold_rows):
            return ApplyStatus.REFUSED
        return self.apply.status

    @property
    def exit_code(self) -> int:
        return int(self.status)


def run_failback(
    request: FailbackRequest, *, store: FailbackStore, secrets: SecretsProvider | None = None
) -> FailbackResult:
    """Read the groups on the target, translate each position back, then ``run_apply`` on the source
    with those positions as its gold (``store`` reads the syncs and keeps the audit)."""
    started = time.monotonic()
    timeout_s = request.apply.timeout_s
    selection = request.apply.selection
    snapshot = [
        row
        for row in snapshot_group_offsets(request.target_config, ".*", None, timeout_s)
        if selection.selects_group(row.consumer_group) and row.committed_offset >= 0
    ]
    paths = _translated(request, snapshot, store)
    refused = _refused_groups(paths, request.untranslated)
    by_key = {(row.consumer_group, row.topic, row.partition): row for row in snapshot}
    offsets = [
        _gold_offset(path, by_key[(path.consumer_group, path.topic, path.partition)], request.target_alias)
        for path in paths
        if path.resume_at is not None and path.consumer_group not in refused
    ]
    apply = replace(
        request.apply,
        as_of=None,
        checkpoint_tail=None,
        k2k_tracing=None,
        tail_only=False,
        direction=Direction.FAILBACK,
        # Failback plans every partition itself (untranslated ones included) on the way home, and
        # is the operator's resume: the groups the failover held go back to the sync from here on.
        routing=None,
        as_failover=False,
        resume_sync=True,
    )
    translated = time.monotonic() - started
    applied = run_apply(apply, store=_Translated(store, offsets), secrets=secrets)
    return FailbackResult(applied, tuple(paths), tuple(sorted(refused)), translated)


def _translated(
    request: FailbackRequest, snapshot: Sequence[GroupOffset], store: FailbackStore
) -> list[PartitionPath]:
    """Every committed position of the snapshot with its way back."""
    replicated: list[tuple[GroupOffset, str]] = []
    own: list[GroupOffset] = []
    for row in snapshot:
        upstream = _upstream_topic(request, row.topic)
        if upstream is None:
            own.append(row)
        else:
            replicated.append((row, upstream))
    paths = _from_forward_history(request, replicated, store) if replicated else []
    if own:
        paths += _through_reverse_flow(request, own)
    return sorted(paths, key=lambda path: (path.consumer_group, path.topic, path.partition))


def _upstream_topic(request: FailbackRequest, topic: str) -> str | None:
    """The source's name of a topic the forward flow replicated to the target; None for the
    target's own topics. MM2's naming first, then the source's K2K route (a template with literal
    text around ``{topic}``: ``{topic}`` alone would claim every topic)."""
    policy = request.policy
    if policy.kind == "default" and policy.topic_source(topic) == request.source_alias:
        return policy.upstream_topic(topic)
    route = _route(request)
    if route is not None:
        return _routed_from(route, topic)
    return None


def _route(request: FailbackRequest) -> TracingRoute | None:
    routes = request.tracing.routes if request.tracing else ()
    return next((route for route in routes if route.alias == request.source_alias), None)


def _routed_from(route: TracingRoute, topic: str) -> str | None:
    """The source topic K2K routed to ``topic`` by ``route``'s template, when it can be told."""
    parts = route.parts
    if len(parts) != 2 or not (parts[0] or parts[1]):
        return None
    before, after = parts
    inner = topic[len(before) : len(topic) - len(after)]
    if topic.startswith(before) and topic.endswith(after) and inner and TOPIC_PLACEHOLDER not in inner:
        return inner
    return None


def _from_forward_history(
    request: FailbackRequest, replicated: Sequence[tuple[GroupOffset, str]], store: FailbackStore
) -> list[PartitionPath]:
    """Offset syncs and, for a routed source, tracing headers; the larger safe answer wins."""
    histories: SyncHistories = store.offset_syncs(
        request.source_alias, {upstream for _, upstream in replicated}
    )
    log_ends = _log_ends(request, {(upstream, row.partition) for row, upstream in replicated})
    traced = _traced(request, replicated)
    paths = []
    for row, upstream in replicated:
        synced = translate_back(
            histories.get((upstream, row.partition), []),
            row.committed_offset,
            source_log_end=log_ends.get((upstream, row.partition)),
        )
        candidates = []
        if synced.upstream_offset is not None:
            candidates.append((synced.upstream_offset, METHOD_SYNCS, synced.exact, synced.reread_bound, ""))
        reasons = [f"offset syncs: {synced.detail}"] if synced.untranslated else []
        found = traced.get(ReverseTracingRequest(row.topic, row.partition, upstream, row.partition,
                                                 row.committed_offset))  # fmt: skip
        if found is not None and found.upstream_offset is not None:
            end = log_ends.get((upstream, row.partition))
            bound = 0 if found.exact else (None if end is None else max(0, end - found.upstream_offset))
            candidates.append((found.upstream_offset, METHOD_TRACING, found.exact, bound, found.reason or ""))
        elif found is not None:
            reasons.append(f"tracing headers: {found.reason}")
        base = PartitionPath(row.consumer_group, row.topic, row.partition, row.committed_offset,
                             Route.FORWARD_HISTORY, upstream, None)  # fmt: skip
        if candidates:
            resume, method, exact, bound, note = max(candidates, key=lambda candidate: candidate[:3:2])
            paths.append(replace(base, resume_at=resume, method=method, exact=exact, reread_bound=bound,
                                 reason=note))  # fmt: skip
        else:
            paths.append(_untranslated(request, base, "; ".join(reasons)))
    return paths


def _traced(
    request: FailbackRequest, replicated: Sequence[tuple[GroupOffset, str]]
) -> Mapping[ReverseTracingRequest, ReverseTraced]:
    if _route(request) is None or request.tracing is None:
        return {}
    requests = [
        ReverseTracingRequest(row.topic, row.partition, upstream, row.partition, row.committed_offset)
        for row, upstream in replicated
    ]
    limits = SearchLimits(timeout_s=request.apply.timeout_s, budget_s=request.apply.timeout_s)
    return reverse_from_tracing_headers(request.target_config, requests, request.tracing.names, limits)


def _log_ends(request: FailbackRequest, keys: Collection[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """The source partitions' log ends, in one request (bounding the re-reads past the last sync);
    when the source cannot answer for one, none is bounded (the apply reports the source itself)."""
    with clients.admin(request.source_config) as admin:
        try:
            return kafka_admin.list_log_offsets(
                admin, sorted(keys), OffsetSpec.latest(), timeout_s=request.apply.timeout_s
            )
        except KafkaAdminError:
            return {}


def _through_reverse_flow(request: FailbackRequest, own: Sequence[GroupOffset]) -> list[PartitionPath]:
    """The target's own topics, by the reverse flow's newest checkpoint of each group-partition on
    the source, when it does not lie past the group's live position (it would skip)."""
    tail = read_checkpoint_tail(request.source_config, request.policy, timeout_s=request.apply.timeout_s)
    flows = [record for record in tail.records if record.source_cluster == request.target_alias]
    unread = "; ".join(
        f"{part.topic}[{part.partition}] not read to its end: {part.reason}" for part in tail.unreadable
    )
    newest = {
        (offset.consumer_group, offset.topic, offset.partition): offset
        for offset in merge_tail([], flows, request.apply.method_precedence).offsets
    }
    paths = []
    for row in own:
        remote = request.policy.format_remote_topic(request.target_alias, row.topic)
        base = PartitionPath(row.consumer_group, row.topic, row.partition, row.committed_offset,
                             Route.REVERSE_FLOW, remote, None, METHOD_REVERSE_FLOW)  # fmt: skip
        checkpoint = newest.get((row.consumer_group, remote, row.partition))
        if checkpoint is None:
            why = f"no checkpoint of the reverse flow ({request.target_alias} -> source) for it"
            why += f" ({unread})" if unread else ""
            paths.append(_untranslated(request, base, why))
        elif checkpoint.upstream_offset is not None and checkpoint.upstream_offset > row.committed_offset:
            why = (
                f"the reverse flow's checkpoint is of position {checkpoint.upstream_offset}, past the "
                f"group's {row.committed_offset} (the group was moved back since): it would skip"
            )
            paths.append(_untranslated(request, base, why))
        else:
            exact = checkpoint.upstream_offset == row.committed_offset
            note = "" if exact else f"checkpoint of position {checkpoint.upstream_offset}: re-reads more"
            paths.append(replace(base, resume_at=checkpoint.downstream_offset, exact=False, reason=note))
    return paths


def _untranslated(request: FailbackRequest, base: PartitionPath, why: str) -> PartitionPath:
    if request.untranslated is Untranslated.EARLIEST:
        return replace(base, resume_at=0, method=METHOD_LOG_START, reason=f"{why}: placed at the log start")
    return replace(base, reason=f"{why}: group refused (--untranslated {Untranslated.EARLIEST} "
                                "places it at the log start)")  # fmt: skip


def _refused_groups(paths: Sequence[PartitionPath], policy: Untranslated) -> set[str]:
    if policy is Untranslated.EARLIEST:
        return set()
    return {path.consumer_group for path in paths if path.resume_at is None}


def _gold_offset(path: PartitionPath, row: GroupOffset, target_alias: str) -> GoldOffset:
    """The way back as the apply takes a translation: a position on the source, observed now."""
    assert path.resume_at is not None
    return GoldOffset(
        source_cluster=target_alias,
        consumer_group=path.consumer_group,
        topic=path.source_topic,
        partition=path.partition,
        downstream_offset=path.resume_at,
        source_timestamp=row.snapshot_time,
        method=path.method,
        observed_at=row.snapshot_time,
        metadata=row.metadata,
        upstream_offset=path.committed,
    )


class _Translated:
    """The gold store the failback's apply reads: the positions translated back, and the store's
    own audit (its memory of what was applied, and where this run's rows go)."""

    def __init__(self, store: GoldStore, offsets: Sequence[GoldOffset]) -> None:
        self.store, self.offsets = store, list(offsets)
        self.schema, self.catalog = store.schema, store.catalog

    def latest_offsets(self, selection: Selection | None = None) -> list[GoldOffset]:
        return list(self.offsets)

    def offsets_as_of(self, as_of: datetime, **_: Any) -> list[GoldOffset]:
        return list(self.offsets)

    def count_translations(self, as_of: datetime | None = None) -> int:
        return len(self.offsets)

    def cluster_health(self) -> list[ClusterHealth]:
        return []

    def failover_data_loss(self, selection: Selection) -> list[GroupDataLoss]:
        return []

    def last_applied(self, selection: Selection | None = None) -> dict[GroupPartition, LastApplied]:
        return self.store.last_applied(selection)

    def append_audit(self, records: Sequence[tuple[Any, ...]]) -> int:
        return self.store.append_audit(records)

    def checkpoint_positions(self) -> CheckpointPositions:
        return {}

    def newest_group_offsets(self, selection: Selection | None = None) -> dict[str, list[GroupOffset]]:
        return {}

    def mapping_conflicts(self, selection: Selection | None = None) -> dict[GroupPartition, str]:
        return {}

    def close(self) -> None:
        """The store is its opener's to close."""
