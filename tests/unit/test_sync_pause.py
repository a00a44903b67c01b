"""``offsetlake pause-sync`` against a loopback Jobs API: the failover job's first task pauses the sync
job's schedule, ends its active runs, and leaves everything alone when either job only plans.

The server answers the four endpoints databricks-sdk 0.156 calls (``GET /api/2.2/jobs/get``,
``POST /api/2.2/jobs/update``, ``GET /api/2.2/jobs/runs/list``, ``POST /api/2.2/jobs/runs/cancel``)
with bodies shaped like the real API's, and keeps the job's state: its schedule and its active runs.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from databricks.sdk import WorkspaceClient

from offsetlake.cli.context import Context
from offsetlake.cli.main import run_command
from offsetlake.databricks.sync_pause import pause_sync
from offsetlake.databricks.workspace import JobsApiError
from tests.loopback_api import JsonApiHandler, serving

SYNC_JOB = 812
CRON = "0 0/5 * * * ?"


@dataclass
class JobsState:
    """The sync job as the Jobs API double holds it."""

    pause_status: str = "UNPAUSED"
    active_runs: list[int] = field(default_factory=list)
    cancelled: list[int] = field(default_factory=list)
    lists_until_cancelled_end: int = 1
    """runs/list calls after a cancel during which the cancelled run is still active (TERMINATING)."""
    updates: list[dict[str, Any]] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    refuse_update: bool = False


@dataclass
class JobsApi:
    url: str
    state: JobsState


@pytest.fixture
def jobs_api() -> Iterator[JobsApi]:
    state = JobsState()

    class Handler(JsonApiHandler):
        def answer(self, path: str, query: dict[str, str]) -> tuple[int, Any]:
            state.calls.append(f"GET {path}")
            if path == "/api/2.2/jobs/get" and int(query["job_id"]) == SYNC_JOB:
                schedule = {
                    "quartz_cron_expression": CRON,
                    "timezone_id": "UTC",
                    "pause_status": state.pause_status,
                }
                return 200, {
                    "job_id": SYNC_JOB,
                    "settings": {"name": "offsetlake_sync", "schedule": schedule},
                }
            if path == "/api/2.2/jobs/runs/list" and int(query["job_id"]) == SYNC_JOB:
                assert query["active_only"] == "true"
                runs = [{"job_id": SYNC_JOB, "run_id": run_id} for run_id in state.active_runs]
                if state.cancelled:
                    if state.lists_until_cancelled_end == 0:
                        state.active_runs = [r for r in state.active_runs if r not in state.cancelled]
                    state.lists_until_cancelled_end -= 1
                return 200, {"runs": runs, "has_more": False}
            return 404, {"error_code": "ENDPOINT_NOT_FOUND", "message": "no such endpoint"}

        def do_POST(self) -> None:  # noqa: N802 (BaseHTTPRequestHandler's name)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
            state.calls.append(f"POST {self.path}")
            status, answer = 200, {}
            if self.path == "/api/2.2/jobs/update" and not state.refuse_update:
                state.updates.append(body)
                state.pause_status = body["new_settings"]["schedule"]["pause_status"]
            elif self.path == "/api/2.2/jobs/update":
                status = 403
                answer = {
                    "error_code": "PERMISSION_DENIED",
                    "message": "User does not have Manage permissions",
                }
            elif self.path == "/api/2.2/jobs/runs/cancel":
                state.cancelled.append(body["run_id"])
            else:
                status, answer = 404, {"error_code": "ENDPOINT_NOT_FOUND", "message": "no such endpoint"}
            payload = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    with serving(Handler) as url:
        yield JobsApi(url, state)


def client_of(api: JobsApi) -> Any:
    return lambda _http_timeout_s, _retry_timeout_s: WorkspaceClient(host=api.url, token="x")


def api_calls(state: JobsState) -> list[str]:
    return [call for call in state.calls if "/jobs/" in call]


def test_the_schedule_is_paused_with_its_cron_kept_and_active_runs_end_first(jobs_api: JobsApi) -> None:
    jobs_api.state.active_runs = [5501]
    outcome = pause_sync(SYNC_JOB, timeout_s=30, poll_interval_s=0.01, client_factory=client_of(jobs_api))
    assert outcome.paused
    assert jobs_api.state.updates == [
        {
            "job_id": SYNC_JOB,
            "new_settings": {
                "schedule": {"quartz_cron_expression": CRON, "timezone_id": "UTC", "pause_status": "PAUSED"}
            },
        }
    ]
    assert jobs_api.state.cancelled == [5501]
    assert jobs_api.state.active_runs == []
    assert outcome.lines[:2] == (
        f"offsetlake pause-sync: paused the schedule of job {SYNC_JOB} (offsetlake_sync)",
        "offsetlake pause-sync: cancelled its active run(s) 5501; they have ended",
    )
    assert "a prod deploy resumes it" in outcome.lines[-1]


def test_an_already_paused_schedule_is_left_as_it_is(jobs_api: JobsApi) -> None:
    jobs_api.state.pause_status = "PAUSED"
    outcome = pause_sync(SYNC_JOB, timeout_s=30, poll_interval_s=0.01, client_factory=client_of(jobs_api))
    assert outcome.paused and jobs_api.state.updates == []
    assert (
        outcome.lines[0]
        == f"offsetlake pause-sync: the schedule of job {SYNC_JOB} (offsetlake_sync) was already paused"
    )


def test_a_run_that_does_not_end_after_its_cancel_fails_within_the_timeout(jobs_api: JobsApi) -> None:
    jobs_api.state.active_runs = [5502]
    jobs_api.state.lists_until_cancelled_end = 10**6
    with pytest.raises(
        JobsApiError, match=f"run\\(s\\) 5502 of job {SYNC_JOB} still active after cancelling"
    ):
        pause_sync(SYNC_JOB, timeout_s=4, poll_interval_s=0.5, client_factory=client_of(jobs_api))


def test_a_refused_update_is_one_line_naming_the_job(jobs_api: JobsApi) -> None:
    jobs_api.state.refuse_update = True
    with pytest.raises(
        JobsApiError, match=f"cannot pause job {SYNC_JOB} on .*: User does not have Manage permissions"
    ):
        pause_sync(SYNC_JOB, timeout_s=30, poll_interval_s=0.01, client_factory=client_of(jobs_api))
    assert jobs_api.state.pause_status == "UNPAUSED"


def in_process(
    api: JobsApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *argv: str
) -> tuple[int, str, str]:
    for name in [name for name in os.environ if name.startswith("DATABRICKS_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("DATABRICKS_CONFIG_FILE", str(tmp_path / "no.databrickscfg"))
    monkeypatch.setenv("DATABRICKS_HOST", api.url)
    monkeypatch.setenv("DATABRICKS_TOKEN", "x")
    out, err = io.StringIO(), io.StringIO()
    code = run_command(["pause-sync", f"--job-id={SYNC_JOB}", *argv], Context(out=out, err=err))
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(("mode", "sync_mode"), [("plan", "apply"), ("apply", "plan"), ("plan", "plan")])
def test_nothing_is_paused_when_either_job_only_plans(
    jobs_api: JobsApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, sync_mode: str
) -> None:
    code, out, _ = in_process(jobs_api, tmp_path, monkeypatch, f"--mode={mode}", f"--sync-mode={sync_mode}")
    assert (code, api_calls(jobs_api.state)) == (0, [])
    assert out.strip().endswith("the sync job's schedule is left as it is")


def test_a_failover_that_applies_pauses_a_live_sync_through_the_cli(
    jobs_api: JobsApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = in_process(jobs_api, tmp_path, monkeypatch, "--mode=apply", "--sync-mode=apply")
    assert (code, err) == (0, "")
    assert jobs_api.state.pause_status == "PAUSED"
    assert (
        out.splitlines()[0]
        == f"offsetlake pause-sync: paused the schedule of job {SYNC_JOB} (offsetlake_sync)"
    )


def test_an_unreachable_api_fails_the_task_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serving(JsonApiHandler) as url:
        dead = JobsApi(url, JobsState())
    code, out, err = in_process(
        dead, tmp_path, monkeypatch, "--mode=apply", "--sync-mode=apply", "--timeout=6"
    )
    assert (code, out) == (1, "")
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("offsetlake pause-sync: error: ")
