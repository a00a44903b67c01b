"""``offsetlake job-report`` against a loopback Jobs API: the job run read through databricks-sdk,
the report, the exit status, and a bounded, one-line failure when the API cannot be read.

The server answers ``GET /api/2.2/jobs/runs/get`` (the path databricks-sdk 0.156 calls) with a run
shaped like the real API's: tasks with ``task_key``, ``state`` (``life_cycle_state``,
``result_state``, ``state_message``) and ``status`` (``state``, ``termination_details``).
"""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from offsetlake.cli.context import Context
from offsetlake.cli.main import run_command
from tests.loopback_api import JsonApiHandler, serving

RUN_ID = 7730125
REFRESH_MESSAGE = (
    "Pipeline update 2f0e5b1c failed: flow 'bronze_offset_syncs_primary' FAILED: "
    "KafkaException: Failed to get metadata"
)
OFFSETLAKE = Path(sys.executable).with_name("offsetlake")


def task(
    key: str,
    result: str | None,
    *,
    message: str = "",
    code: str | None = None,
    run_if: str | None = None,
    **definition: Any,
) -> dict[str, Any]:
    """One element of the run's ``tasks`` as runs/get returns it (a finished task when ``result``)."""
    finished = result is not None
    body: dict[str, Any] = {
        "task_key": key,
        "run_id": abs(hash(key)) % 10**12,
        "attempt_number": 0,
        "start_time": 1_764_000_000_000,
        "state": {
            "life_cycle_state": "TERMINATED" if finished else "RUNNING",
            "state_message": message,
            "user_cancelled_or_timedout": False,
            **({"result_state": result} if finished else {}),
        },
        "status": {"state": "TERMINATED" if finished else "RUNNING"},
        **definition,
    }
    if finished:
        body["end_time"] = 1_764_000_600_000
        body["status"]["termination_details"] = {
            "code": code or ("SUCCESS" if result == "SUCCESS" else "RUN_EXECUTION_ERROR"),
            "type": "SUCCESS" if result == "SUCCESS" else "CLIENT_ERROR",
            "message": message,
        }
    if run_if:
        body["run_if"] = run_if
        body["depends_on"] = [{"task_key": "refresh_pipeline"}]
    return body


def failover_run(refresh: str, apply: str, refresh_message: str = "") -> dict[str, Any]:
    return {
        "job_id": 91,
        "run_id": RUN_ID,
        "number_in_job": RUN_ID,
        "run_name": "[dev someone] offsetlake_failover",
        "run_type": "JOB_RUN",
        "format": "MULTI_TASK",
        "run_page_url": f"https://example.cloud.databricks.com/#job/91/run/{RUN_ID}",
        "state": {"life_cycle_state": "RUNNING", "state_message": "", "user_cancelled_or_timedout": False},
        "status": {"state": "RUNNING"},
        "tasks": [
            task(
                "refresh_pipeline",
                refresh,
                message=refresh_message,
                pipeline_task={"pipeline_id": "5a2c", "full_refresh": False},
            ),
            task(
                "apply_offsets",
                apply,
                run_if="ALL_DONE",
                python_wheel_task={"package_name": "offsetlake", "entry_point": "offsetlake"},
            ),
            task(
                "report_outcome",
                None,
                run_if="AT_LEAST_ONE_FAILED",
                python_wheel_task={"package_name": "offsetlake", "entry_point": "offsetlake"},
            ),
        ],
    }


@dataclass
class JobsApi:
    url: str
    runs: dict[int, dict[str, Any]]
    requests: list[tuple[str, dict[str, str], str]] = field(default_factory=list)
    """(path, query, Authorization header) of every request."""


@pytest.fixture
def jobs_api() -> Iterator[JobsApi]:
    runs: dict[int, dict[str, Any]] = {}
    seen: list[tuple[str, dict[str, str], str]] = []

    class Handler(JsonApiHandler):
        def answer(self, path: str, query: dict[str, str]) -> tuple[int, Any]:
            seen.append((path, query, self.headers.get("Authorization", "")))
            if path != "/api/2.2/jobs/runs/get":
                # e.g. the SDK's /.well-known/databricks-config probe: not a Databricks host
                return 404, {"error_code": "ENDPOINT_NOT_FOUND", "message": "no such endpoint"}
            if int(query["run_id"]) in runs:
                return 200, runs[int(query["run_id"])]
            message = f"Run {query['run_id']} does not exist."
            return 400, {"error_code": "INVALID_PARAMETER_VALUE", "message": message}

    with serving(Handler) as url:
        yield JobsApi(url, runs, seen)


def databricks_env(host: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    """This process's environment with only ``host`` and a token for Databricks (no profile file)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("DATABRICKS_")}
    env.update(DATABRICKS_CONFIG_FILE=str(tmp_path / "no.databrickscfg"), **extra)
    if host:
        env.update(DATABRICKS_HOST=host, DATABRICKS_TOKEN="x")
    return env


@pytest.fixture
def use_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    def apply(env: dict[str, str]) -> None:
        for name in [name for name in os.environ if name.startswith("DATABRICKS_")]:
            monkeypatch.delenv(name)
        for name, value in env.items():
            if os.environ.get(name) != value:
                monkeypatch.setenv(name, value)

    yield apply


def in_process(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run_command(["job-report", *argv], Context(out=out, err=err))
    return code, out.getvalue(), err.getvalue()


def test_a_failed_refresh_under_a_successful_apply_fails_the_report(
    jobs_api: JobsApi, tmp_path: Path, use_env: Any
) -> None:
    jobs_api.runs[RUN_ID] = failover_run("FAILED", "SUCCESS", REFRESH_MESSAGE)
    use_env(databricks_env(jobs_api.url, tmp_path))
    code, out, err = in_process(f"--run-id={RUN_ID}", "--task-key", "report_outcome")
    assert code == 1
    refresh_line, apply_line = out.splitlines()
    assert refresh_line == f"refresh_pipeline  FAILED (RUN_EXECUTION_ERROR)  {REFRESH_MESSAGE}"
    assert apply_line.split() == ["apply_offsets", "SUCCESS", "-"]
    assert err.splitlines() == [
        f"offsetlake job-report: refresh_pipeline FAILED: {REFRESH_MESSAGE}; "
        "apply_offsets ran on gold as of the last successful refresh"
    ]
    gets = [(query, auth) for path, query, auth in jobs_api.requests if path == "/api/2.2/jobs/runs/get"]
    assert gets == [({"run_id": str(RUN_ID)}, "Bearer x")]


def test_a_run_whose_tasks_all_succeeded_is_exit_0_without_task_key(
    jobs_api: JobsApi, tmp_path: Path, use_env: Any
) -> None:
    # Run unconditionally and without --task-key, the reporting task is skipped as still RUNNING.
    jobs_api.runs[RUN_ID] = failover_run("SUCCESS", "SUCCESS")
    use_env(databricks_env(jobs_api.url, tmp_path))
    code, out, err = in_process("--run-id", str(RUN_ID))
    assert (code, err) == (0, "")
    assert out.splitlines()[-1] == (
        f"offsetlake job-report: no task of run {RUN_ID} failed (refresh_pipeline, apply_offsets)"
    )
    assert "report_outcome" not in out


def test_a_run_the_api_does_not_know_is_one_error_line(
    jobs_api: JobsApi, tmp_path: Path, use_env: Any
) -> None:
    use_env(databricks_env(jobs_api.url, tmp_path))
    code, out, err = in_process("--run-id", "999")
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        f"offsetlake job-report: error: cannot read job run 999 from {jobs_api.url}: Run 999 does not exist."
    ]


def test_missing_credentials_are_one_error_line(tmp_path: Path, use_env: Any) -> None:
    use_env(databricks_env("", tmp_path, HOME=str(tmp_path)))
    code, out, err = in_process("--run-id", "1", "--timeout", "10")
    assert (code, out) == (1, "")
    # The authentication's own error, not "did not answer within 10 s": it ended before the bound.
    assert err.startswith("offsetlake job-report: error: cannot authenticate to the Databricks workspace: ")
    assert len(err.splitlines()) == 1


def test_the_console_script_reports_and_exits_1(jobs_api: JobsApi, tmp_path: Path) -> None:
    jobs_api.runs[RUN_ID] = failover_run("TIMEDOUT", "SUCCESS", "Task timed out after 600 seconds")
    completed = subprocess.run(
        [str(OFFSETLAKE), "job-report", f"--run-id={RUN_ID}", "--task-key=report_outcome"],
        env=databricks_env(jobs_api.url, tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 1, completed.stderr
    assert completed.stdout.splitlines()[0].split()[:2] == ["refresh_pipeline", "TIMEDOUT"]
    assert completed.stderr.splitlines() == [
        "offsetlake job-report: refresh_pipeline TIMEDOUT: Task timed out after 600 seconds; "
        "apply_offsets ran on gold as of the last successful refresh"
    ]


def test_nothing_listening_is_one_line_and_exit_1_within_the_timeout(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        host = f"http://127.0.0.1:{probe.getsockname()[1]}"  # closed again: connection refused
    # Long enough that a loaded machine's slow SDK start-up still leaves the SDK's retry window (a
    # sixth of it) inside the bound: with 8 s it read "did not answer" at a load average of 8.
    timeout_s = 30
    completed = subprocess.run(
        [str(OFFSETLAKE), "job-report", "--run-id", "1", "--timeout", str(timeout_s)],
        env=databricks_env(host, tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 1
    assert completed.stdout == ""
    (line,) = completed.stderr.splitlines()
    # The refusal itself, not "did not answer within 30 s": the run ended before its bound.
    assert line.startswith(
        f"offsetlake job-report: error: cannot read job run 1 from {host}: Connection refused"
    )
