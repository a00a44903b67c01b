"""``offsetlake job-report``: flags -> read the job run -> report_run -> one line per task and a verdict."""

from __future__ import annotations

import argparse

from offsetlake.cli.context import Context
from offsetlake.cli.options import parse_positive_seconds, positive_int
from offsetlake.databricks.job_report import DEFAULT_TIMEOUT_S, read_run_tasks, report_run


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    report = subparsers.add_parser(
        "job-report",
        help="report the other tasks of a Databricks job run; exit 1 if any of them did not succeed",
        description="Read a Databricks job run (Jobs API, through databricks-sdk: on Databricks the "
        "run's own identity, elsewhere DATABRICKS_HOST and credentials) and print one line per task "
        "(task key, result state, state message), then a verdict. Exit 0 when no other finished task "
        "failed, 1 when one did (FAILED, TIMEDOUT, CANCELED, UPSTREAM_FAILED, ...) or the run could "
        "not be read. Tasks that have not finished, and --task-key, are left out: run it as the job's "
        "last task with run_if AT_LEAST_ONE_FAILED so that a failed refresh fails the job run even "
        "when the apply after it succeeded.",
    )
    report.add_argument(
        "--run-id",
        type=positive_int,
        required=True,
        metavar="ID",
        help="the job run to report on (in the job: {{job.run_id}})",
    )
    report.add_argument(
        "--task-key",
        default=None,
        metavar="KEY",
        help="the reporting task's own key, never reported on (e.g. report_outcome)",
    )
    report.add_argument(
        "--timeout",
        type=parse_positive_seconds,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"the longest reading the run may take, retries included (default: {DEFAULT_TIMEOUT_S:g})",
    )
    report.set_defaults(handler=handle_job_report)


def handle_job_report(args: argparse.Namespace, context: Context) -> int:
    tasks = read_run_tasks(args.run_id, timeout_s=args.timeout)
    report = report_run(args.run_id, tasks, own_task_key=args.task_key)
    for line in report.lines:
        print(line, file=context.out)
    print(report.verdict, file=context.err if report.exit_code else context.out)
    return report.exit_code
