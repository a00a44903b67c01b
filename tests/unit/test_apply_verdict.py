"""The apply run's verdict: status and typed reasons from the plan, the execution and the request.

Pure, so every branch is decided here without Spark or a broker; the rendered words are the ones
the command line prints (and tests/integration/test_apply.py looks for).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from offsetlake.apply.executor import Execution, Outcome, PartitionResult
from offsetlake.apply.planner import Action, ActiveGroupPolicy, PlanRow
from offsetlake.apply.reasons import (
    ActiveDuringRun,
    AllStale,
    NotPlaced,
    NoTranslation,
    PartitionsFailed,
    RefusedActiveGroups,
    ResultsNotRecorded,
    StoppedEarly,
    Tally,
)
from offsetlake.apply.run import ApplyRequest, ApplyResult, ApplyStatus, Verdict, verdict

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
RUN = "20261121T120000Z-0a1b2c3d"
TARGET = "dr-broker:9092"
AUDIT = "`offsetlake`.`apply_audit`"


def row(
    group: str = "orders-app",
    *,
    partition: int = 0,
    action: Action = Action.APPLY,
    observed: datetime = NOW - timedelta(minutes=5),
) -> PlanRow:
    planned = 40 if action.alters else None
    return PlanRow("us-east", group, "orders", partition, 40, planned, 30, action, "why", observed,
                   "checkpoint", observed)  # fmt: skip


def planned(
    *plan: PlanRow,
    dry_run: bool = False,
    policy: ActiveGroupPolicy = ActiveGroupPolicy.FAIL,
    max_age: timedelta | None = timedelta(hours=1),
    refusing: tuple[str, ...] = (),
    gold_rows: int | None = None,
    as_of: datetime | None = None,
) -> ApplyResult:
    request = ApplyRequest(
        dry_run=dry_run, active_group_policy=policy, max_age=max_age, as_of=as_of, schema="offsetlake"
    )
    return ApplyResult(
        request=request,
        run_id=RUN,
        status=ApplyStatus.OK,
        target=TARGET,
        audit_table=AUDIT,
        started_at=NOW,
        gold_rows=len(plan) if gold_rows is None else gold_rows,
        plan=plan,
        refusing_groups=refusing,
    )


def outcome(plan_row: PlanRow, result: Outcome, error: str | None = None) -> PartitionResult:
    return PartitionResult(plan_row, result, plan_row.planned_offset, plan_row.planned_offset, error, NOW)


def executed(*results: PartitionResult, stopped_because: str | None = None) -> Execution:
    return Execution(results=results, stopped_because=stopped_because)


def test_an_empty_gold_fails_an_apply_and_only_informs_a_dry_run() -> None:
    expected = NoTranslation(RUN, "offsetlake")
    assert verdict(planned(gold_rows=0)) == Verdict(ApplyStatus.FAILED, (expected,))
    assert verdict(planned(gold_rows=0, dry_run=True)) == Verdict(ApplyStatus.OK, (expected,))
    assert expected.render() == (
        f"run {RUN}: no translation in gold (offsetlake): nothing can be applied; "
        "has the pipeline run against these clusters? (see cluster_health)"
    )
    as_of = NOW - timedelta(days=1)
    (restore,) = verdict(planned(gold_rows=0, as_of=as_of)).reasons
    assert restore.render().startswith(f"run {RUN}: no translation valid at {as_of.isoformat()} in gold ")


def test_a_selection_that_matched_nothing_is_ok() -> None:
    assert verdict(planned(gold_rows=12)) == Verdict(ApplyStatus.OK)


def test_a_dry_run_is_ok_whatever_the_plan_says() -> None:
    stale = row(action=Action.SKIP_STALE, observed=NOW - timedelta(hours=3))
    active = row("billing", action=Action.SKIP_ACTIVE_GROUP)
    assert verdict(planned(stale, active, dry_run=True, refusing=("billing",))) == Verdict(ApplyStatus.OK)


def test_active_groups_under_the_fail_policy_refuse_the_run_up_front() -> None:
    plan = (
        row(),
        row("billing", action=Action.SKIP_ACTIVE_GROUP),
        row("audit", action=Action.SKIP_ACTIVE_GROUP),
    )
    judged = verdict(planned(*plan, refusing=("audit", "billing")))
    assert judged == Verdict(ApplyStatus.REFUSED, (RefusedActiveGroups(RUN, ("audit", "billing")),))
    assert judged.reasons[0].render() == (
        f"run {RUN}: refused, nothing altered: groups active on the target: audit, billing "
        "(stop their consumers, or pass --active-group-policy skip)"
    )


def test_every_translation_older_than_max_age_fails_the_run_before_any_alter() -> None:
    newest = NOW - timedelta(hours=2)
    plan = (
        row(action=Action.SKIP_STALE, observed=NOW - timedelta(hours=5)),
        row(partition=1, action=Action.SKIP_STALE, observed=newest),
    )
    judged = verdict(planned(*plan))
    assert judged == Verdict(ApplyStatus.FAILED, (AllStale(RUN, newest),))
    assert judged.reasons[0].render() == (
        f"run {RUN}: every selected translation is older than --max-age (the newest was observed at "
        "2026-11-21T10:00:00+00:00): the pipeline has not refreshed gold since; refresh it, or pass a "
        "larger --max-age to fail over anyway"
    )


OLD = row(action=Action.SKIP_STALE, observed=NOW - timedelta(hours=5))


@pytest.mark.parametrize(
    "plan",
    [
        # One row stale for another reason (an older translation than the one applied): not "all old".
        (OLD, row(partition=1, action=Action.SKIP_STALE)),
        (OLD, row(partition=1)),
    ],
)
def test_a_plan_not_entirely_too_old_may_be_executed(plan: tuple[PlanRow, ...]) -> None:
    assert verdict(planned(*plan)) == Verdict(ApplyStatus.OK)


def test_without_max_age_nothing_is_too_old() -> None:
    old = row(action=Action.SKIP_STALE, observed=NOW - timedelta(days=30))
    assert verdict(planned(old, max_age=None)) == Verdict(ApplyStatus.OK)


def test_results_the_audit_could_not_record_fail_the_run() -> None:
    applied = row()
    judged = verdict(planned(applied), executed(outcome(applied, Outcome.APPLIED)), unrecorded="disk full")
    assert judged == Verdict(ApplyStatus.FAILED, (ResultsNotRecorded(RUN, AUDIT, "disk full"),))
    assert judged.reasons[0].render() == (
        f"run {RUN}: offsets were altered but the results could not be written to {AUDIT}: disk full; "
        "rerun the same command to converge"
    )


def test_a_run_that_stopped_early_fails_with_its_tally() -> None:
    plan = (row("a"), row("b"), row("c"))
    execution = executed(
        outcome(plan[0], Outcome.APPLIED),
        outcome(plan[1], Outcome.NOT_ATTEMPTED, "not attempted"),
        outcome(plan[2], Outcome.NOT_ATTEMPTED, "not attempted"),
        stopped_because="the target stopped answering (timed out)",
    )
    judged = verdict(planned(*plan), execution)
    tally = Tally((("applied", 1), ("not_attempted", 2)))
    stopped = StoppedEarly(RUN, "the target stopped answering (timed out)", tally, TARGET, AUDIT)
    assert judged == Verdict(ApplyStatus.FAILED, (stopped,))
    assert judged.reasons[0].render() == (
        f"run {RUN}: stopped early, the target stopped answering (timed out): applied 1, not_attempted 2 "
        f"on {TARGET} (every row recorded in {AUDIT}); rerun the same command when the target answers: "
        "it reads the target again and converges"
    )


@pytest.mark.parametrize("policy", list(ActiveGroupPolicy))
def test_failed_and_unverified_partitions_fail_the_run(policy: ActiveGroupPolicy) -> None:
    plan = (row("a"), row("b"), row("c"), row("d"))
    execution = executed(
        outcome(plan[0], Outcome.APPLIED),
        outcome(plan[1], Outcome.FAILED, "alter failed"),
        outcome(plan[2], Outcome.VERIFY_FAILED, "read back 30 after setting 40"),
        outcome(plan[3], Outcome.SKIPPED_ACTIVE_GROUP, "became Stable"),  # failures come first
    )
    judged = verdict(planned(*plan, policy=policy), execution)
    assert judged == Verdict(ApplyStatus.FAILED, (PartitionsFailed(RUN, 2, TARGET),))
    assert judged.reasons[0].render() == f"run {RUN}: 2 partitions failed on {TARGET}"


def test_groups_that_became_active_during_the_run_refuse_it_under_the_fail_policy_only() -> None:
    plan = (row("a"), row("b"))
    execution = executed(
        outcome(plan[0], Outcome.APPLIED), outcome(plan[1], Outcome.SKIPPED_ACTIVE_GROUP, "became Stable")
    )
    judged = verdict(planned(*plan), execution)
    assert judged == Verdict(ApplyStatus.REFUSED, (ActiveDuringRun(RUN),))
    assert (
        judged.reasons[0].render() == f"run {RUN}: groups became active during the run and were not altered"
    )
    # Under the skip policy the group is left alone, and that is still not DONE: exit 3, listed.
    skipped = verdict(planned(*plan, policy=ActiveGroupPolicy.SKIP), execution)
    assert skipped == Verdict(ApplyStatus.REFUSED, (NotPlaced(RUN, (("b", "orders", 0, "apply"),), AUDIT),))


def test_everything_applied_is_ok() -> None:
    plan = (row("a"), row("b", action=Action.NOOP), row("c", action=Action.PLACE_AT_LOG_START))
    execution = executed(outcome(plan[0], Outcome.APPLIED), outcome(plan[2], Outcome.APPLIED))
    assert verdict(planned(*plan), execution) == Verdict(ApplyStatus.OK)
    # Before executing, nothing stops an apply from going ahead.
    assert verdict(planned(*plan)) == Verdict(ApplyStatus.OK)


@pytest.mark.parametrize(
    "refusal",
    [action for action in Action if not action.places],
)
def test_any_refusal_makes_the_run_incomplete_and_lists_the_partition(refusal: Action) -> None:
    plan = (row("a"), row("b", action=Action.NOOP), row("c", partition=7, action=refusal))
    execution = executed(outcome(plan[0], Outcome.APPLIED))
    judged = verdict(planned(*plan), execution)
    status = ApplyStatus.REFUSED if refusal is Action.SKIP_ACTIVE_GROUP else ApplyStatus.INCOMPLETE
    assert judged == Verdict(status, (NotPlaced(RUN, (("c", "orders", 7, refusal.value),), AUDIT),))
    assert judged.reasons[0].render().startswith("INCOMPLETE: 1 partitions not placed: c orders[7]")
    # Before executing, the refusal does not stop the others from being applied.
    assert verdict(planned(*plan)) == Verdict(ApplyStatus.OK)


def test_an_alter_that_did_not_verify_is_not_placed() -> None:
    plan = (row("a"), row("b"))
    execution = executed(outcome(plan[0], Outcome.APPLIED), outcome(plan[1], Outcome.NOT_ATTEMPTED))
    judged = verdict(planned(*plan), execution)
    assert judged.status is ApplyStatus.INCOMPLETE
    assert judged.reasons == (NotPlaced(RUN, (("b", "orders", 0, "apply"),), AUDIT),)


def test_the_result_prints_its_reasons_rendered() -> None:
    result = planned(row(), refusing=("orders-app",))
    judged = verdict(result)
    assert replace(result, reasons=judged.reasons).problems == (judged.reasons[0].render(),)
    assert result.problems == ()
