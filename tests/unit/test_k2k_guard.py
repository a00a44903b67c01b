"""K2K coexistence in the planner: groups K2K's offset mapper guards, and duplicate K2K routings.

Pure: plan rows from gold offsets and a described target, and the flags that set the guards.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from offsetlake.apply.executor import execute_plan
from offsetlake.apply.gold_rows import mapping_conflicts_by_key
from offsetlake.apply.plan_columns import build_plan
from offsetlake.apply.planner import (
    Action,
    CommittedOffset,
    Guards,
    LogBounds,
    MultipleTargetsPolicy,
    PlanRow,
    Selection,
    TargetGroup,
    TargetState,
)
from offsetlake.cli.apply import request_from_args
from offsetlake.cli.clusters import ResolvedClusters
from offsetlake.cli.main import build_parser
from offsetlake.contract.gold import GoldOffset

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
FRESH = NOW - timedelta(minutes=5)
GROUP = "orders-app"
CONFLICT = "K2K mapped source record orders[0]@41 to 2 target topics (copy.orders, east.orders)"


def gold(offset: int, *, group: str = GROUP, topic: str = "east.orders", partition: int = 0) -> GoldOffset:
    return GoldOffset("us-east", group, topic, partition, offset, FRESH, "mapping")


def target(committed: dict[tuple[str, str, int], CommittedOffset], *, state: str = "Empty") -> TargetState:
    """GROUP and billing in ``state``, with their ``committed`` offsets; topics of 3 partitions."""
    names = {GROUP, "billing"}
    topics = ("east.orders", "copy.orders", "payments")
    return TargetState(
        groups={
            name: TargetGroup(
                state,
                committed={(t, p): offset for (g, t, p), offset in committed.items() if g == name},
            )
            for name in names
        },
        log_bounds={(topic, partition): LogBounds(0, 1000) for topic in topics for partition in range(3)},
        partition_counts=dict.fromkeys(topics, 3),
    )


def plan(
    offsets: list[GoldOffset], state: TargetState, **guards: object
) -> dict[tuple[str, str, int], PlanRow]:
    rows = build_plan(offsets, state, Guards(reference_time=NOW, **guards))  # type: ignore[arg-type]
    return {row.key: row for row in rows}


GUARDED = {
    (GROUP, "east.orders", 1): CommittedOffset(30, "k2k_v7:1732400000"),
    (GROUP, "payments", 0): CommittedOffset(10, ""),
}
OFFSETS = [gold(40), gold(40, partition=1), gold(12, topic="payments"), gold(5, group="billing")]


def test_one_guarded_partition_leaves_the_whole_group_to_k2k() -> None:
    rows = plan(OFFSETS, target(GUARDED))
    for key in ((GROUP, "east.orders", 0), (GROUP, "east.orders", 1), (GROUP, "payments", 0)):
        assert rows[key].action is Action.SKIP_K2K_GUARDED
        assert not rows[key].action.alters
        assert rows[key].reason == (
            "K2K's offset mapper manages this group: its commit on east.orders-1 carries metadata "
            "'k2k_v7:1732400000' with K2K's guard prefix 'k2k_' (pass --ignore-k2k-guard to apply anyway)"
        )
    assert rows[("billing", "east.orders", 0)].action is Action.APPLY  # other groups are not affected


def test_the_guard_is_checked_after_the_active_group_and_before_rewind_and_noop() -> None:
    active = plan(OFFSETS, target(GUARDED, state="Stable"))
    assert {row.action for row in active.values()} == {Action.SKIP_ACTIVE_GROUP}
    behind = {
        (GROUP, "east.orders", 0): CommittedOffset(40, "k2k_v1"),
        (GROUP, "payments", 0): CommittedOffset(99),
    }
    rows = plan(OFFSETS, target(behind))  # a noop and a rewind, both in a guarded group
    assert rows[(GROUP, "east.orders", 0)].action is Action.SKIP_K2K_GUARDED
    assert rows[(GROUP, "payments", 0)].action is Action.SKIP_K2K_GUARDED


def test_an_empty_prefix_turns_the_check_off() -> None:
    rows = plan(OFFSETS, target(GUARDED), k2k_guard_prefix="")
    assert {row.action for row in rows.values()} == {Action.APPLY}
    assert not any("K2K" in row.reason for row in rows.values())


def test_the_prefix_is_the_operators() -> None:
    custom = {(GROUP, "east.orders", 0): CommittedOffset(3, "mapper-v2")}
    assert plan(OFFSETS, target(custom))[(GROUP, "east.orders", 0)].action is Action.APPLY
    rows = plan(OFFSETS, target(custom), k2k_guard_prefix="mapper-")
    assert rows[(GROUP, "payments", 0)].action is Action.SKIP_K2K_GUARDED
    assert "K2K's guard prefix 'mapper-'" in rows[(GROUP, "payments", 0)].reason


def test_the_override_applies_and_says_so() -> None:
    rows = plan(OFFSETS, target(GUARDED), ignore_k2k_guard=True)
    row = rows[(GROUP, "east.orders", 1)]
    assert (row.action, row.planned_offset) == (Action.APPLY, 40)
    assert row.reason == (
        "translated offset 40; K2K's offset mapper manages this group, its commit on east.orders-1 "
        "carries metadata 'k2k_v7:1732400000' with K2K's guard prefix 'k2k_' (--ignore-k2k-guard)"
    )
    assert rows[(GROUP, "payments", 0)].action is Action.APPLY
    assert "K2K" not in rows[("billing", "east.orders", 0)].reason


def test_a_duplicate_routing_is_refused_under_fail() -> None:
    offsets = [gold(40), gold(7, topic="copy.orders"), gold(3, topic="payments")]
    conflicts = {(GROUP, "east.orders", 0): CONFLICT, (GROUP, "copy.orders", 0): CONFLICT}
    rows = plan(offsets, target({}), mapping_conflicts=conflicts)
    for key in conflicts:
        assert rows[key].action is Action.SKIP_DUPLICATE_ROUTING
        assert rows[key].reason == (
            f"{CONFLICT}: which one the group reads is ambiguous "
            "(pass --on-multiple-targets ignore to apply each routing)"
        )
    assert rows[(GROUP, "payments", 0)].action is Action.APPLY  # only the keyed rows


def test_a_duplicate_routing_is_applied_under_ignore_with_a_note() -> None:
    conflicts = {(GROUP, "east.orders", 0): CONFLICT}
    rows = plan(
        [gold(40)], target({}), mapping_conflicts=conflicts, on_multiple_targets=MultipleTargetsPolicy.IGNORE
    )
    row = rows[(GROUP, "east.orders", 0)]
    assert (row.action, row.planned_offset) == (Action.APPLY, 40)
    assert row.reason == (
        f"translated offset 40; the group has no committed offset here yet; {CONFLICT} "
        "(--on-multiple-targets ignore)"
    )


def test_the_k2k_guard_comes_before_the_duplicate_routing() -> None:
    rows = plan(
        [gold(40, partition=1)], target(GUARDED), mapping_conflicts={(GROUP, "east.orders", 1): CONFLICT}
    )
    assert rows[(GROUP, "east.orders", 1)].action is Action.SKIP_K2K_GUARDED


def test_the_executor_never_carries_out_the_new_skips() -> None:
    rows = list(plan(OFFSETS, target(GUARDED)).values())
    rows += plan([gold(4)], target({}), mapping_conflicts={(GROUP, "east.orders", 0): CONFLICT}).values()
    skipped = [row for row in rows if row.action in {Action.SKIP_K2K_GUARDED, Action.SKIP_DUPLICATE_ROUTING}]

    def no_client() -> object:
        raise AssertionError("a skip row reached the target")

    execution = execute_plan(no_client, skipped, timeout_s=1, concurrency=2)  # type: ignore[arg-type]
    assert execution.results == ()


def args(*flags: str) -> tuple[str, bool, MultipleTargetsPolicy]:
    parsed = build_parser().parse_args(["apply", "--target-bootstrap-servers", "t:9092", *flags])
    clusters = ResolvedClusters("t:9092", "target", (), None)
    request = request_from_args(parsed, clusters, dry_run=False, home=None)
    return request.k2k_guard_prefix, request.ignore_k2k_guard, request.on_multiple_targets


@pytest.mark.parametrize("command", ["plan", "apply", "failover"])
def test_every_apply_command_has_the_flags(command: str) -> None:
    parsed = build_parser().parse_args(
        [command, "--k2k-guard-prefix", "x_", "--ignore-k2k-guard", "--on-multiple-targets", "ignore"]
    )
    assert (parsed.k2k_guard_prefix, parsed.ignore_k2k_guard, parsed.on_multiple_targets) == (
        "x_",
        True,
        "ignore",
    )


def test_the_flags_become_the_request() -> None:
    assert args() == ("k2k_", False, MultipleTargetsPolicy.FAIL)
    assert args("--k2k-guard-prefix=", "--ignore-k2k-guard=false") == ("", False, MultipleTargetsPolicy.FAIL)
    assert args("--ignore-k2k-guard", "--on-multiple-targets", "ignore") == (
        "k2k_",
        True,
        MultipleTargetsPolicy.IGNORE,
    )
    with pytest.raises(SystemExit):
        args("--on-multiple-targets", "skip")


def test_both_gold_stores_fold_conflict_rows_alike() -> None:
    both = ["copy.orders", "east.orders"]
    rows = [
        (GROUP, "east.orders", 0, "orders", 0, 41, both),
        ("billing", "east.orders", 3, "orders", 3, 8, both),
        ("billing", "east.orders", 3, "orders", 3, 7, both),  # a second source cluster's row
    ]
    folded = mapping_conflicts_by_key(rows, None)
    assert folded == {
        (GROUP, "east.orders", 0): CONFLICT,
        ("billing", "east.orders", 3): (
            "K2K mapped source record orders[3]@7 to 2 target topics (copy.orders, east.orders); "
            "K2K mapped source record orders[3]@8 to 2 target topics (copy.orders, east.orders)"
        ),
    }
    assert folded == mapping_conflicts_by_key(reversed(rows), None)
    assert set(mapping_conflicts_by_key(rows, Selection(groups="billing"))) == {("billing", "east.orders", 3)}
