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

import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeoutError
from dataclasses import dataclass
from typing import TYPE_CHECKING

from offsetlake import __version__
from offsetlake.errors import ExternalError

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

_MAX_MESSAGE_CHARS = 300
_PREFIX = "offsetlake job-report"


class JobsApiError(ExternalError):
    """The Jobs API could not be reached, refused the credentials, or refused the request."""


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
        f"{task.task_key:<{key_width}}  {state:<{state_width}}  {_one_line(task.message) or '-'}".rstrip()
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
    message = _one_line(task.message)
    return (
        f"{task.task_key} {task.result_state}: {message}"
        if message
        else f"{task.task_key} {task.result_state}"
    )


def _one_line(text: str) -> str:
    """A state message on one line, shortened: messages can hold a whole stack trace."""
    flat = " ".join(text.split())
    return flat if len(flat) <= _MAX_MESSAGE_CHARS else flat[: _MAX_MESSAGE_CHARS - 1].rstrip() + "…"


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

    The SDK retries a refused connection until its retry timeout and may overshoot it by a back-off
    sleep, and the client's set-up makes calls of its own (host metadata, OAuth endpoints), so
    its HTTP and retry timeouts are a sixth of ``timeout_s``: a refused connection ends with its
    cause well within ``timeout_s``. A thread bounds the whole at ``timeout_s`` whatever the SDK
    does (a host that accepts and never answers, a slow token endpoint).
    """
    http_timeout_s = max(1.0, timeout_s / 6)
    retry_timeout_s = max(1, int(timeout_s / 6))
    factory = client_factory or _workspace_client
    answer: Future[list[TaskOutcome]] = Future()

    def work() -> None:
        try:
            answer.set_result(_read(run_id, factory(http_timeout_s, retry_timeout_s)))
        except BaseException as error:  # handed to the waiting thread, which raises it
            answer.set_exception(error)

    # The daemon thread is abandoned on a timeout: it holds nothing the process needs.
    threading.Thread(target=work, name="offsetlake-jobs-api", daemon=True).start()
    try:
        return answer.result(timeout=timeout_s)
    except FutureTimeoutError:
        message = f"the Jobs API did not answer within {timeout_s:g} s (reading run {run_id})"
        raise JobsApiError(message) from None


def _workspace_client(http_timeout_s: float, retry_timeout_s: int) -> WorkspaceClient:
    from databricks.sdk import WorkspaceClient
    from databricks.sdk.core import Config

    try:
        config = Config(
            http_timeout_seconds=http_timeout_s,
            retry_timeout_seconds=retry_timeout_s,
            product="offsetlake",
            product_version=__version__,
        )
    except ValueError as error:  # no credentials, or a configuration the SDK refuses
        raise JobsApiError(
            f"cannot authenticate to the Databricks workspace: {_one_line(str(error))}"
        ) from None
    return WorkspaceClient(config=config)


def _read(run_id: int, client: WorkspaceClient) -> list[TaskOutcome]:
    try:
        run = client.jobs.get_run(run_id)  # every page of tasks (the SDK follows next_page_token)
    except (OSError, RuntimeError) as error:  # DatabricksError, requests' errors, TimeoutError
        raise JobsApiError(
            f"cannot read job run {run_id} from {client.config.host}: {_cause(error)}"
        ) from None
    return [task_outcome(task) for task in latest_attempts(run.tasks or [])]


_ERRNO = re.compile(r"\[Errno -?\d+\] ")


def _cause(error: BaseException) -> str:
    """The root cause in one line: ``Connection refused`` rather than urllib3's nested reprs."""
    chain = [error]
    while (cause := chain[-1].__cause__ or chain[-1].__context__) is not None and cause not in chain:
        chain.append(cause)
    root = chain[-1]
    text = root.strerror if isinstance(root, OSError) and root.strerror else _ERRNO.sub("", str(root))
    if root is not error and isinstance(error, TimeoutError):
        text = f"{text} ({error})"
    return _one_line(text or type(root).__name__)
