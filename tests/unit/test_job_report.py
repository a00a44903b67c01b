"""The job report's verdict: which task outcomes fail the job run, and what the report says.

The failover job's last task runs ``offsetlake job-report`` when at least one task failed; the
run's result is its leaf tasks', so this report's exit status is what makes a failed refresh fail
the run when the apply after it succeeded.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from databricks.sdk.service.jobs import RunTask

from offsetlake.databricks.job_report import (
    JobsApiError,
    RunReport,
    TaskOutcome,
    latest_attempts,
    read_run_tasks,
    report_run,
    task_outcome,
)

RUN = 4242
REFRESH_MESSAGE = "Pipeline update 8f1c failed: flow bronze_offset_syncs_primary FAILED"


def refresh(state: str | None, message: str = "") -> TaskOutcome:
    return TaskOutcome("refresh_pipeline", state, message, is_refresh=True)


def apply_(state: str | None, message: str = "") -> TaskOutcome:
    return TaskOutcome("apply_offsets", state, message)


def reporter(state: str | None = None) -> TaskOutcome:
    return TaskOutcome("report_outcome", state)


def test_a_failed_refresh_before_a_successful_apply_fails_the_report_naming_the_refresh() -> None:
    report = report_run(
        RUN,
        [refresh("FAILED", REFRESH_MESSAGE), apply_("SUCCESS"), reporter()],
        own_task_key="report_outcome",
    )
    assert report.exit_code == 1
    assert report.lines == (
        f"refresh_pipeline  FAILED   {REFRESH_MESSAGE}",
        "apply_offsets     SUCCESS  -",
    )
    assert report.verdict == (
        f"offsetlake job-report: refresh_pipeline FAILED: {REFRESH_MESSAGE}; "
        "apply_offsets ran on gold as of the last successful refresh"
    )


def test_both_succeeded_is_exit_0() -> None:
    report = report_run(RUN, [refresh("SUCCESS"), apply_("SUCCESS")], own_task_key="report_outcome")
    assert report.exit_code == 0
    assert report.verdict == (
        f"offsetlake job-report: no task of run {RUN} failed (refresh_pipeline, apply_offsets)"
    )


def test_a_timed_out_refresh_is_a_failure() -> None:
    report = report_run(RUN, [refresh("TIMEDOUT", "Task timed out after 600 seconds"), apply_("SUCCESS")])
    assert report.exit_code == 1
    assert report.verdict.startswith(
        "offsetlake job-report: refresh_pipeline TIMEDOUT: Task timed out after 600 seconds; "
        "apply_offsets ran on gold"
    )


def test_a_failed_apply_after_a_good_refresh_names_the_apply() -> None:
    report = report_run(RUN, [refresh("SUCCESS"), apply_("FAILED", "SystemExit: 3")])
    assert report.exit_code == 1
    assert report.verdict == (
        "offsetlake job-report: apply_offsets FAILED: SystemExit: 3; refresh_pipeline succeeded"
    )


def test_both_failed_names_both_and_claims_nothing_ran() -> None:
    report = report_run(RUN, [refresh("FAILED", "update failed"), apply_("FAILED")])
    assert report.exit_code == 1
    assert report.verdict == (
        "offsetlake job-report: refresh_pipeline FAILED: update failed; apply_offsets FAILED"
    )


@pytest.mark.parametrize(
    "state",
    ["CANCELED", "UPSTREAM_FAILED", "UPSTREAM_CANCELED", "MAXIMUM_CONCURRENT_RUNS_REACHED",
     "SUCCESS_WITH_FAILURES", "INTERNAL_ERROR", "SKIPPED", "UNKNOWN", "A_STATE_ADDED_LATER"],
)  # fmt: skip
def test_every_other_finished_state_is_a_failure(state: str) -> None:
    report = report_run(RUN, [refresh("SUCCESS"), apply_(state)])
    assert report.exit_code == 1
    assert f"apply_offsets {state}" in report.verdict


@pytest.mark.parametrize("state", ["EXCLUDED", "DISABLED"])
def test_excluded_and_disabled_tasks_are_not_failures(state: str) -> None:
    report = report_run(RUN, [refresh("SUCCESS"), apply_(state)])
    assert report.exit_code == 0
    assert report.lines[1].split() == ["apply_offsets", state, "-"]


def test_the_reporting_task_never_reports_on_itself_whatever_its_state() -> None:
    # By key: even a finished (e.g. retried and failed) report_outcome attempt is left out.
    report = report_run(
        RUN, [refresh("SUCCESS"), apply_("SUCCESS"), reporter("FAILED")], own_task_key="report_outcome"
    )
    assert report.exit_code == 0
    assert all("report_outcome" not in line for line in (*report.lines, report.verdict))


def test_unfinished_tasks_are_left_out_so_an_unconditional_run_skips_itself() -> None:
    report = report_run(RUN, [refresh("FAILED", "boom"), apply_("SUCCESS"), reporter(None)])
    assert report.exit_code == 1
    assert len(report.lines) == 2
    assert "report_outcome" not in report.verdict


def test_nothing_finished_to_report_on_is_exit_0() -> None:
    report = report_run(RUN, [reporter(None)], own_task_key="report_outcome")
    assert report == RunReport(
        (), f"offsetlake job-report: run {RUN} has no other finished task to report on", 0
    )


def test_a_long_multi_line_message_stays_on_one_bounded_line() -> None:
    trace = "Traceback (most recent call last):\n" + "  File x, line 1\n" * 100 + "ValueError: bad"
    report = report_run(RUN, [refresh("FAILED", trace), apply_("SUCCESS")])
    assert "\n" not in report.verdict and all("\n" not in line for line in report.lines)
    assert len(report.verdict) < 450
    assert "Traceback (most recent call last): File x, line 1" in report.verdict
    assert report.verdict.count("…") == 1


def test_the_termination_code_is_shown_beside_a_failed_state() -> None:
    outcome = TaskOutcome(
        "apply_offsets", "FAILED", "Workload failed", termination_code="RUN_EXECUTION_ERROR"
    )
    report = report_run(RUN, [outcome])
    assert report.lines == ("apply_offsets  FAILED (RUN_EXECUTION_ERROR)  Workload failed",)
    assert report.verdict == "offsetlake job-report: apply_offsets FAILED: Workload failed"


# -- the SDK's RunTask objects, as GET /api/2.2/jobs/runs/get returns them -----------------------


def run_task(task_key: str, **fields: Any) -> RunTask:
    return RunTask.from_dict({"task_key": task_key, **fields})


def test_a_failed_pipeline_task_reads_as_a_failed_refresh_with_its_message() -> None:
    task = run_task(
        "refresh_pipeline",
        pipeline_task={"pipeline_id": "p-1"},
        state={"life_cycle_state": "TERMINATED", "result_state": "FAILED", "state_message": REFRESH_MESSAGE},
        status={
            "state": "TERMINATED",
            "termination_details": {"code": "RUN_EXECUTION_ERROR", "type": "CLIENT_ERROR", "message": "x"},
        },
    )
    assert task_outcome(task) == TaskOutcome(
        "refresh_pipeline", "FAILED", REFRESH_MESSAGE, termination_code="RUN_EXECUTION_ERROR", is_refresh=True
    )


def test_status_alone_gives_the_result_when_the_deprecated_state_is_absent() -> None:
    ok = run_task("a", status={"state": "TERMINATED", "termination_details": {"code": "SUCCESS"}})
    canceled = run_task(
        "b",
        status={"state": "TERMINATED", "termination_details": {"code": "USER_CANCELED", "message": "by x"}},
    )
    assert task_outcome(ok).result_state == "SUCCESS"
    assert (task_outcome(canceled).result_state, task_outcome(canceled).message) == ("CANCELED", "by x")


def test_running_tasks_are_unfinished_and_unknown_finished_ones_are_failures() -> None:
    running = run_task("report_outcome", state={"life_cycle_state": "RUNNING"}, status={"state": "RUNNING"})
    new_state = run_task("x", state={"life_cycle_state": "TERMINATED", "result_state": "SOMETHING_NEW"})
    silent = run_task("y")
    assert task_outcome(running).result_state is None
    assert task_outcome(new_state).result_state == "UNKNOWN"  # the SDK drops enum values it does not know
    assert task_outcome(silent).result_state == "UNKNOWN"
    assert task_outcome(new_state).failed


def test_only_the_latest_attempt_of_a_retried_task_counts() -> None:
    first = run_task("apply_offsets", attempt_number=0, start_time=1000, state={"result_state": "FAILED"})
    retry = run_task("apply_offsets", attempt_number=1, start_time=2000, state={"result_state": "SUCCESS"})
    other = run_task("refresh_pipeline", state={"result_state": "SUCCESS"})
    latest = latest_attempts([first, retry, other])
    assert [(task.task_key, task.attempt_number) for task in latest] == [
        ("apply_offsets", 1),
        ("refresh_pipeline", None),
    ]
    assert latest_attempts([retry, first])[0].attempt_number == 1


def test_a_client_that_never_answers_is_cut_at_the_timeout() -> None:
    """The error comes while the call is still held: the bound cut in, the call did not end."""
    held, released, returned = threading.Event(), threading.Event(), threading.Event()

    def hanging_client(_http_timeout_s: float, _retry_timeout_s: int) -> Any:
        held.set()
        released.wait()  # a host that accepts and never answers, until the test lets it go
        returned.set()
        raise AssertionError("not reached within the test")

    try:
        with pytest.raises(JobsApiError, match=r"did not answer within 0\.5 s \(reading run 7\)"):
            read_run_tasks(7, timeout_s=0.5, client_factory=hanging_client)
        assert held.is_set() and not returned.is_set()
    finally:
        released.set()


def test_an_error_of_the_client_reaches_the_caller() -> None:
    def refusing_client(_http_timeout_s: float, _retry_timeout_s: int) -> Any:
        raise JobsApiError("cannot authenticate to the Databricks workspace: no credentials")

    with pytest.raises(JobsApiError, match="cannot authenticate"):
        read_run_tasks(7, timeout_s=5, client_factory=refusing_client)
