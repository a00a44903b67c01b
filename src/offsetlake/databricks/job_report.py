"""``offsetlake job-report``: what happened to the other tasks of a Databricks job run.

Databricks decides a job run's result from its leaf tasks only. In the failover job the apply task
runs whatever the refresh did (``run_if: ALL_DONE``), so a failed refresh followed by a successful
apply ends the run "Succeeded with failures" and no ``on_failure`` notification fires. The job's
last, leaf task (``run_if: AT_LEAST_ONE_FAILED``) runs this report: one line per other task and a
verdict, and it fails (exit 1) whenever any other task did not succeed, so the run fails and says why.

``report_run`` is pure (task outcomes -> lines and an exit status); ``read_run_tasks`` reads a run
through ``WorkspaceClient().jobs.get_run`` (on Databricks the client authenticates as the run's
identity without configuration), bounded in time: an unreachable API or missing credentials is an
``ExternalError`` within ``timeout_s``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from offsetlake.databricks.workspace import (
    JobsApiError,
    bounded,
    cause,
    client_timeouts,
    one_line,
    workspace_client,
)

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient
    from databricks.sdk.service.jobs import RunTask

DEFAULT_TIMEOUT_S = 60.0
"""The longest reading a run may take, client set-up, retries and every HTTP request included."""

SUCCEEDED = "SUCCESS"
NOT_FAILURES = frozenset({SUCCEEDED, "EXCLUDED", "DISABLED"})
"""Result states that are not a failure. EXCLUDED: a task whose run-if condition was not met, which
Databricks treats as successful; DISABLED: switched off by a user. Every other finished state
(FAILED, TIMEDOUT, CANCELED, UPSTREAM_FAILED, UPSTREAM_CANCELED, MAXIMUM_CONCURRENT_RUNS_REACHED,
SUCCESS_WITH_FAILURES, INTERNAL_ERROR, SKIPPED, UNKNOWN, and states added later) is one."""

UNKNOWN = "UNKNOWN"
"""A finished task whose result the API did not give (or gave in a value this SDK does not know)."""

_PREFIX = "offsetlake job-report"


@dataclass(frozen=True)
class TaskOutcome:
    """One task of a job run, as the report needs it."""

    task_key: str
    result_state: str | None
    """The RunResultState name (SUCCESS, FAILED, TIMEDOUT, ...); None while the task has not finished."""
    message: str = ""
    termination_code: str | None = None
    """``status.termination_details.code`` (RUN_EXECUTION_ERROR, USER_CANCELED, ...), when given."""
    is_refresh: bool = False
    """A pipeline task: when it fails, the pipeline's tables stay as of its last successful update."""

    @property
    def finished(self) -> bool:
        return self.result_state is not None

    @property
    def failed(self) -> bool:
        return self.finished and self.result_state not in NOT_FAILURES


@dataclass(frozen=True)
class RunReport:
    lines: tuple[str, ...]
    """One line per reported task: task key, result state, state message."""
    verdict: str
    exit_code: int
    """0 when no reported task failed, 1 otherwise."""


def report_run(run_id: int, tasks: Sequence[TaskOutcome], *, own_task_key: str | None = None) -> RunReport:
    """The report on ``tasks`` of run ``run_id``: never on ``own_task_key`` (the reporting task
    itself), nor on a task that has not finished (a reporter run unconditionally is still RUNNING)."""
    reported = [task for task in tasks if task.finished and task.task_key != own_task_key]
    key_width = max((len(task.task_key) for task in reported), default=0)
    states = [_state_text(task) for task in reported]
    state_width = max((len(state) for state in states), default=0)
    lines = tuple(
        f"{task.task_key:<{key_width}}  {state:<{state_width}}  {one_line(task.message) or '-'}".rstrip()
        for task, state in zip(reported, states, strict=True)
    )
    failed = [task for task in reported if task.failed]
    if not reported:
        return RunReport(lines, f"{_PREFIX}: run {run_id} has no other finished task to report on", 0)
    if not failed:
        keys = ", ".join(task.task_key for task in reported)
        return RunReport(lines, f"{_PREFIX}: no task of run {run_id} failed ({keys})", 0)
    refresh_failed = any(task.is_refresh for task in failed)
    parts = [_failure_text(task) for task in failed]
    for task in reported:
        if task.result_state != SUCCEEDED:
            continue
        if refresh_failed and not task.is_refresh:
            parts.append(f"{task.task_key} ran on gold as of the last successful refresh")
        else:
            parts.append(f"{task.task_key} succeeded")
    return RunReport(lines, f"{_PREFIX}: " + "; ".join(parts), 1)


def _state_text(task: TaskOutcome) -> str:
    state = task.result_state or ""
    code = task.termination_code
    if task.failed and code and code not in (state, SUCCEEDED):
        return f"{state} ({code})"
    return state


def _failure_text(task: TaskOutcome) -> str:
    message = one_line(task.message)
    return (
        f"{task.task_key} {task.result_state}: {message}"
        if message
        else f"{task.task_key} {task.result_state}"
    )


# -- reading a run through databricks-sdk ------------------------------------------------------

# Termination codes (``status``, the field that replaces the deprecated ``state``) as result
# states, for a task whose ``state.result_state`` is missing. SKIPPED stays SKIPPED (a failure
# here): without ``state`` it cannot be told apart from UPSTREAM_FAILED.
_CODE_RESULTS = {"SUCCESS": SUCCEEDED, "USER_CANCELED": "CANCELED", "DISABLED": "DISABLED"}
_TERMINAL_LIFE_CYCLES = frozenset({"INTERNAL_ERROR", "SKIPPED"})


def task_outcome(task: RunTask) -> TaskOutcome:
    """A ``RunTask`` of ``jobs.get_run`` as a TaskOutcome."""
    state, status = task.state, task.status
    details = status.termination_details if status is not None else None
    code = details.code.value if details is not None and details.code is not None else None
    life_cycle = state.life_cycle_state.value if state is not None and state.life_cycle_state else None
    status_state = status.state.value if status is not None and status.state is not None else None
    result: str | None
    if state is not None and state.result_state is not None:
        result = state.result_state.value
    elif code is not None:
        result = _CODE_RESULTS.get(code, code)
    elif life_cycle in _TERMINAL_LIFE_CYCLES:
        result = life_cycle
    elif (life_cycle is None and status_state is None) or "TERMINATED" in (life_cycle, status_state):
        result = UNKNOWN  # finished, or nothing said at all: never silently left out
    else:
        result = None  # RUNNING, PENDING, QUEUED, BLOCKED, WAITING_FOR_RETRY, TERMINATING
    message = (state.state_message if state is not None else None) or (
        details.message if details is not None else None
    )
    return TaskOutcome(
        task_key=task.task_key,
        result_state=result,
        message=message or "",
        termination_code=code,
        is_refresh=task.pipeline_task is not None,
    )


def latest_attempts(tasks: Sequence[RunTask]) -> list[RunTask]:
    """One entry per task key, its latest attempt: a task retried after a failure (``max_retries``)
    is listed once per attempt, and only the last attempt says how the task ended."""
    latest: dict[str, RunTask] = {}
    for task in tasks:
        previous = latest.get(task.task_key)
        if previous is None or _attempt_order(task) >= _attempt_order(previous):
            latest[task.task_key] = task
    return list(latest.values())


def _attempt_order(task: RunTask) -> tuple[int, int]:
    return (task.attempt_number or 0, task.start_time or 0)


def read_run_tasks(
    run_id: int,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    client_factory: Callable[[float, int], WorkspaceClient] | None = None,
) -> list[TaskOutcome]:
    """The tasks of job run ``run_id`` (latest attempt of each), read within ``timeout_s``.

    A refused connection ends with its cause well within ``timeout_s``, and the whole is bounded at
    ``timeout_s`` whatever the SDK does (databricks/workspace.py).
    """
    http_timeout_s, retry_timeout_s = client_timeouts(timeout_s)
    factory = client_factory or workspace_client
    return bounded(
        lambda: _read(run_id, factory(http_timeout_s, retry_timeout_s)), timeout_s, f"reading run {run_id}"
    )


def _read(run_id: int, client: WorkspaceClient) -> list[TaskOutcome]:
    try:
        run = client.jobs.get_run(run_id)  # every page of tasks (the SDK follows next_page_token)
    except (OSError, RuntimeError) as error:  # DatabricksError, requests' errors, TimeoutError
        raise JobsApiError(
            f"cannot read job run {run_id} from {client.config.host}: {cause(error)}"
        ) from None
    return [task_outcome(task) for task in latest_attempts(run.tasks or [])]
