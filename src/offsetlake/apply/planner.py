"""Pure planning: gold offsets + the target cluster's state -> one plan row per group-partition.

Every safety decision of the apply job is taken here, without Spark or Kafka, so each guard is a
plain function of its inputs and can be tested exhaustively. The executor only carries out rows
whose action alters offsets; everything else is reported with its reason and left untouched.

The rule is :func:`plan_partition`: one group-partition, every guard, decided once. The plan of a
fleet (``plan_columns.build_plan``) takes the rule's common outcomes in Arrow columns and hands it
every other key. A new guard is a ``Guards`` field and its check in the rule (with its unit tests),
then its place in ``plan_columns.COLUMN_GUARDS``: decided there, or deferred to the rule (a test
fails until every field is placed).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import NamedTuple

from offsetlake.apply.reasons import Flag
from offsetlake.contract.gold import GoldOffset, NameBounds
from offsetlake.durations import format_duration
from offsetlake.errors import UsageError
from offsetlake.mirror.filters import NameFilter
from offsetlake.mirror.positions import CommittedOffset, GroupPartition, LogBounds, TopicPartitionKey

# Group states in which nobody consumes, so an alter cannot race a member's commits. A group the
# target never saw is described as Dead (Apache Kafka < 4), reported GROUP_ID_NOT_FOUND (KIP-1043)
# or Empty (Tansu); all three are safe. Anything else, including an unparsable state, is active.
SAFE_GROUP_STATES = frozenset({"Empty", "Dead", "NotFound"})


class Action(StrEnum):
    APPLY = "apply"
    NOOP = "noop"
    CLAMP_TO_LOG_END = "clamp_to_log_end"
    CLAMP_TO_LOG_START = "clamp_to_log_start"
    SKIP_ACTIVE_GROUP = "skip_active_group"
    SKIP_WOULD_REWIND = "skip_would_rewind"
    SKIP_MISSING_TOPIC = "skip_missing_topic"
    SKIP_STALE = "skip_stale"
    SKIP_CONFLICT = "skip_conflict"
    SKIP_INVALID = "skip_invalid"
    SKIP_K2K_GUARDED = "skip_k2k_guarded"
    SKIP_DUPLICATE_ROUTING = "skip_duplicate_routing"
    REFRESH_RETENTION = "refresh_retention"
    PLACE_AT_LOG_START = "place_at_log_start"
    SKIP_UNTRANSLATED = "skip_untranslated"
    SKIP_TAIL_UNREAD = "skip_tail_unread"
    SKIP_FAILED_OVER = "skip_failed_over"

    @property
    def alters(self) -> bool:
        """True for the actions the executor carries out."""
        return self in _ALTERING

    @property
    def places(self) -> bool:
        """True when the partition ends at a position that skips nothing: moved there, or already
        there. Every other action leaves it to the consumer's ``auto.offset.reset`` or to where it
        was, which the run cannot vouch for: not placed."""
        return self in _ALTERING or self is Action.NOOP


_ALTERING = frozenset(
    {
        Action.APPLY,
        Action.CLAMP_TO_LOG_END,
        Action.CLAMP_TO_LOG_START,
        Action.REFRESH_RETENTION,
        Action.PLACE_AT_LOG_START,
    }
)


class Untranslated(StrEnum):
    """What a partition a source group committed gets when no method translates its offset:
    ``earliest`` places it at the target partition's log start (it cannot skip a record; it
    re-reads at most the whole partition), ``refuse`` leaves it and the run is INCOMPLETE."""

    EARLIEST = "earliest"
    REFUSE = "refuse"


class ActiveGroupPolicy(StrEnum):
    FAIL = "fail"
    SKIP = "skip"


class MultipleTargetsPolicy(StrEnum):
    """K2K's ``errorHandling.onMultipleTargetCommittedOffsets``, for translations resting on a source
    record K2K mapped to several target topics: ``fail`` refuses the group-partition, ``ignore``
    applies each routing."""

    FAIL = "fail"
    IGNORE = "ignore"


K2K_GUARD_PREFIX = "k2k_"
"""K2K's offset mapper keeps a version guard in each target group's commit metadata, prefixed so
by default (``groups.offsetGuardPrefix``, feature ``applyMappingsGuard``)."""


class PlanError(UsageError, ValueError):
    """Inputs the planner cannot reason about (bad regex, duplicate keys, negative bounds)."""


@dataclass(frozen=True)
class TargetGroup:
    """One consumer group on the target, in Kafka's own words: its state (``Empty``, ``Stable`` ...;
    ``NotFound`` when the group does not exist), its type (``classic``, ``consumer`` (KIP-848);
    ``unknown`` when the broker does not say), its number of members, and its committed offsets of
    the partitions being planned."""

    state: str
    type: str = "unknown"
    members: int = 0
    committed: Mapping[TopicPartitionKey, CommittedOffset] = field(default_factory=dict)


UNDESCRIBED = TargetGroup("Unknown")
"""A group the target read did not describe: its state is unknown, so it counts as active."""


def is_safe_to_alter(group: TargetGroup) -> bool:
    """Nobody consumes: a safe state (SAFE_GROUP_STATES) and no members (a KIP-848 group in use
    can be described as Empty by some brokers, with its members)."""
    return group.state in SAFE_GROUP_STATES and group.members == 0


@dataclass(frozen=True)
class TargetState:
    """What the target cluster looks like for the groups and partitions being planned: one entry
    per group, and the log of each topic-partition."""

    groups: Mapping[str, TargetGroup]
    log_bounds: Mapping[TopicPartitionKey, LogBounds]
    partition_counts: Mapping[str, int]

    def group(self, name: str) -> TargetGroup:
        return self.groups.get(name, UNDESCRIBED)


@dataclass(frozen=True)
class Selection:
    """Which groups and topics a run may touch: the ``--groups``, ``--exclude-groups``, ``--topics``
    and ``--exclude-topics`` regexes (each must match the whole name, as MM2's filters do:
    offsetlake.mirror.filters), compiled once, here, and the bounds a reader can hand to storage.

    Everything that asks which names a run covers asks this object: the planner
    (:func:`select_offsets`), gold and the audit (``group_bounds``/``topic_bounds`` narrow the
    scan), the data-loss estimate (:meth:`selects_group`). A bad regex raises PlanError naming its
    flag when the Selection is built.
    """

    groups: str = ".*"
    exclude_groups: str | None = None
    topics: str = ".*"
    exclude_topics: str | None = None
    group_filter: NameFilter = field(init=False, repr=False, compare=False)
    topic_filter: NameFilter = field(init=False, repr=False, compare=False)
    group_bounds: NameBounds | None = field(init=False, repr=False, compare=False)
    """Literal group names and prefixes covering every group ``groups`` matches (None: any group)."""
    topic_bounds: NameBounds | None = field(init=False, repr=False, compare=False)
    """Likewise for ``topics``."""

    def __post_init__(self) -> None:
        derived = {
            "group_filter": _filter(self.groups, Flag.GROUPS, self.exclude_groups, Flag.EXCLUDE_GROUPS),
            "topic_filter": _filter(self.topics, Flag.TOPICS, self.exclude_topics, Flag.EXCLUDE_TOPICS),
            "group_bounds": name_bounds(self.groups),
            "topic_bounds": name_bounds(self.topics),
        }
        for name, value in derived.items():
            object.__setattr__(self, name, value)

    @property
    def narrows(self) -> bool:
        """Whether the bounds rule any name out before the regexes run (literal names or prefixes)."""
        return self.group_bounds is not None or self.topic_bounds is not None

    def selects_group(self, group: str) -> bool:
        return self.group_filter.matches(group)

    def selects(self, group: str, topic: str) -> bool:
        return self.group_filter.matches(group) and self.topic_filter.matches(topic)


def _filter(include: str, include_flag: Flag, exclude: str | None, exclude_flag: Flag) -> NameFilter:
    return NameFilter(_compile(include, include_flag), _compile(exclude, exclude_flag) if exclude else None)


@dataclass(frozen=True)
class Guards:
    """The safety switches of one run; the defaults are the safe ones."""

    # The time translations are aged against: the wall clock, or the --as-of time of a restore.
    reference_time: datetime
    max_age: timedelta | None = timedelta(hours=1)
    allow_rewind: bool = False
    active_group_policy: ActiveGroupPolicy = ActiveGroupPolicy.FAIL
    # Source timestamp of the translation already applied per group-partition (from the audit
    # table): anything older is refused unless rewinds are allowed.
    last_applied: Mapping[GroupPartition, datetime] = field(default_factory=dict)
    # Keep-alive: an unchanged offset offsetlake last committed longer ago than this is committed
    # again (same offset, same metadata), before the target's offsets.retention.minutes expires
    # it in a group nobody consumes from yet. None: never.
    keep_alive_after: timedelta | None = None
    last_committed_at: Mapping[GroupPartition, datetime] = field(default_factory=dict)
    # A target group whose commit metadata starts with this belongs to K2K's offset mapper: both
    # tools writing one group overwrite each other, so it is skipped unless ignore_k2k_guard (the
    # reason then says so). Empty: not checked.
    k2k_guard_prefix: str = K2K_GUARD_PREFIX
    ignore_k2k_guard: bool = False
    # Group-partitions whose mapping translation rests on a source record mapped to several target
    # topics (gold k2k_mapping_conflicts), with the reason, and what to do with them.
    mapping_conflicts: Mapping[GroupPartition, str] = field(default_factory=dict)
    on_multiple_targets: MultipleTargetsPolicy = MultipleTargetsPolicy.FAIL
    # The offset offsetlake last committed and verified per group-partition (the audit): a target
    # still there that a newer translation puts lower was moved by the source group itself (a reset
    # there), not by consumers on the target, so the lower offset is applied (re-reads, no skip).
    last_verified_offset: Mapping[GroupPartition, int] = field(default_factory=dict)
    # Source aliases whose newest checkpoints the run could not read (an unreadable or undecodable
    # checkpoints partition, no checkpoints topic while gold holds checkpoint rows), with why: their
    # partitions are refused unless the operator accepts gold's translations as they are.
    unread_sources: Mapping[str, str] = field(default_factory=dict)
    untranslated: Untranslated = Untranslated.EARLIEST
    # Groups a failover placed that no operator has resumed since (the audit), with when: a
    # failover stays failed over whatever a schedule, a redeploy or a manual sync run says.
    failover_holds: Mapping[str, datetime] = field(default_factory=dict)


@dataclass(frozen=True)
class PlanRow:
    """One group-partition: what the target has, what gold says, and what the run will do.

    Offsets are committed positions, as Kafka stores them: the next record the group will read.
    """

    source_cluster: str
    consumer_group: str
    topic: str
    partition: int
    translated_offset: int | None
    planned_offset: int | None
    current_offset: int | None
    action: Action
    reason: str
    source_timestamp: datetime | None
    method: str = ""
    """How gold translated it (checkpoint, offset_sync, mapping)."""
    last_observed_at: datetime | None = None
    """Latest evidence that the translation still holds: what its age is measured from."""
    group_type: str = ""
    """The target group's protocol: ``classic``, ``consumer`` (KIP-848), ``unknown``; empty when the
    row was decided before the target was read."""
    metadata: str = ""
    """Commit metadata to write with the offset: the source group's own, byte for byte. It belongs
    to the application (Kafka Streams keeps each task's partition time there); offsetlake's
    provenance lives in apply_audit only."""

    @property
    def key(self) -> GroupPartition:
        return (self.consumer_group, self.topic, self.partition)

    def age(self, now: datetime) -> timedelta | None:
        return None if self.last_observed_at is None else now - self.last_observed_at

    @property
    def records_reread(self) -> int | None:
        """Records the group reads again after the change (it moves backwards)."""
        if self.planned_offset is None or self.current_offset is None:
            return None
        return max(0, self.current_offset - self.planned_offset)

    @property
    def records_skipped(self) -> int | None:
        """Records the group will never read after the change (it moves forwards)."""
        if self.planned_offset is None or self.current_offset is None:
            return None
        return max(0, self.planned_offset - self.current_offset)


_REGEX_SYNTAX = frozenset("\\.^$*+?{}[]|()")


def name_bounds(pattern: str) -> NameBounds | None:
    """The bounds of ``pattern`` when it is made of literal names and literal prefixes only
    (``orders-app|billing``, ``orders-.*``); None for any other regex (nothing can be said without
    running it). A reader hands the bounds to storage (Parquet/Delta skip row groups and files by
    them), and the regex still decides (:func:`select_offsets`): the bounds only narrow."""
    names: set[str] = set()
    prefixes: list[str] = []
    for alternative in pattern.split("|"):
        literal, is_prefix = (alternative[:-2], True) if alternative.endswith(".*") else (alternative, False)
        if _REGEX_SYNTAX.intersection(literal):
            return None
        if is_prefix and not literal:
            return None  # ".*" alone: every name
        if is_prefix:
            prefixes.append(literal)
        else:
            names.add(literal)
    return NameBounds(frozenset(names), tuple(prefixes))


def select_offsets(offsets: Iterable[GoldOffset], selection: Selection) -> list[GoldOffset]:
    """The gold offsets whose group and topic pass the include/exclude regexes."""
    return [offset for offset in offsets if selection.selects(offset.consumer_group, offset.topic)]


def plan_each(
    offsets: Sequence[GoldOffset], target: TargetState, guards: Guards, guarded: Mapping[str, str]
) -> list[PlanRow]:
    """The plan by the rule alone, key by key: plan_columns.build_plan's fallback, and what it is held
    equal to."""
    by_key: dict[GroupPartition, list[GoldOffset]] = defaultdict(list)
    invalid: list[PlanRow] = []
    for offset in offsets:
        reason = invalid_reason(offset)
        if reason is None:
            by_key[(offset.consumer_group, offset.topic, offset.partition)].append(offset)
        else:
            invalid.append(invalid_row(offset, reason))
    rows = [plan_partition(key, by_key[key], target, guards, guarded) for key in sorted(by_key)]
    return sorted(invalid, key=lambda row: row.key) + rows


def k2k_guarded_groups(target: TargetState, prefix: str) -> dict[str, str]:
    """Target groups K2K's offset mapper manages (a commit's metadata starts with ``prefix``), with
    the evidence: the whole group is left to K2K, not only the partitions carrying the guard."""
    if not prefix:
        return {}
    guarded: dict[str, str] = {}
    for name, group in target.groups.items():
        marked = [key for key, committed in group.committed.items() if committed.metadata.startswith(prefix)]
        if marked:
            topic, partition = min(marked)  # the same partition named on every run
            metadata = group.committed[(topic, partition)].metadata
            guarded[name] = (
                f"its commit on {topic}-{partition} carries metadata {metadata[:40]!r} "
                f"with K2K's guard prefix {prefix!r}"
            )
    return guarded


def invalid_reason(offset: GoldOffset) -> str | None:
    """Why a gold row cannot be a Kafka position (it is then skipped alone, never the whole run)."""
    if not offset.consumer_group:
        return "empty consumer group id"
    if not offset.topic:
        return "empty topic name"
    if offset.partition < 0:
        return f"negative partition {offset.partition}"
    if offset.downstream_offset < 0:
        return f"negative translated offset {offset.downstream_offset}"
    return None


def invalid_row(offset: GoldOffset, reason: str) -> PlanRow:
    return PlanRow(
        source_cluster=offset.source_cluster,
        consumer_group=offset.consumer_group,
        topic=offset.topic,
        partition=offset.partition,
        translated_offset=offset.downstream_offset,
        planned_offset=None,
        current_offset=None,
        action=Action.SKIP_INVALID,
        reason=f"not a valid Kafka position in gold: {reason}",
        source_timestamp=offset.source_timestamp,
        method=offset.method,
        last_observed_at=offset.observed_at or offset.source_timestamp,
    )


def refused_by_active_policy(plan: Sequence[PlanRow], guards: Guards) -> list[str]:
    """Active groups that make the whole run refuse under the ``fail`` policy (sorted)."""
    if guards.active_group_policy is not ActiveGroupPolicy.FAIL:
        return []
    return sorted({row.consumer_group for row in plan if row.action is Action.SKIP_ACTIVE_GROUP})


class _Candidates(NamedTuple):
    """What a group-partition's gold rows say together: the newest, their distinct translations,
    their sources and methods (joined, sorted), and the latest evidence of any."""

    newest: GoldOffset
    distinct_offsets: list[int]
    sources: str
    methods: str
    last_seen: datetime

    @classmethod
    def of(cls, candidates: Sequence[GoldOffset]) -> _Candidates:
        if len(candidates) == 1:  # the common case, without the set and sort work (1M rows in a failover)
            (newest,) = candidates
            last_seen = newest.observed_at or newest.source_timestamp
            return cls(newest, [newest.downstream_offset], newest.source_cluster, newest.method, last_seen)
        return cls(
            max(candidates, key=lambda candidate: candidate.source_timestamp),
            sorted({candidate.downstream_offset for candidate in candidates}),
            ",".join(sorted({candidate.source_cluster for candidate in candidates})),
            ",".join(sorted({candidate.method for candidate in candidates if candidate.method})),
            max(candidate.observed_at or candidate.source_timestamp for candidate in candidates),
        )


def plan_partition(
    key: GroupPartition,
    candidates: list[GoldOffset],
    target: TargetState,
    guards: Guards,
    guarded: Mapping[str, str],
) -> PlanRow:
    """The rule: one group-partition's action and reason. The refusals first, in order
    (:func:`_refusal`), then where the translation lands in the log and whether moving there is
    allowed (a rewind, a no-op, a keep-alive due)."""
    group, topic, partition = key
    described = target.group(group)
    committed = described.committed.get((topic, partition))
    current = committed.offset if committed is not None else None
    seen = _Candidates.of(candidates)
    newest = seen.newest

    def row(action: Action, reason: str, planned: int | None = None, metadata: str | None = None) -> PlanRow:
        return PlanRow(
            source_cluster=seen.sources,
            consumer_group=group,
            topic=topic,
            partition=partition,
            translated_offset=newest.downstream_offset if len(seen.distinct_offsets) == 1 else None,
            planned_offset=planned,
            current_offset=current,
            action=action,
            reason=reason,
            source_timestamp=newest.source_timestamp,
            method=seen.methods,
            last_observed_at=seen.last_seen,
            metadata=newest.metadata if metadata is None else metadata,
            group_type=described.type,
        )

    refusal = _refusal(
        key,
        candidates,
        seen,
        described=described,
        target=target,
        guards=guards,
        k2k_evidence=guarded.get(group),
    )
    if refusal is not None:
        return row(*refusal)
    bounds = target.log_bounds.get((topic, partition))
    if bounds is None:
        raise no_bounds_error(topic, partition)
    translated = newest.downstream_offset
    move = PAST_END if translated > bounds.log_end else BEFORE_START if translated < bounds.log_start else 0
    planned, action = (translated, bounds.log_end, bounds.log_start)[move], MOVES[move]
    source_rewind = False
    if current is not None and planned < current and not guards.allow_rewind:
        if guards.last_verified_offset.get(key) != current:
            return row(Action.SKIP_WOULD_REWIND, rewind_reason(current, planned), planned)
        source_rewind = True
    if current == planned:
        due = keep_alive_due(key, guards)
        if due is not None:
            # The target's own metadata, so the re-commit changes nothing but the retention clock.
            metadata = committed.metadata if committed is not None else ""
            return row(Action.REFRESH_RETENTION, f"already at {planned}; {due}", planned, metadata)
        return row(Action.NOOP, f"already at {planned}", planned)
    reason = move_reason(move, translated, planned, current)
    if source_rewind:
        reason += f"; {_source_rewind_note(current, planned)}"
    return row(action, reason + _move_notes(key, guards, guarded.get(group)), planned)


def _refusal(
    key: GroupPartition,
    candidates: Sequence[GoldOffset],
    seen: _Candidates,
    *,
    described: TargetGroup,
    target: TargetState,
    guards: Guards,
    k2k_evidence: str | None,
) -> tuple[Action, str] | None:
    """Why the rule leaves this group-partition where it is, the first refusal that holds, or None."""
    group, topic, partition = key
    if len(seen.distinct_offsets) > 1:
        # Two source clusters claim different positions for the same target partition: picking
        # one would silently skip or replay data, so the operator decides (narrow --groups/--topics).
        return (
            Action.SKIP_CONFLICT,
            f"source clusters {seen.sources} translate to different offsets {seen.distinct_offsets}",
        )
    partition_count = target.partition_counts.get(topic)
    if partition_count is None or partition >= partition_count:
        return Action.SKIP_MISSING_TOPIC, missing_reason(topic, partition, partition_count)
    unread = _unread(candidates, guards)
    if unread is not None:
        return Action.SKIP_TAIL_UNREAD, unread
    stale = _staleness(key, seen.newest.source_timestamp, seen.last_seen, guards)
    if stale is not None:
        return Action.SKIP_STALE, stale
    refusal = group_refusal(group, described, k2k_evidence, guards)
    if refusal is not None:
        return refusal
    conflict = guards.mapping_conflicts.get(key)
    if conflict is not None and guards.on_multiple_targets is MultipleTargetsPolicy.FAIL:
        return (
            Action.SKIP_DUPLICATE_ROUTING,
            f"{conflict}: which one the group reads is ambiguous "
            f"(pass {Flag.ON_MULTIPLE_TARGETS} {MultipleTargetsPolicy.IGNORE} to apply each routing)",
        )
    return None


def _move_notes(key: GroupPartition, guards: Guards, k2k_evidence: str | None) -> str:
    """What a move carries on its reason: the mapping conflict and K2K's guard the operator overrode."""
    notes = ""
    conflict = guards.mapping_conflicts.get(key)
    if conflict is not None:
        notes += f"; {conflict} ({Flag.ON_MULTIPLE_TARGETS} {MultipleTargetsPolicy.IGNORE})"
    if k2k_evidence is not None:
        notes += f"; K2K's offset mapper manages this group, {k2k_evidence} ({Flag.IGNORE_K2K_GUARD})"
    return notes


def missing_reason(topic: str, partition: int, partition_count: int | None) -> str:
    if partition_count is None:
        return f"topic {topic} does not exist on the target"
    return f"partition {partition} does not exist (topic {topic} has {partition_count})"


def group_refusal(
    name: str, described: TargetGroup, k2k_evidence: str | None, guards: Guards
) -> tuple[Action, str] | None:
    """Why no partition of this group is altered (a failover placed it, someone consumes, or K2K
    manages it), or None."""
    held = guards.failover_holds.get(name)
    if held is not None:
        return (
            Action.SKIP_FAILED_OVER,
            f"a failover placed this group at {held.isoformat()}: no sync moves it until an operator "
            f"resumes it ({Flag.RESUME_SYNC} {Flag.GROUPS} {name})",
        )
    if not is_safe_to_alter(described):
        state, members = described.state, described.members
        return (
            Action.SKIP_ACTIVE_GROUP,
            f"{described.type} group is {state} on the target with {members} members (has active members)"
            if members
            else f"{described.type} group is {state} on the target (has active members)",
        )
    if k2k_evidence is not None and not guards.ignore_k2k_guard:
        return (
            Action.SKIP_K2K_GUARDED,
            f"K2K's offset mapper manages this group: {k2k_evidence} "
            f"(pass {Flag.IGNORE_K2K_GUARD} to apply anyway)",
        )
    return None


def no_bounds_error(topic: str, partition: int) -> PlanError:
    return PlanError(f"no log bounds read for {topic}-{partition}")


def rewind_reason(current: int, planned: int) -> str:
    return (
        f"group is at {current}, ahead of {planned}, and offsetlake did not put it there (consumers "
        f"moved it on the target): would re-read {current - planned} records (pass {Flag.ALLOW_REWIND})"
    )


def _source_rewind_note(current: int, planned: int) -> str:
    return (
        f"the source group moved back: {current} is what offsetlake last committed and verified here, "
        f"so the newer, lower translation is applied (re-reads {current - planned} records)"
    )


def _unread(candidates: Sequence[GoldOffset], guards: Guards) -> str | None:
    """Why a newer checkpoint the run could not read may change this translation, or None (also
    when the operator accepted gold without it: ``unread_sources`` is then empty)."""
    for candidate in candidates:
        reason = guards.unread_sources.get(candidate.source_cluster)
        if reason is not None:
            return (
                f"{reason}: a newer checkpoint of {candidate.source_cluster} may change this translation "
                f"(pass {Flag.ACCEPT_GOLD_WITHOUT_TAIL} to apply gold's as it is)"
            )
    return None


PAST_END, BEFORE_START = 1, 2
MOVES = (Action.APPLY, Action.CLAMP_TO_LOG_END, Action.CLAMP_TO_LOG_START)
"""The action of a translated offset inside the log (0), past its end, or before its start."""


def move_reason(move: int, translated: int, planned: int, current: int | None) -> str:
    """The reason of an apply or a clamp (``move``: an index of MOVES), before the notes on K2K and
    mapping conflicts."""
    if move == PAST_END:
        reason = f"translated offset {translated} is past the log end {planned}"
    elif move == BEFORE_START:
        reason = f"translated offset {translated} is before the log start {planned} (deleted)"
    else:
        reason = f"translated offset {translated}"
    if current is None:
        reason += "; the group has no committed offset here yet"
    return reason


def _staleness(
    key: GroupPartition, source_timestamp: datetime, last_seen: datetime, guards: Guards
) -> str | None:
    """Why a translation is too old to apply, or None."""
    if guards.max_age is not None:
        age = guards.reference_time - last_seen
        if age > guards.max_age:
            return (
                f"translation last observed {format_duration(age)} ago, older than {Flag.MAX_AGE} "
                f"{format_duration(guards.max_age)}"
            )
    applied = guards.last_applied.get(key)
    if applied is not None and source_timestamp < applied and not guards.allow_rewind:
        return (
            f"translation from {source_timestamp.isoformat()} is older than the one already applied "
            f"({applied.isoformat()}); pass {Flag.ALLOW_REWIND} to restore it"
        )
    return None


def keep_alive_due(key: GroupPartition, guards: Guards) -> str | None:
    """Why an unchanged offset is committed again now (retention would expire it), or None."""
    committed_at = guards.last_committed_at.get(key)
    if guards.keep_alive_after is None or committed_at is None:
        return None
    since = guards.reference_time - committed_at
    if since <= guards.keep_alive_after:
        return None
    return (
        f"last committed by offsetlake {format_duration(since)} ago, more than the keep-alive interval "
        f"{format_duration(guards.keep_alive_after)}: committed again so retention does not expire it"
    )


def _compile(pattern: str, flag: Flag) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as error:
        raise PlanError(f"{flag}: invalid regex {pattern!r}: {error}") from error
