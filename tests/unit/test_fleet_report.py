"""A report over a fleet: a summary by outcome and method with the refusals first, the per-group
lines only for a few groups or with --details (issue 36: 2,000 groups printed 2,000 lines)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from offsetlake.apply.executor import Outcome, PartitionResult
from offsetlake.apply.planner import Action, PlanRow
from offsetlake.apply.run import ApplyRequest, ApplyResult, ApplyStatus
from offsetlake.cli.render import DETAIL_GROUPS, apply_report

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
AUDIT = "`offsetlake`.`apply_audit`"


def row(
    group: str, partition: int, action: Action, reason: str = "why", method: str = "checkpoint"
) -> PlanRow:
    planned = 40 if action.alters else None
    return PlanRow("us-east", group, "orders", partition, 30, planned, 30, action, reason,
                   NOW - timedelta(minutes=5), method, NOW)  # fmt: skip


def result(plan: tuple[PlanRow, ...], *, dry_run: bool, applied: bool = True) -> ApplyResult:
    results = () if dry_run else tuple(
        PartitionResult(r, Outcome.APPLIED, r.planned_offset, r.planned_offset, None, NOW)
        for r in plan
        if r.action.alters and applied
    )  # fmt: skip
    return ApplyResult(ApplyRequest(dry_run=dry_run), "run-1", ApplyStatus.OK, "dr:9092", AUDIT, NOW,
                       gold_rows=len(plan), plan=plan, results=results)  # fmt: skip


def fleet(groups: int) -> tuple[PlanRow, ...]:
    plan = [
        row(f"g{index:04d}", partition, Action.APPLY) for index in range(groups) for partition in range(2)
    ]
    plan[3] = row("g0001", 1, Action.SKIP_STALE, "translation is 3h old", method="offset_sync")
    return tuple(plan)


def test_a_fleet_apply_prints_a_summary_with_the_refusals_first_not_a_line_per_group() -> None:
    out, _ = apply_report(result(fleet(2000), dry_run=False))
    text = "\n".join(out)
    assert len(out) < 20, "a line per group at 2,000 groups"
    assert "g0500" not in text
    summary = out.index("by outcome and method (refusals first):")
    first, second = out[summary + 1].splitlines()[2:4]
    assert first.split()[:4] == ["skip_stale", "offset_sync", "1", "1"]
    assert second.split()[:4] == ["applied", "checkpoint", "2000", "3999"]
    assert "  g0001 orders[1]: translation is 3h old" in out
    assert any(line.startswith("run run-1: 2000 groups, 4000 partitions: ") for line in out)


def test_details_or_a_few_groups_keep_the_per_group_lines() -> None:
    out, _ = apply_report(result(fleet(2000), dry_run=False), details=True)
    assert sum(line.startswith("g") for line in out) == 2000
    small, _ = apply_report(result(fleet(DETAIL_GROUPS), dry_run=False))
    assert sum(line.startswith("g") for line in small) == DETAIL_GROUPS


def test_a_fleet_dry_run_lists_no_partition_unless_asked() -> None:
    plan = fleet(50)
    out, _ = apply_report(result(plan, dry_run=True))
    assert not any("g0049" in line for line in out)
    assert "apply" in "\n".join(out)
    detailed, _ = apply_report(result(plan, dry_run=True), details=True)
    assert any("g0049" in line for line in detailed)


def test_a_failed_alter_counts_as_a_refusal_with_its_error() -> None:
    plan = (row("g1", 0, Action.APPLY),)
    failed = PartitionResult(plan[0], Outcome.FAILED, 40, None, "REQUEST_TIMED_OUT", NOW)
    judged = ApplyResult(ApplyRequest(dry_run=False), "run-1", ApplyStatus.FAILED, "dr:9092", AUDIT, NOW,
                         gold_rows=1, plan=plan, results=(failed,))  # fmt: skip
    out, _ = apply_report(judged)
    assert "  g1 orders[0]: REQUEST_TIMED_OUT" in out
