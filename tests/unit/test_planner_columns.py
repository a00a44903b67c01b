"""The planner decides most rows column by column (Arrow); every plan equals the rule's, row by row.

``planner.plan_each`` is the rule (``planner.plan_partition``) applied to each group-partition in
key order, as the planner did before it worked in columns; ``plan_columns.build_plan`` must give the
same rows, in the same order, or raise the same error, for any gold and any target. Where the
columns stand on each guard is declared (``plan_columns.COLUMN_GUARDS``), for every field of
``Guards``, and the scenarios draw every guard the plan reads.
"""

from __future__ import annotations

import gc
from dataclasses import MISSING, fields, replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from offsetlake.apply import planner
from offsetlake.apply.plan_columns import COLUMN_GUARDS, build_plan
from offsetlake.apply.planner import (
    Action,
    ActiveGroupPolicy,
    CommittedOffset,
    Guards,
    LogBounds,
    MultipleTargetsPolicy,
    PlanError,
    PlanRow,
    TargetGroup,
    TargetState,
    Untranslated,
    k2k_guarded_groups,
)
from offsetlake.contract.gold import GoldOffset

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
# Names whose order as str differs from naive byte or case order, and one that is empty.
GROUPS = st.sampled_from(["a", "B", "é", "a-b", "ab", "\U0001f600", ""])
TOPICS = st.sampled_from(["t", "T", "t.x", "ü", ""])
STATES = st.sampled_from(["Empty", "Dead", "NotFound", "Stable", "Unknown"])
METADATA = st.sampled_from(["", "x", "k2k_v"])
AGES = st.integers(0, 180).map(lambda minutes: NOW - timedelta(minutes=minutes))


@st.composite
def gold_offsets(draw: st.DrawFn) -> GoldOffset:
    observed = draw(st.none() | AGES)
    return GoldOffset(
        draw(st.sampled_from(["s1", "s2"])),
        draw(GROUPS),
        draw(TOPICS),
        draw(st.integers(-1, 3)),
        draw(st.integers(-1, 12)),
        draw(AGES),
        draw(st.sampled_from(["checkpoint", "offset_sync", ""])),
        observed,
        draw(st.sampled_from(["", "m"])),
    )


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[GoldOffset], TargetState, Guards]:
    offsets = draw(st.lists(gold_offsets(), max_size=25))
    keys = sorted({offset.key for offset in offsets}) or [("a", "t", 0)]
    topics = sorted({topic for _, topic, _ in keys})
    counts = {topic: draw(st.integers(0, 4)) for topic in topics if draw(st.integers(0, 5))}
    bounds = {}
    for topic, count in counts.items():
        for partition in range(count):
            if draw(st.integers(0, 30)):  # now and then a partition whose bounds were not read
                start = draw(st.integers(0, 5))
                bounds[(topic, partition)] = LogBounds(start, draw(st.integers(start, 10)))
    groups = {}
    for group in sorted({group for group, _, _ in keys}):
        if not draw(st.integers(0, 6)):
            continue  # a group the target read did not describe
        committed = {
            (topic, partition): CommittedOffset(draw(st.integers(0, 12)), draw(METADATA))
            for of, topic, partition in keys
            if of == group and draw(st.booleans())
        }  # fmt: skip
        groups[group] = TargetGroup(
            draw(STATES),
            draw(st.sampled_from(["classic", "consumer"])),
            draw(st.sampled_from([0, 0, 2])),
            committed,
        )
    chosen = st.sets(st.sampled_from(keys))
    guards = Guards(
        reference_time=NOW,
        max_age=draw(st.sampled_from([None, timedelta(hours=1)])),
        allow_rewind=draw(st.booleans()),
        last_applied={key: draw(AGES) for key in draw(chosen)},
        keep_alive_after=draw(st.sampled_from([None, timedelta(hours=1)])),
        last_committed_at={key: draw(AGES) for key in draw(chosen)},
        k2k_guard_prefix=draw(st.sampled_from(["", "k2k_"])),
        ignore_k2k_guard=draw(st.booleans()),
        mapping_conflicts={key: "routed twice" for key in draw(chosen)},
        on_multiple_targets=draw(st.sampled_from(MultipleTargetsPolicy)),
        last_verified_offset={key: _verified(draw, groups, key) for key in draw(chosen)},
        unread_sources=draw(st.sampled_from([{}, {"s1": "checkpoints s1 not read"}])),
        failover_holds={
            group: NOW for group in draw(st.sets(st.sampled_from(sorted({g for g, _, _ in keys}))))
        },
    )
    return offsets, TargetState(groups, bounds, counts), guards


def _verified(draw: st.DrawFn, groups: dict[str, TargetGroup], key: tuple[str, str, int]) -> int:
    """What the audit says offsetlake last committed: mostly where the target still is (the source
    rewind the rule tells apart), now and then elsewhere (consumers moved it)."""
    group, topic, partition = key
    committed = groups[group].committed.get((topic, partition)) if group in groups else None
    if committed is not None and draw(st.booleans()):
        return committed.offset
    return draw(st.integers(0, 12))


def by_rule(offsets: list[GoldOffset], target: TargetState, guards: Guards) -> list[PlanRow] | str:
    """The rule's plan, or the error it raises."""
    try:
        return planner.plan_each(offsets, target, guards, k2k_guarded_groups(target, guards.k2k_guard_prefix))
    except PlanError as error:
        return str(error)


def planned(offsets: list[GoldOffset], target: TargetState, guards: Guards) -> list[PlanRow] | str:
    try:
        return build_plan(offsets, target, guards)
    except PlanError as error:
        return str(error)


# A value of each guard the columns declare outside the plan, other than its default.
OUTSIDE = {
    "active_group_policy": st.sampled_from(ActiveGroupPolicy),
    "untranslated": st.sampled_from(Untranslated),
}


def test_every_guard_is_placed() -> None:
    """A new field of Guards fails here until plan_columns.COLUMN_GUARDS says where the columns
    stand on it (the rule first, then its place there: plan_columns' docstring)."""
    assert set(COLUMN_GUARDS) == {field.name for field in fields(Guards)}
    assert set(COLUMN_GUARDS.values()) <= {"decided", "deferred", "outside"}
    assert set(OUTSIDE) == {name for name, place in COLUMN_GUARDS.items() if place == "outside"}


@pytest.mark.parametrize("name", sorted(name for name, place in COLUMN_GUARDS.items() if place != "outside"))
def test_the_scenarios_draw_every_guard_the_plan_reads(name: str) -> None:
    """The parity test reaches each guard the columns decide or defer: some scenario sets it to
    something other than its default (a field without one is always drawn)."""
    (field,) = [field for field in fields(Guards) if field.name == name]
    if field.default is MISSING and field.default_factory is MISSING:
        return
    default = field.default if field.default_factory is MISSING else field.default_factory()
    find(scenarios(), lambda scenario: getattr(scenario[2], name) != default)


@settings(max_examples=100)
@given(scenarios(), st.fixed_dictionaries(OUTSIDE))
def test_guards_outside_the_plan_change_no_row(
    scenario: tuple[list[GoldOffset], TargetState, Guards], outside: dict[str, object]
) -> None:
    offsets, target, guards = scenario
    assert planned(offsets, target, replace(guards, **outside)) == planned(offsets, target, guards)


@settings(max_examples=200)
@given(scenarios())
def test_the_plan_is_the_rules_row_for_row(scenario: tuple[list[GoldOffset], TargetState, Guards]) -> None:
    assert planned(*scenario) == by_rule(*scenario)


def test_a_fleet_sized_plan_is_the_rules_row_for_row() -> None:
    """Many groups and partitions, every outcome the columns decide, each more than once."""
    topics = {"orders": 8, "billing": 4}
    offsets = [
        GoldOffset("east", f"app-{group:03d}", topic, partition, (group * 7 + partition) % 14, NOW)
        for group in range(300)
        for topic, count in topics.items()
        for partition in range(count + 1)  # one partition past the topic's last
    ]
    offsets.append(GoldOffset("east", "app-001", "gone", 0, 3, NOW))
    target = TargetState(
        groups={
            f"app-{group:03d}": TargetGroup(
                "Stable" if group % 10 == 0 else "Empty",
                committed={
                    ("orders", partition): CommittedOffset(partition) for partition in range(group % 9)
                },
            )
            for group in range(290)
        },
        log_bounds={(topic, p): LogBounds(2, 12) for topic, count in topics.items() for p in range(count)},
        partition_counts=topics,
    )
    guards = Guards(reference_time=NOW)
    plan = build_plan(offsets[::-1], target, guards)
    assert plan == by_rule(offsets[::-1], target, guards)
    # The columns build each row's fields in place (no __init__): a field PlanRow gains must be
    # set there too, not left to a class-level default that equality would not notice.
    assert {tuple(row.__dict__) for row in plan} == {tuple(field.name for field in fields(PlanRow))}
    assert {row.action for row in plan} == {
        Action.APPLY,
        Action.NOOP,
        Action.CLAMP_TO_LOG_END,
        Action.CLAMP_TO_LOG_START,
        Action.SKIP_WOULD_REWIND,
        Action.SKIP_MISSING_TOPIC,
        Action.SKIP_ACTIVE_GROUP,
    }


@pytest.mark.parametrize(
    "offset",
    [
        GoldOffset("east", "app-\udc80", "orders", 0, 3, NOW),  # a lone surrogate: not UTF-8
        GoldOffset("east", "app", "orders", 2**40, 3, NOW),  # a partition past INT32
        GoldOffset("east", "app", "orders", 0, 2**70, NOW),  # an offset past INT64
    ],
)
def test_values_arrow_cannot_hold_are_planned_by_the_rule(offset: GoldOffset) -> None:
    offsets = [offset, GoldOffset("east", "app", "orders", 1, 3, NOW)]
    bounds = {("orders", 0): LogBounds(0, 9), ("orders", 1): LogBounds(0, 9)}
    target = TargetState({"app": TargetGroup("Empty")}, bounds, {"orders": 2})
    guards = Guards(reference_time=NOW)
    assert build_plan(offsets, target, guards) == by_rule(offsets, target, guards)


def test_the_garbage_collector_is_left_as_it_was() -> None:
    target = TargetState({"app": TargetGroup("Empty")}, {}, {"orders": 1})
    offsets = [GoldOffset("east", "app", "orders", 0, 3, NOW)]
    with pytest.raises(PlanError, match="no log bounds read for orders-0"):
        build_plan(offsets, target, Guards(reference_time=NOW))
    assert gc.isenabled()
    gc.disable()
    try:
        build_plan(offsets[:0], target, Guards(reference_time=NOW))
        assert not gc.isenabled()
    finally:
        gc.enable()
