"""``offsetlake pause-sync``: flags -> pause the sync job's schedule when the failover applies -> lines."""

from __future__ import annotations

import argparse

from offsetlake.cli.context import Context
from offsetlake.cli.options import parse_positive_seconds, positive_int
from offsetlake.databricks.sync_pause import DEFAULT_TIMEOUT_S, nothing_to_pause, pause_sync

MODES = ("plan", "apply")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    pause = subparsers.add_parser(
        "pause-sync",
        help="before a failover applies: pause the sync job's schedule and end its active runs",
        description="The failover job's first task. When the failover applies (--mode apply) and the "
        "sync job applies too (--sync-mode apply), pause the sync job's schedule (Jobs API, through "
        "databricks-sdk: on Databricks the run's own identity, elsewhere DATABRICKS_HOST and "
        "credentials), cancel its active runs and wait until they have ended, so that no sync run "
        "moves a group the failover set (an as_of rewind among them). Otherwise nothing is altered. "
        "Exit 0 when the schedule is paused or nothing needed pausing, 1 when the API refused or "
        "did not answer. Resume the schedule once the consumers run on the target (docs/deploy.md).",
    )
    pause.add_argument(
        "--job-id",
        type=positive_int,
        required=True,
        metavar="ID",
        help="the sync job (in the bundle: ${resources.jobs.offsetlake_sync.id})",
    )
    pause.add_argument(
        "--mode",
        choices=MODES,
        required=True,
        help="the failover's mode (in the job: {{job.parameters.mode}})",
    )
    pause.add_argument(
        "--sync-mode",
        choices=MODES,
        required=True,
        help="what the sync job runs (in the bundle: ${var.sync_mode})",
    )
    pause.add_argument(
        "--timeout",
        type=parse_positive_seconds,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"how long the pause may take in all, waits included (default: {DEFAULT_TIMEOUT_S:g})",
    )
    pause.set_defaults(handler=handle_pause_sync)


def handle_pause_sync(args: argparse.Namespace, context: Context) -> int:
    outcome = nothing_to_pause(args.mode, args.sync_mode) or pause_sync(args.job_id, timeout_s=args.timeout)
    for line in outcome.lines:
        print(line, file=context.out)
    return 0
