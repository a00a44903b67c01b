"""``offsetlake pause-sync``: the failover job stops the sync job before it alters any group.

Once live (``sync_mode: apply``), the scheduled sync job re-commits translated offsets to every group
without members every five minutes. A failover that applies other offsets (``as_of`` with
``allow_rewind``) would be moved forward again by the next sync run before the consumers attach. So
the failover job's first task, when the failover applies and the sync applies too, pauses the sync
job's schedule (Jobs API ``jobs/update``, the schedule alone: its cron expression and time zone kept)
and cancels the sync runs still active, waiting until they have ended, so that no sync run alters a
group after the failover did. The schedule stays paused until someone resumes it (docs/deploy.md,
"Failing over"): a prod deploy does, since the prod target sets it UNPAUSED.

Everything goes through ``WorkspaceClient().jobs`` (on Databricks the run's own identity), bounded in
time like ``offsetlake job-report``: an unreachable API is a ``JobsApiError`` within ``timeout_s``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from offsetlake.databricks.workspace import JobsApiError, bounded, cause, client_timeouts, workspace_client

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

DEFAULT_TIMEOUT_S = 300.0
"""The longest the pause may take: the API calls and the wait for cancelled sync runs to end."""
POLL_INTERVAL_S = 5.0
"""How often the active sync runs are listed again while cancelled ones end."""
APPLY = "apply"
_PREFIX = "offsetlake pause-sync"


@dataclass(frozen=True)
class PauseOutcome:
    """What the pause did, as lines for the task's output."""

    lines: tuple[str, ...]
    paused: bool
    """True when the sync job's schedule is paused after this call (by it or before it)."""


def nothing_to_pause(failover_mode: str, sync_mode: str) -> PauseOutcome | None:
    """The outcome when the failover or the sync only plans (neither alters a group); else None."""
    if failover_mode == APPLY and sync_mode == APPLY:
        return None
    reason = (
        "the failover only plans" if failover_mode != APPLY else "the sync job only plans (sync_mode plan)"
    )
    return PauseOutcome((f"{_PREFIX}: {reason}: the sync job's schedule is left as it is",), paused=False)


def pause_sync(
    job_id: int,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    poll_interval_s: float = POLL_INTERVAL_S,
    client_factory: Callable[[float, int], WorkspaceClient] | None = None,
) -> PauseOutcome:
    """Pause job ``job_id``'s schedule, cancel its active runs and wait until they have ended.

    Cancelled runs get half of ``timeout_s`` to end, counted in polls (so the verdict does not depend
    on how fast the API answers); the other half bounds the API calls.
    """
    http_timeout_s, retry_timeout_s = client_timeouts(timeout_s)
    factory = client_factory or workspace_client
    polls = max(1, int(timeout_s / 2 / poll_interval_s))

    def work() -> PauseOutcome:
        return _pause(job_id, factory(http_timeout_s, retry_timeout_s), polls, poll_interval_s)

    return bounded(work, timeout_s, f"pausing job {job_id}")


def _pause(job_id: int, client: WorkspaceClient, polls: int, poll_interval_s: float) -> PauseOutcome:
    from databricks.sdk.service.jobs import CronSchedule, JobSettings, PauseStatus

    host = client.config.host
    try:
        job = client.jobs.get(job_id)
        settings = job.settings
        schedule = settings.schedule if settings is not None else None
        if schedule is None:
            raise JobsApiError(f"job {job_id} on {host} has no schedule to pause")
        name = (settings.name if settings is not None else None) or str(job_id)
        lines = []
        if schedule.pause_status == PauseStatus.PAUSED:
            lines.append(f"{_PREFIX}: the schedule of job {job_id} ({name}) was already paused")
        else:
            paused = CronSchedule(
                quartz_cron_expression=schedule.quartz_cron_expression,
                timezone_id=schedule.timezone_id,
                pause_status=PauseStatus.PAUSED,
            )
            client.jobs.update(job_id, new_settings=JobSettings(schedule=paused))
            lines.append(f"{_PREFIX}: paused the schedule of job {job_id} ({name})")
        cancelled: list[int] = []
        while active := [run.run_id for run in client.jobs.list_runs(job_id=job_id, active_only=True)]:
            for run_id in active:
                if run_id is not None and run_id not in cancelled:
                    client.jobs.cancel_run(run_id)
                    cancelled.append(run_id)
            if polls == 0:
                still = ", ".join(str(run_id) for run_id in active)
                raise JobsApiError(f"run(s) {still} of job {job_id} still active after cancelling")
            polls -= 1
            time.sleep(poll_interval_s)
    except JobsApiError:
        raise
    except (OSError, RuntimeError) as error:  # DatabricksError, requests' errors, TimeoutError
        raise JobsApiError(f"cannot pause job {job_id} on {host}: {cause(error)}") from None
    if cancelled:
        runs = ", ".join(str(run_id) for run_id in cancelled)
        lines.append(f"{_PREFIX}: cancelled its active run(s) {runs}; they have ended")
    lines.append(
        f"{_PREFIX}: no sync run alters a group until the schedule is resumed (docs/deploy.md, "
        "'Failing over'); a prod deploy resumes it"
    )
    return PauseOutcome(tuple(lines), paused=True)
