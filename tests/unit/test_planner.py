"""The apply planner: every action, every guard, and the invariants that make apply safe."""

from __future__ import annotations

import argparse
import re
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offsetlake.apply.plan_columns import build_plan
from offsetlake.apply.planner import (
    Action,
    ActiveGroupPolicy,
    CommittedOffset,
    Guards,
    LogBounds,
    MultipleTargetsPolicy,
    PlanError,
    PlanRow,
    Selection,
    TargetGroup,
    TargetState,
    name_bounds,
    refused_by_active_policy,
    select_offsets,
)
from offsetlake.cli.options import parse_duration, parse_method_precedence, parse_timestamp
from offsetlake.contract.gold import GoldOffset, NameBounds, selection_bounds

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
FRESH = NOW - timedelta(minutes=5)


def gold(
    offset: int,
    *,
    group: str = "orders-app",
    topic: str = "orders",
    partition: int = 0,
    source: str = "us-east",
    at: datetime = FRESH,
) -> GoldOffset:
    return GoldOffset(source, group, topic, partition, offset, at, "checkpoint")


def target(
    *,
    committed: dict[tuple[str, str, int], int] | None = None,
    states: dict[str, str] | None = None,
    bounds: tuple[int, int] = (0, 1000),
    partitions: dict[str, int] | None = None,
) -> TargetState:
    partition_counts = {"orders": 2} if partitions is None else partitions
    return TargetState(
        groups=groups(states or {"orders-app": "Empty"}, committed or {}),
        log_bounds={
            (topic, partition): LogBounds(*bounds)
            for topic, count in partition_counts.items()
            for partition in range(count)
        },
        partition_counts=partition_counts,
    )


def groups(
    states: dict[str, str], committed: dict[tuple[str, str, int], int | CommittedOffset], **described: object
) -> dict[str, TargetGroup]:
    """One TargetGroup per group of ``states``, with its committed offsets from ``committed``."""
    return {
        group: TargetGroup(
            state,
            committed={
                (topic, partition): offset if isinstance(offset, CommittedOffset) else CommittedOffset(offset)
                for (of, topic, partition), offset in committed.items()
                if of == group
            },
            **described,  # type: ignore[arg-type]
        )
        for group, state in states.items()
    }


def plan_one(offset: GoldOffset, state: TargetState, **guards: object) -> PlanRow:
    (row,) = build_plan([offset], state, Guards(reference_time=NOW, **guards))  # type: ignore[arg-type]
    return row


KEY = ("orders-app", "orders", 0)


def test_apply_moves_an_empty_group_forward_and_counts_the_skipped_records() -> None:
    row = plan_one(gold(500), target(committed={KEY: 420}))
    assert (row.action, row.current_offset, row.planned_offset) == (Action.APPLY, 420, 500)
    assert (row.records_skipped, row.records_reread) == (80, 0)


def test_a_group_the_target_never_saw_is_planned_without_a_position() -> None:
    row = plan_one(gold(500), target(states={"orders-app": "NotFound"}))
    assert (row.action, row.current_offset, row.planned_offset) == (Action.APPLY, None, 500)
    assert row.records_skipped is None
    assert "no committed offset" in row.reason


def test_noop_when_the_group_is_already_there() -> None:
    row = plan_one(gold(500), target(committed={KEY: 500}))
    assert (row.action, row.planned_offset) == (Action.NOOP, 500)
    assert not row.action.alters


@pytest.mark.parametrize("state", ["Stable", "PreparingRebalance", "CompletingRebalance", "Unknown"])
def test_a_group_that_is_not_empty_is_never_planned_to_change(state: str) -> None:
    row = plan_one(gold(500), target(states={"orders-app": state}))
    assert row.action is Action.SKIP_ACTIVE_GROUP
    assert state in row.reason
    assert row.planned_offset is None


@pytest.mark.parametrize("state", ["Empty", "Dead", "NotFound"])
def test_empty_dead_and_missing_groups_are_safe(state: str) -> None:
    assert plan_one(gold(500), target(states={"orders-app": state})).action is Action.APPLY


def test_a_group_missing_from_the_described_states_counts_as_active() -> None:
    assert plan_one(gold(500), target(states={"other": "Empty"})).action is Action.SKIP_ACTIVE_GROUP


def test_the_fail_policy_refuses_the_run_and_skip_does_not() -> None:
    state = target(states={"orders-app": "Stable", "billing": "Empty"})
    offsets = [gold(500), gold(10, group="billing")]
    fail = Guards(reference_time=NOW)
    skip = Guards(reference_time=NOW, active_group_policy=ActiveGroupPolicy.SKIP)
    assert refused_by_active_policy(build_plan(offsets, state, fail), fail) == ["orders-app"]
    plan = build_plan(offsets, state, skip)
    assert refused_by_active_policy(plan, skip) == []
    assert [row.action for row in plan] == [Action.APPLY, Action.SKIP_ACTIVE_GROUP]


def test_a_group_ahead_is_not_rewound_without_the_flag() -> None:
    row = plan_one(gold(300), target(committed={KEY: 420}))
    assert (row.action, row.planned_offset, row.records_reread) == (Action.SKIP_WOULD_REWIND, 300, 120)
    assert "--allow-rewind" in row.reason


def test_a_lower_translation_over_offsetlakes_own_position_is_the_sources_rewind() -> None:
    """The sync put the standby group at 420 and verified it; the source group was then reset and
    MM2 now checkpoints 300: the target is offsetlake's, so 300 is applied (re-reads 120)."""
    row = plan_one(gold(300), target(committed={KEY: 420}), last_verified_offset={KEY: 420})
    assert (row.action, row.planned_offset, row.records_reread) == (Action.APPLY, 300, 120)
    assert "the source group moved back" in row.reason


def test_a_lower_translation_over_a_position_consumers_moved_is_refused_out_loud() -> None:
    row = plan_one(gold(300), target(committed={KEY: 420}), last_verified_offset={KEY: 410})
    assert (row.action, row.records_reread) == (Action.SKIP_WOULD_REWIND, 120)
    assert "offsetlake did not put it there" in row.reason


def test_a_source_whose_newest_checkpoints_were_not_read_is_refused_unless_accepted() -> None:
    unread = {"us-east": "checkpoints us-east.checkpoints.internal-0 not read to its end (timed out)"}
    row = plan_one(gold(300), target(), unread_sources=unread)
    assert row.action is Action.SKIP_TAIL_UNREAD
    assert "not read to its end" in row.reason and "--accept-gold-without-tail" in row.reason
    assert plan_one(gold(300), target(), unread_sources={"us-west": "x"}).action is Action.APPLY


def test_allow_rewind_moves_a_group_back() -> None:
    row = plan_one(gold(300), target(committed={KEY: 420}), allow_rewind=True)
    assert (row.action, row.planned_offset, row.records_reread) == (Action.APPLY, 300, 120)


def test_an_offset_past_the_log_end_is_clamped_to_it() -> None:
    row = plan_one(gold(1500), target(committed={KEY: 900}, bounds=(0, 1000)))
    assert (row.action, row.translated_offset, row.planned_offset) == (Action.CLAMP_TO_LOG_END, 1500, 1000)


def test_an_offset_before_the_log_start_is_clamped_to_it() -> None:
    # Needs deleted records; the local Tansu broker does not implement DeleteRecords, so this
    # clamp is covered here only.
    row = plan_one(gold(50), target(bounds=(200, 1000), states={"orders-app": "Dead"}))
    assert (row.action, row.planned_offset) == (Action.CLAMP_TO_LOG_START, 200)


def test_a_clamp_that_would_rewind_is_refused() -> None:
    row = plan_one(gold(1500), target(committed={KEY: 1200}, bounds=(0, 1000)))
    assert (row.action, row.planned_offset) == (Action.SKIP_WOULD_REWIND, 1000)


def test_a_clamp_landing_on_the_current_position_is_a_noop() -> None:
    assert plan_one(gold(1500), target(committed={KEY: 1000}, bounds=(0, 1000))).action is Action.NOOP


def test_missing_topic_and_missing_partition_are_skipped() -> None:
    no_topic = plan_one(gold(5, topic="gone"), target())
    no_partition = plan_one(gold(5, partition=7), target())
    assert no_topic.action is no_partition.action is Action.SKIP_MISSING_TOPIC
    assert "gone" in no_topic.reason
    assert "partition 7" in no_partition.reason


def test_translations_older_than_max_age_are_stale() -> None:
    old = gold(500, at=NOW - timedelta(hours=2))
    row = plan_one(old, target(), max_age=timedelta(hours=1))
    assert row.action is Action.SKIP_STALE
    assert "2h" in row.reason and "1h" in row.reason
    assert plan_one(old, target(), max_age=None).action is Action.APPLY


def test_age_is_measured_from_the_reference_time() -> None:
    restored = gold(500, at=NOW - timedelta(days=3))
    guards = Guards(reference_time=NOW - timedelta(days=3) + timedelta(minutes=1))
    assert build_plan([restored], target(), guards)[0].action is Action.APPLY


def test_a_translation_older_than_the_one_applied_is_stale_unless_rewinds_are_allowed() -> None:
    applied = {KEY: FRESH + timedelta(minutes=1)}
    stale = plan_one(gold(500), target(), last_applied=applied)
    assert stale.action is Action.SKIP_STALE
    assert "already applied" in stale.reason
    assert plan_one(gold(500), target(), last_applied=applied, allow_rewind=True).action is Action.APPLY
    assert plan_one(gold(500), target(), last_applied={KEY: FRESH}).action is Action.APPLY


def test_sources_that_disagree_are_not_guessed_between() -> None:
    offsets = [gold(500, source="us-east"), gold(510, source="eu-west")]
    (row,) = build_plan(offsets, target(), Guards(reference_time=NOW))
    assert row.action is Action.SKIP_CONFLICT
    assert (row.source_cluster, row.translated_offset, row.planned_offset) == ("eu-west,us-east", None, None)
    assert "[500, 510]" in row.reason


def test_sources_that_agree_give_one_row() -> None:
    offsets = [gold(500, source="us-east"), gold(500, source="eu-west", at=FRESH + timedelta(seconds=1))]
    (row,) = build_plan(offsets, target(), Guards(reference_time=NOW))
    assert (row.action, row.planned_offset, row.source_timestamp) == (
        Action.APPLY,
        500,
        FRESH + timedelta(seconds=1),
    )


def test_the_plan_has_one_sorted_row_per_group_partition() -> None:
    offsets = [gold(5, partition=1), gold(7, group="billing"), gold(3, partition=0)]
    state = target(states={"orders-app": "Empty", "billing": "Empty"})
    plan = build_plan(offsets, state, Guards(reference_time=NOW))
    assert [row.key for row in plan] == [("billing", "orders", 0), KEY, ("orders-app", "orders", 1)]


@pytest.mark.parametrize(
    ("poison", "reason"),
    [
        (gold(-1), "negative translated offset -1"),
        (gold(5, group=""), "empty consumer group id"),
        (gold(5, topic=""), "empty topic name"),
        (gold(5, partition=-1), "negative partition -1"),
    ],
)
def test_a_row_that_cannot_be_a_kafka_position_is_skipped_alone(poison: GoldOffset, reason: str) -> None:
    state = target(states={"orders-app": "Empty", "billing": "Empty"})
    plan = build_plan([poison, gold(7, group="billing")], state, Guards(reference_time=NOW))
    by_action = {row.action: row for row in plan}
    assert set(by_action) == {Action.SKIP_INVALID, Action.APPLY}
    assert by_action[Action.SKIP_INVALID].reason == f"not a valid Kafka position in gold: {reason}"
    assert not Action.SKIP_INVALID.alters


def test_selection_includes_and_excludes_whole_names() -> None:
    offsets = [
        gold(1, group="orders-app"),
        gold(1, group="orders-app-canary"),
        gold(1, group="billing", topic="invoices"),
        gold(1, group="billing", topic="invoices-dlq"),
    ]
    chosen = select_offsets(
        offsets,
        Selection(groups="orders-app|billing", exclude_groups=None, topics=".*", exclude_topics=".*-dlq"),
    )
    assert [(o.consumer_group, o.topic) for o in chosen] == [
        ("orders-app", "orders"),
        ("billing", "invoices"),
    ]
    assert select_offsets(offsets, Selection(exclude_groups="orders-.*")) == offsets[2:]


@pytest.mark.parametrize(
    "pattern", [".*", "orders-.*|.*", "app-\\d", "(a|b)", "a.b", "[ab]", "(?i)orders", "a+"]
)
def test_a_regex_beyond_literal_names_gives_no_bounds(pattern: str) -> None:
    assert name_bounds(pattern) is None


_NAME_CHARS = st.sampled_from("ab-_.")
_LITERAL = st.text(st.sampled_from("ab-_"), max_size=4)


@given(
    alternatives=st.lists(st.tuples(_LITERAL, st.booleans()), min_size=1, max_size=4),
    names=st.lists(st.text(_NAME_CHARS, max_size=6), max_size=20),
)
def test_literal_bounds_cover_every_name_the_regex_matches(
    alternatives: list[tuple[str, bool]], names: list[str]
) -> None:
    pattern = "|".join(literal + (".*" if prefix else "") for literal, prefix in alternatives)
    if pattern == ".*" or any(prefix and not literal for literal, prefix in alternatives):
        return  # ".*" as an alternative: every name, no bounds (tested above)
    bounds = name_bounds(pattern)
    assert bounds is not None
    # Names built from the alternatives, so matches are common, plus arbitrary names.
    candidates = names + [literal + name for (literal, _), name in zip(alternatives, names, strict=False)]
    for name in candidates:
        if re.fullmatch(pattern, name):
            assert name in bounds.names or name.startswith(bounds.prefixes)


def test_a_bad_regex_names_its_flag() -> None:
    with pytest.raises(PlanError, match="--exclude-topics"):
        select_offsets([gold(1)], Selection(exclude_topics="("))


@pytest.mark.parametrize("flag", ["groups", "exclude_groups", "topics", "exclude_topics"])
def test_a_selection_compiles_its_regexes_when_built(flag: str) -> None:
    with pytest.raises(PlanError, match=f"--{flag.replace('_', '-')}: invalid regex"):
        Selection(**{flag: "("})


def test_the_selection_gives_the_bounds_storage_narrows_by() -> None:
    selection = Selection(groups="orders-app|billing", exclude_groups="billing", topics="orders-.*")
    assert selection.group_bounds == NameBounds(frozenset({"orders-app", "billing"}), ())
    assert selection.topic_bounds == NameBounds(frozenset(), ("orders-",))
    assert selection.narrows
    assert selection_bounds(selection) == {
        "consumer_group": selection.group_bounds,
        "topic": selection.topic_bounds,
    }
    assert selection_bounds(Selection(topics="orders-.*")) == {"topic": selection.topic_bounds}
    assert selection_bounds(None) == selection_bounds(Selection()) == {}
    # Bounds only narrow; the regexes decide, excludes included.
    assert selection.selects("orders-app", "orders-eu") and not selection.selects("billing", "orders-eu")
    assert not selection.selects("orders-app", "orders")
    assert selection.selects_group("orders-app") and not selection.selects_group("billing")
    everything = Selection(groups=r"app-\d")
    assert (everything.group_bounds, everything.topic_bounds, everything.narrows) == (None, None, False)
    assert Selection(groups="a|b") == Selection(groups="a|b")  # compiled patterns are not compared


def test_the_source_groups_metadata_is_what_apply_commits() -> None:
    streams = "AQAAAZNx6xAA"  # Kafka Streams: base64 of a magic byte and a long (partition time)
    offset = GoldOffset("us-east", "orders-app", "orders", 0, 40, FRESH, "checkpoint", metadata=streams)
    row = plan_one(offset, target())
    assert (row.action, row.metadata) == (Action.APPLY, streams)
    assert plan_one(gold(40), target()).metadata == ""  # none in gold: empty, never ours


def test_a_rewind_is_refused_from_the_audit_alone() -> None:
    applied = {KEY: FRESH}  # what apply_audit remembers; the target holds no marker of ours
    row = plan_one(
        gold(40, at=FRESH - timedelta(minutes=1)), target(committed={KEY: 30}), last_applied=applied
    )
    assert row.action is Action.SKIP_STALE


KEEP_ALIVE = timedelta(days=3, hours=12)  # half of Kafka's default offsets.retention.minutes


@pytest.mark.parametrize(
    ("committed_ago", "expected"),
    [(KEEP_ALIVE + timedelta(seconds=1), Action.REFRESH_RETENTION), (KEEP_ALIVE, Action.NOOP),
     (timedelta(hours=1), Action.NOOP)],
)  # fmt: skip
def test_keep_alive_recommits_an_unchanged_offset_exactly_when_due(
    committed_ago: timedelta, expected: Action
) -> None:
    state = TargetState(
        groups=groups({"orders-app": "Empty"}, {KEY: CommittedOffset(40, "target-side metadata")}),
        log_bounds={("orders", 0): LogBounds(0, 1000)},
        partition_counts={"orders": 1},
    )
    row = plan_one(gold(40), state, keep_alive_after=KEEP_ALIVE, last_committed_at={KEY: NOW - committed_ago})
    assert row.action is expected
    assert row.action.alters is (expected is Action.REFRESH_RETENTION)
    if expected is Action.REFRESH_RETENTION:
        # Same offset, same metadata as the target holds: only the retention clock moves.
        assert (row.planned_offset, row.current_offset, row.metadata) == (40, 40, "target-side metadata")


def test_keep_alive_is_off_without_an_interval_or_an_earlier_commit_of_ours() -> None:
    long_ago = {KEY: NOW - timedelta(days=30)}
    assert plan_one(gold(40), target(committed={KEY: 40}), last_committed_at=long_ago).action is Action.NOOP
    assert plan_one(gold(40), target(committed={KEY: 40}), keep_alive_after=KEEP_ALIVE).action is Action.NOOP


def test_keep_alive_never_touches_a_group_with_members() -> None:
    state = TargetState(
        # Empty: a state some brokers report for a consumer group in use
        groups=groups({"orders-app": "Empty"}, {KEY: 40}, type="consumer", members=2),
        log_bounds={("orders", 0): LogBounds(0, 1000)},
        partition_counts={"orders": 1},
    )
    row = plan_one(
        gold(40), state, keep_alive_after=KEEP_ALIVE, last_committed_at={KEY: NOW - timedelta(days=30)}
    )
    assert row.action is Action.SKIP_ACTIVE_GROUP
    assert row.reason == "consumer group is Empty on the target with 2 members (has active members)"


def test_the_plan_names_the_group_type() -> None:
    state = target()
    typed = TargetState(
        groups=groups({"orders-app": "Empty"}, {}, type="classic"),
        log_bounds=state.log_bounds,
        partition_counts=state.partition_counts,
    )
    assert plan_one(gold(40), typed).group_type == "classic"
    assert plan_one(gold(40), target(states={"orders-app": "Stable"})).reason == (
        "unknown group is Stable on the target (has active members)"
    )


STATES = st.sampled_from(["Empty", "Dead", "NotFound", "Stable", "PreparingRebalance"])


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[GoldOffset], TargetState, Guards]:
    # Small ranges, so offsets often land on, just past or just before the bounds and positions.
    log_start = draw(st.integers(0, 5))
    log_end = draw(st.integers(log_start, 10))
    names = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3, unique=True))
    offsets, committed = [], {}
    for group in names:
        for partition in range(draw(st.integers(1, 3))):
            translated = draw(st.integers(0, 12))
            for source in draw(st.lists(st.sampled_from(["s1", "s2"]), min_size=1, max_size=2, unique=True)):
                age = timedelta(minutes=draw(st.integers(0, 180)))
                # Sources mostly agree; sometimes they are one record apart (a conflict).
                offset = translated + draw(st.sampled_from([0, 0, 0, 1]))
                offsets.append(gold(offset, group=group, partition=partition, source=source, at=NOW - age))
            if draw(st.booleans()):
                # Positions near the translation: the interesting cases are one record either side.
                position = max(0, translated + draw(st.integers(-2, 2)))
                # Sometimes K2K's offset mapper guards the group through this partition's commit.
                metadata = draw(st.sampled_from(["", "", "k2k_v1"]))
                committed[(group, "orders", partition)] = CommittedOffset(position, metadata)
    keys = {offset.key for offset in offsets}
    state = TargetState(
        groups={
            group: TargetGroup(
                draw(STATES),
                members=draw(st.sampled_from([0, 0, 1])),
                committed={key[1:]: offset for key, offset in committed.items() if key[0] == group},
            )
            for group in names
        },
        log_bounds={("orders", partition): LogBounds(log_start, log_end) for partition in range(3)},
        partition_counts={"orders": draw(st.integers(1, 3))},
    )
    guards = Guards(
        reference_time=NOW,
        max_age=draw(st.sampled_from([None, timedelta(hours=1)])),
        allow_rewind=draw(st.booleans()),
        keep_alive_after=draw(st.sampled_from([None, timedelta(days=1)])),
        last_committed_at={key: NOW - timedelta(hours=draw(st.integers(0, 48))) for key in committed},
        k2k_guard_prefix=draw(st.sampled_from(["", "k2k_"])),
        ignore_k2k_guard=draw(st.booleans()),
        mapping_conflicts={key: "routed twice" for key in draw(st.sets(st.sampled_from(sorted(keys))))},
        on_multiple_targets=draw(st.sampled_from(MultipleTargetsPolicy)),
        last_verified_offset={
            key: position.offset if draw(st.booleans()) else draw(st.integers(0, 12))
            for key, position in committed.items()
        },
        unread_sources=draw(st.sampled_from([{}, {"s2": "checkpoints s2 not read"}])),
    )
    return offsets, state, guards


@settings(max_examples=300)
@given(scenarios())
def test_plan_invariants(scenario: tuple[list[GoldOffset], TargetState, Guards]) -> None:
    offsets, state, guards = scenario
    plan = build_plan(offsets, state, guards)
    assert len(plan) == len({offset.key for offset in offsets})
    for row in plan:
        if not row.action.alters:
            continue
        assert row.planned_offset is not None
        bounds = state.log_bounds[(row.topic, row.partition)]
        assert bounds.log_start <= row.planned_offset <= bounds.log_end
        assert state.groups[row.consumer_group].state in {"Empty", "Dead", "NotFound"}
        assert state.groups[row.consumer_group].members == 0
        assert row.partition < state.partition_counts[row.topic]
        if guards.k2k_guard_prefix and not guards.ignore_k2k_guard:
            group = state.groups[row.consumer_group]
            assert not any(c.metadata.startswith(guards.k2k_guard_prefix) for c in group.committed.values())
        if guards.on_multiple_targets is MultipleTargetsPolicy.FAIL:
            assert row.key not in guards.mapping_conflicts
        if row.action is Action.REFRESH_RETENTION:  # same offset again, only when it is due
            assert row.planned_offset == row.current_offset
            assert guards.keep_alive_after is not None
            assert NOW - guards.last_committed_at[row.key] > guards.keep_alive_after
            continue
        assert row.planned_offset != row.current_offset
        ours = guards.last_verified_offset.get(row.key) == row.current_offset
        if not guards.allow_rewind and row.current_offset is not None and not ours:
            assert row.planned_offset > row.current_offset  # consumers' own position: never rewound
        # A source whose newest checkpoints were not read never moves a group.
        assert not {o.source_cluster for o in offsets if o.key == row.key} & set(guards.unread_sources)
        if guards.max_age is not None:
            assert row.source_timestamp is not None
            assert NOW - row.source_timestamp <= guards.max_age
        sources = {o.downstream_offset for o in offsets if o.key == row.key}
        assert len(sources) == 1


# The guard settings as `offsetlake apply` parses them.


@pytest.mark.parametrize(
    ("text", "expected"),
    [("90s", timedelta(seconds=90)), ("15m", timedelta(minutes=15)), ("2h", timedelta(hours=2)),
     ("1d", timedelta(days=1)), ("none", None), ("NONE", None)],
)  # fmt: skip
def test_max_age_durations(text: str, expected: timedelta | None) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "15", "1w", "-5m", "1.5h", "m"])
def test_bad_max_age_is_a_usage_error(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="duration"):
        parse_duration(text)


def test_method_precedence_lists_methods_at_most_once_and_the_rest_follow() -> None:
    expected = ("checkpoint", "offset_sync", "mapping", "k2k_tracing_headers")
    assert parse_method_precedence("checkpoint, offset_sync,mapping") == expected
    assert parse_method_precedence("k2k_tracing_headers")[0] == "k2k_tracing_headers"
    for bad in ("mapping,mapping,checkpoint", "mapping,offset_sync,checkpoint,x"):
        with pytest.raises(argparse.ArgumentTypeError, match="at most once"):
            parse_method_precedence(bad)


def test_as_of_without_a_zone_is_utc() -> None:
    assert parse_timestamp("2026-11-21T12:00:00") == NOW
    assert parse_timestamp("2026-11-21T13:00:00+01:00") == NOW
    with pytest.raises(argparse.ArgumentTypeError):
        parse_timestamp("yesterday")


def test_age_counts_from_the_last_observation_when_gold_has_one() -> None:
    idle = GoldOffset("us-east", "orders-app", "orders", 0, 500, NOW - timedelta(hours=5), "checkpoint",
                      observed_at=NOW - timedelta(minutes=2))  # fmt: skip
    assert plan_one(idle, target()).action is Action.APPLY
    gone_quiet = GoldOffset("us-east", "orders-app", "orders", 0, 500, NOW - timedelta(hours=5), "checkpoint",
                            observed_at=NOW - timedelta(hours=3))  # fmt: skip
    row = plan_one(gone_quiet, target())
    assert row.action is Action.SKIP_STALE
    assert "last observed 3h ago" in row.reason


def test_a_group_a_failover_placed_is_left_alone_until_resumed() -> None:
    row = plan_one(gold(300), target(), failover_holds={"orders-app": NOW - timedelta(minutes=3)})
    assert (row.action, row.planned_offset) == (Action.SKIP_FAILED_OVER, None)
    assert "--resume-sync --groups orders-app" in row.reason
    assert plan_one(gold(300), target(), failover_holds={"other-app": NOW}).action is Action.APPLY
