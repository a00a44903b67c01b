"""Smoke test on a real Databricks workspace: validate, deploy, refresh, a dry-run failover, destroy.

It runs only with a workspace, credentials, the ``databricks`` CLI and Kafka clusters that the
workspace's serverless compute can reach without credentials (the bundle's secret scope is created
empty by the deploy):

    DATABRICKS_HOST=https://<workspace> DATABRICKS_TOKEN=...            (or DATABRICKS_CLIENT_ID +
    OFFSETLAKE_SMOKE_SOURCE_CLUSTERS=primary=broker-a:9092                  DATABRICKS_CLIENT_SECRET)
    OFFSETLAKE_SMOKE_TARGET_BOOTSTRAP=broker-b:9092
    .venv/bin/pytest tests/e2e/test_databricks_smoke.py -ra

Otherwise every test is skipped, naming what is missing. The workspace must meet docs/deploy.md's
prerequisites for the dev target (catalog ``dev``, the ``Serverless Starter Warehouse``), and
``workspace.host`` of the dev target in databricks.yml must be DATABRICKS_HOST (the CLI refuses a
mismatch). The steps run the CLI from the repository root, each bounded by a timeout, with its
output shown on failure; ``databricks bundle destroy -t dev --auto-approve`` always runs at the end,
so the personal dev copy ([dev <you>] ..., schema dev_<you>_offsetlake) is gone afterwards.

The failover runs with ``mode=plan``: a dry run that alters no consumer group. For the plan to have
rows (and so print ``(dry run)``), the clusters should carry MirrorMaker 2 checkpoints or offset
syncs of at least one consumer group; with an empty gold, ``plan`` says that nothing can be applied
and still succeeds, which only a dry run does.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from offsetlake.local.processes import run_group

REPO_ROOT = Path(__file__).resolve().parents[2]
TARGET = "dev"
SOURCE_CLUSTERS_ENV = "OFFSETLAKE_SMOKE_SOURCE_CLUSTERS"
TARGET_BOOTSTRAP_ENV = "OFFSETLAKE_SMOKE_TARGET_BOOTSTRAP"
PIPELINE_KEY = "offsetlake_pipeline"
FAILOVER_KEY = "offsetlake_failover"

VALIDATE_TIMEOUT_S = 300
DEPLOY_TIMEOUT_S = 1200
RUN_TIMEOUT_S = 2400  # serverless start, a first full pipeline update in development mode
DESTROY_TIMEOUT_S = 1200

DRY_RUN_MARKER = "(dry run)"  # `offsetlake plan`'s totals line: "run <id> (dry run): N groups, ..."
EMPTY_GOLD_MARKER = "nothing can be applied"  # plan with an empty gold: exit 0 (apply exits 1)


def missing_prerequisites() -> list[str]:
    env = os.environ
    missing = []
    if not env.get("DATABRICKS_HOST"):
        missing.append("DATABRICKS_HOST")
    if not (
        env.get("DATABRICKS_TOKEN")
        or (env.get("DATABRICKS_CLIENT_ID") and env.get("DATABRICKS_CLIENT_SECRET"))
    ):
        missing.append("DATABRICKS_TOKEN (or DATABRICKS_CLIENT_ID + DATABRICKS_CLIENT_SECRET)")
    if shutil.which("databricks") is None:
        missing.append("the databricks CLI on PATH")
    missing.extend(name for name in (SOURCE_CLUSTERS_ENV, TARGET_BOOTSTRAP_ENV) if not env.get(name))
    return missing


_MISSING = missing_prerequisites()
pytestmark = pytest.mark.skipif(
    bool(_MISSING),
    reason="Databricks smoke test: needs DATABRICKS_HOST and credentials (DATABRICKS_TOKEN, or "
    "DATABRICKS_CLIENT_ID + DATABRICKS_CLIENT_SECRET), the databricks CLI on PATH, and "
    f"{SOURCE_CLUSTERS_ENV} / {TARGET_BOOTSTRAP_ENV} naming reachable Kafka clusters; missing: "
    + ", ".join(_MISSING),
)


@dataclass(frozen=True)
class CliRun:
    argv: tuple[str, ...]
    exit_code: int
    timed_out: bool
    seconds: float
    output: str

    def check(self) -> CliRun:
        verdict = f"timed out after {self.seconds:.0f} s" if self.timed_out else f"exit {self.exit_code}"
        assert self.exit_code == 0 and not self.timed_out, (
            f"`{' '.join(self.argv)}`: {verdict}\n{self.output}"
        )
        return self


def var_flag(name: str, value: str) -> str:
    """``--var=name=value``; the CLI reads --var as CSV (a comma separates flags: several source
    clusters), so a value with a comma or a quote is passed as one quoted CSV field."""
    pair = f"{name}={value}"
    if "," in pair or '"' in pair:
        pair = '"' + pair.replace('"', '""') + '"'
    return f"--var={pair}"


def bundle_argv(*args: str) -> tuple[str, ...]:
    """``databricks bundle <args> -t dev`` with the smoke clusters' variables."""
    return (
        "databricks",
        "bundle",
        *args,
        "-t",
        TARGET,
        var_flag("source_clusters", os.environ[SOURCE_CLUSTERS_ENV]),
        var_flag("target_bootstrap_servers", os.environ[TARGET_BOOTSTRAP_ENV]),
    )


def cli_env() -> dict[str, str]:
    # The artifact build runs `python3 -m pip wheel`: this interpreter's environment has pip.
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def bundle(*args: str, timeout_s: float) -> CliRun:
    """A bundle command from the repository root; its process group never outlives ``timeout_s``."""
    argv = bundle_argv(*args)
    lines: list[str] = []
    child = run_group(argv, cwd=REPO_ROOT, env=cli_env(), on_line=lines.append, timeout_s=timeout_s)
    return CliRun(argv, child.exit_code, child.timed_out, child.seconds, "".join(lines))


def deployed_job_ids() -> dict[str, str]:
    """Job key -> job ID of the deployed copy (``bundle summary``: stdout alone is the JSON)."""
    argv = bundle_argv("summary", "--output", "json")
    completed = subprocess.run(
        argv,
        cwd=REPO_ROOT,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=VALIDATE_TIMEOUT_S,
        check=False,
    )
    assert completed.returncode == 0, f"`{' '.join(argv)}`: exit {completed.returncode}\n{completed.stderr}"
    jobs = json.loads(completed.stdout)["resources"]["jobs"]
    return {key: str(job["id"]) for key, job in jobs.items()}


def _normalized_host(host: str) -> str:
    host = host.strip().rstrip("/").lower()
    return host if "://" in host else f"https://{host}"


@pytest.fixture(scope="module")
def workspace() -> str:
    """DATABRICKS_HOST, once databricks.yml's dev target is known to point at it."""
    host = os.environ["DATABRICKS_HOST"]
    config = yaml.safe_load((REPO_ROOT / "databricks.yml").read_text(encoding="utf-8"))
    target = ((config.get("targets") or {}).get(TARGET) or {}).get("workspace") or {}
    bundle_host = target.get("host") or (config.get("workspace") or {}).get("host")
    if bundle_host and _normalized_host(bundle_host) != _normalized_host(host):
        pytest.fail(
            f"databricks.yml's {TARGET} target deploys to {bundle_host}, DATABRICKS_HOST is {host}: the CLI "
            "refuses the mismatch ('config host mismatch'); set targets.dev.workspace.host to your "
            "workspace, or delete it (docs/deploy.md, step 1)",
            pytrace=False,
        )
    return host


def test_the_bundle_validates(workspace: str) -> None:
    bundle("validate", timeout_s=VALIDATE_TIMEOUT_S).check()


@pytest.fixture(scope="module")
def deployed(workspace: str) -> Iterator[dict[str, str]]:
    """The dev copy deployed; the deployed job keys -> job IDs. Destroyed afterwards, also when
    the deploy itself failed half-way."""
    try:
        bundle("deploy", timeout_s=DEPLOY_TIMEOUT_S).check()
        job_ids = deployed_job_ids()
    except BaseException as error:
        destroyed = bundle("destroy", "--auto-approve", timeout_s=DESTROY_TIMEOUT_S)
        if destroyed.exit_code or destroyed.timed_out:  # said, without hiding the deploy's failure
            error.add_note(f"and `bundle destroy` after it failed too:\n{destroyed.output}")
        raise
    try:
        yield job_ids
    finally:
        bundle("destroy", "--auto-approve", timeout_s=DESTROY_TIMEOUT_S).check()


@pytest.fixture(scope="module")
def refreshed(deployed: dict[str, str]) -> CliRun:
    return bundle("run", PIPELINE_KEY, timeout_s=RUN_TIMEOUT_S)


def test_the_pipeline_update_succeeds(refreshed: CliRun) -> None:
    refreshed.check()


def test_a_plan_mode_failover_succeeds_and_is_a_dry_run(deployed: dict[str, str], refreshed: CliRun) -> None:
    from databricks.sdk import WorkspaceClient

    from offsetlake.databricks.job_report import latest_attempts, task_outcome

    refreshed.check()
    started_ms = int(time.time() * 1000)
    run = bundle("run", FAILOVER_KEY, "--params", "mode=plan", timeout_s=RUN_TIMEOUT_S)
    run.check()

    client = WorkspaceClient()
    job_id = int(deployed[FAILOVER_KEY])
    recent = itertools.islice(client.jobs.list_runs(job_id=job_id, limit=5), 5)  # newest first
    ours = [r for r in recent if (r.start_time or 0) >= started_ms - 60_000]  # a minute of clock skew
    assert ours, f"no run of job {job_id} since the `bundle run`:\n{run.output}"
    details = client.jobs.get_run(ours[0].run_id or 0)
    tasks = {task.task_key: task for task in latest_attempts(details.tasks or [])}
    states = {key: task_outcome(task).result_state for key, task in tasks.items()}
    assert states.get("refresh_pipeline") == "SUCCESS", f"{states}\n{run.output}"
    assert states.get("apply_offsets") == "SUCCESS", f"{states}\n{run.output}"
    if "report_outcome" in states:  # run_if AT_LEAST_ONE_FAILED: nothing failed, so excluded
        assert states["report_outcome"] == "EXCLUDED", states

    apply_output = client.jobs.get_run_output(tasks["apply_offsets"].run_id or 0)
    logs = apply_output.logs or ""
    assert DRY_RUN_MARKER in logs or EMPTY_GOLD_MARKER in logs, (
        f"the apply task's output does not show a dry run:\n{logs}\n--- bundle run:\n{run.output}"
    )
