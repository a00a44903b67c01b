"""Every partition a source group committed gets a place on the target, translated or not.

A plan made of translations alone has no row for a partition no method translates: a group at
offset 0 whose first records MM2 filtered, an offset before the first offset sync or the first
record K2K traced, a group MM2 never checkpointed. Its consumer would then start where
``auto.offset.reset`` says, and Java's default (``latest``) skips the whole partition while the
run says DONE. The partitions a source group committed are known from gold's newest snapshot of
it (latest_group_offsets), named on the target as the pipeline names them (:class:`TopicRouting`);
each one without a translation is placed at the target partition's log start, the earliest offset
(it cannot skip; it re-reads at most what the partition holds), or refused
(:class:`~offsetlake.apply.planner.Untranslated`).

With no snapshot in gold (the source was dead before the pipeline ever read it) the checkpoints
are all that is known: :func:`partial_groups` counts the groups whose checkpoints cover only some
partitions of a topic, which the report names as unknown.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from offsetlake.apply.planner import (
    Action,
    Guards,
    PlanRow,
    Selection,
    TargetState,
    Untranslated,
    group_refusal,
    k2k_guarded_groups,
    missing_reason,
)
from offsetlake.apply.reasons import Flag
from offsetlake.contract.gold import GoldOffset
from offsetlake.k2k.routing import TracingRoute
from offsetlake.kafka.group_offsets import GroupOffset
from offsetlake.mirror.policy import ReplicationPolicy
from offsetlake.mirror.positions import GroupPartition

METHOD = "untranslated"
"""The method a placed partition's plan row and audit rows carry: no method translated it."""


@dataclass(frozen=True)
class TopicRouting:
    """Where a source alias's topic is on the target, as the pipeline names it: K2K's route for an
    alias K2K replicates (``offsetlake.k2k.tracing.topics``), else MM2's replication policy
    (``renameTopicPartition``: a topic that came from the target returns to its name)."""

    policy: ReplicationPolicy
    target_alias: str = ""
    k2k_routes: tuple[TracingRoute, ...] = ()

    def target_topic(self, source_alias: str, topic: str) -> str:
        for route in self.k2k_routes:
            if route.alias == source_alias:
                return route.target_topic(topic)
        if self.target_alias:
            return self.policy.downstream_topic(source_alias, self.target_alias, topic)
        return self.policy.format_remote_topic(source_alias, topic)


@dataclass(frozen=True)
class KnownPartition:
    """A partition a source group committed (its newest snapshot), named on the target."""

    source_cluster: str
    consumer_group: str
    topic: str
    partition: int
    upstream_topic: str
    upstream_offset: int
    snapshot_time: datetime
    metadata: str = ""

    @property
    def key(self) -> GroupPartition:
        return (self.consumer_group, self.topic, self.partition)


def untranslated_partitions(
    snapshots: Mapping[str, Sequence[GroupOffset]],
    routing: TopicRouting,
    translated: Iterable[GoldOffset],
    selection: Selection,
) -> list[KnownPartition]:
    """The selected partitions the newest snapshots say a source group committed (an offset >= 0)
    that no gold row translates, one per key (the newest snapshot when two sources name one key)."""
    covered = {offset.key for offset in translated}
    found: dict[GroupPartition, KnownPartition] = {}
    for alias, offsets in snapshots.items():
        for snapshot in offsets:
            if snapshot.committed_offset < 0 or not snapshot.topic or not snapshot.consumer_group:
                continue
            topic = routing.target_topic(alias, snapshot.topic)
            key = (snapshot.consumer_group, topic, snapshot.partition)
            if key in covered or not selection.selects(snapshot.consumer_group, topic):
                continue
            known = KnownPartition(
                alias,
                snapshot.consumer_group,
                topic,
                snapshot.partition,
                snapshot.topic,
                snapshot.committed_offset,
                snapshot.snapshot_time,
                snapshot.metadata,
            )
            if key not in found or found[key].snapshot_time < known.snapshot_time:
                found[key] = known
    return [found[key] for key in sorted(found)]


def plan_untranslated(known: Sequence[KnownPartition], target: TargetState, guards: Guards) -> list[PlanRow]:
    """A plan row for each known partition without a translation: placed at the log start, or
    refused (missing topic, a group someone consumes or K2K manages, ``--untranslated refuse``, a
    committed offset on the target nobody can say is at or before the source position)."""
    guarded = k2k_guarded_groups(target, guards.k2k_guard_prefix)
    return [_placed(partition, target, guards, guarded) for partition in known]


def _placed(
    known: KnownPartition, target: TargetState, guards: Guards, guarded: Mapping[str, str]
) -> PlanRow:
    group, topic, partition = known.key
    described = target.group(group)
    committed = described.committed.get((topic, partition))
    current = committed.offset if committed is not None else None
    why = (
        f"no method translates {known.source_cluster}'s {known.upstream_topic}[{partition}] offset "
        f"{known.upstream_offset} (snapshot of {known.snapshot_time.isoformat()})"
    )

    def row(action: Action, reason: str, planned: int | None = None) -> PlanRow:
        return PlanRow(
            source_cluster=known.source_cluster,
            consumer_group=group,
            topic=topic,
            partition=partition,
            translated_offset=None,
            planned_offset=planned,
            current_offset=current,
            action=action,
            reason=reason,
            source_timestamp=known.snapshot_time,
            method=METHOD,
            last_observed_at=known.snapshot_time,
            group_type=described.type,
            metadata=known.metadata,
        )

    count = target.partition_counts.get(topic)
    if count is None or partition >= count:
        return row(Action.SKIP_MISSING_TOPIC, f"{why}; {missing_reason(topic, partition, count)}")
    unread = guards.unread_sources.get(known.source_cluster)
    if unread is not None:
        return row(Action.SKIP_TAIL_UNREAD, f"{why}; {unread} (pass {Flag.ACCEPT_GOLD_WITHOUT_TAIL})")
    refusal = group_refusal(group, described, guarded.get(group), guards)
    if refusal is not None:
        return row(refusal[0], f"{why}; {refusal[1]}")
    if guards.untranslated is Untranslated.REFUSE:
        return row(Action.SKIP_UNTRANSLATED, f"{why}; refused ({Flag.UNTRANSLATED} {Untranslated.REFUSE})")
    bounds = target.log_bounds.get((topic, partition))
    if bounds is None:
        return row(Action.SKIP_UNTRANSLATED, f"{why}; the target's log bounds were not read")
    start, held = bounds.log_start, bounds.log_end - bounds.log_start
    if current is not None and current > start and not guards.allow_rewind:
        return row(
            Action.SKIP_UNTRANSLATED,
            f"{why}; the group is at {current} on the target, which nothing shows is at or before its "
            f"source position: pass {Flag.ALLOW_REWIND} to place it at the log start {start} "
            f"(re-reads {current - start} records)",
            start,
        )
    if current == start:
        return row(Action.NOOP, f"{why}; already at the log start {start}", start)
    return row(
        Action.PLACE_AT_LOG_START,
        f"{why}: placed at the log start {start}, the earliest offset, which cannot skip "
        f"(re-reads at most the {held} records the partition holds)",
        start,
    )


def partial_groups(offsets: Iterable[GoldOffset], target: TargetState) -> int:
    """Groups with translations on only some partitions of a target topic: with no snapshot to say
    what they committed, the other partitions are unknown."""
    partitions: dict[tuple[str, str], set[int]] = defaultdict(set)
    for offset in offsets:
        partitions[(offset.consumer_group, offset.topic)].add(offset.partition)
    return len(
        {
            group
            for (group, topic), seen in partitions.items()
            if (count := target.partition_counts.get(topic)) is not None and len(seen) < count
        }
    )
