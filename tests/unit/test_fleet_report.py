"""A report over a fleet: a summary by outcome and method with the refusals first, the per-group
lines only for a few groups or with --details (issue 36: 2,000 groups printed 2,000 lines)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from offsetlake.apply.executor import Outcome, PartitionResult
from offsetlake.apply.k2k_search import CutShort, SearchedNow
from offsetlake.apply.planner import Action, PlanRow
from offsetlake.apply.run import ApplyRequest, ApplyResult, ApplyStatus
from offsetlake.cli.render import DETAIL_GROUPS, apply_report, failover_report
from offsetlake.contract.gold import GroupDataLoss
from offsetlake.failover.run import FailoverResult

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


def losses(groups: int) -> tuple[GroupDataLoss, ...]:
    """``groups`` groups of 4 partitions, one in 500 losing records (g0500 the most), one in 5 with a
    position unknown."""
    return tuple(
        GroupDataLoss(
            "us-east",
            f"g{index:05d}",
            4,
            index % 3,
            index if index % 500 == 0 else 0,
            int(index % 5 == 0),
            NOW,
        )
        for index in range(groups)
    )


def failover(applied: ApplyResult) -> FailoverResult:
    return FailoverResult((), None, "--refresh never", applied)


def test_the_failover_reports_data_loss_at_10000_groups_as_totals_and_the_worst_groups() -> None:
    """Issue 46: the data-loss section printed every group (10,019 lines at 10,000 groups)."""
    fleet_result = replace(result(fleet(10_000), dry_run=False), data_loss=losses(10_000))
    out, _ = failover_report(failover(fleet_result))
    lines = "\n".join(out).splitlines()
    assert len(lines) < 60, f"{len(lines)} lines"
    [totals] = [line for line in lines if line.startswith("data loss if failing over now")]
    assert "10,000 groups, 40,000 partitions; " in totals
    assert f"{sum(range(500, 10_000, 500)):,} records unconsumed, lost (19 groups)" in totals
    assert "2,000 partitions with their position unknown (2,000 groups)" in totals
    worst = [line.split()[0] for line in lines if line.startswith("g0")]
    assert worst == ["g09500", "g09000", "g08500", "g08000", "g07500", "g07000", "g06500", "g06000",
                     "g05500", "g05000"]  # fmt: skip
    detailed, _ = failover_report(failover(fleet_result), details=True)
    assert sum(line.startswith("g0") for line in "\n".join(detailed).splitlines()) >= 10_000
    few = "\n".join(failover_report(failover(replace(fleet_result, data_loss=losses(DETAIL_GROUPS))))[0])
    assert sum(line.startswith("g0") for line in few.splitlines()) == DETAIL_GROUPS


def test_k2k_searches_cut_short_are_counted_with_what_was_used_instead() -> None:
    searched = SearchedNow((), 30_000, 12_000, ("orders[3] in east.orders[3]: time limit reached",), older=2,
                           cut_short=CutShort(searched=900, gold=150, none=15))  # fmt: skip
    request = ApplyRequest(dry_run=False, timeout_s=10)
    applied = replace(result((), dry_run=False), request=request, k2k_search=searched)
    out, _ = failover_report(failover(applied))
    assert (
        "K2K tracing headers on the target: 1,065 search(es) CUT SHORT by their bounds (--timeout 10 s a "
        "partition and in all): 900 use the records read so far (safe, may re-read more), 150 gold's "
        "translation, 15 none"
    ) in out
    assert any("2 searched snapshot(s) older than gold's translation" in line for line in out)
    quiet = replace(applied, k2k_search=replace(searched, cut_short=CutShort(), older=0))
    assert not any(
        "CUT SHORT" in line or "older than" in line for line in failover_report(failover(quiet))[0]
    )
