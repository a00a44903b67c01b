"""The checkpoint tail names its topics with the pipeline's replication policy, everywhere it runs:
plan/apply (``--set``, else the home's pipeline spec), failover --refresh never, the bundle's task."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from offsetlake.cli.apply import request_from_args
from offsetlake.cli.clusters import ResolvedClusters
from offsetlake.cli.main import build_parser
from offsetlake.contract.settings import PipelineSettings
from offsetlake.errors import InvalidValueError
from offsetlake.local.home import LocalHome
from offsetlake.local.pipeline_spec import write_spec
from offsetlake.mirror.clusters import ClusterEndpoint
from offsetlake.mirror.policy import ReplicationPolicy
from tests.bundle_resolver import python_resources_of_target

REPO = Path(__file__).resolve().parents[2]
CLUSTERS = ResolvedClusters("t:9092", "target", (), None)


@pytest.fixture(autouse=True)
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("OFFSETLAKE_HOME", str(tmp_path))
    monkeypatch.delenv("DATABRICKS_RUNTIME_VERSION", raising=False)
    return tmp_path


def tail_policy(command: str, *flags: str) -> ReplicationPolicy | None:
    parsed = build_parser().parse_args([command, "--target-bootstrap-servers", "t:9092", *flags])
    return request_from_args(
        parsed, CLUSTERS, dry_run=command == "plan", home=LocalHome.resolve()
    ).checkpoint_tail


def test_set_names_the_policy_of_plan_and_apply() -> None:
    for command in ("plan", "apply"):
        policy = tail_policy(
            command,
            "--checkpoint-tail",
            "--set",
            "offsetlake.replication.separator=_",
            "--set",
            "offsetlake.replication.policy=identity",
        )
        assert policy == ReplicationPolicy(kind="identity", separator="_")
    assert tail_policy("apply") is None, "no tail unless asked"


def test_without_set_the_homes_last_pipeline_run_names_it(home: Path) -> None:
    assert tail_policy("apply", "--checkpoint-tail") == ReplicationPolicy()
    settings = PipelineSettings("t:9092", (ClusterEndpoint("east", "s:9092"),), separator="__")
    write_spec(LocalHome(home), settings)
    assert tail_policy("apply", "--checkpoint-tail") == ReplicationPolicy(separator="__")
    assert tail_policy("plan", "--checkpoint-tail", "--set", "offsetlake.replication.separator=-") == (
        ReplicationPolicy(separator="-")
    )


def test_a_bad_setting_is_one_clear_error() -> None:
    with pytest.raises(InvalidValueError, match=r"unknown setting 'offsetlake\.replication\.sep'; did you"):
        tail_policy("apply", "--checkpoint-tail", "--set", "offsetlake.replication.sep=_")
    with pytest.raises(InvalidValueError, match=r"offsetlake\.KEY=VALUE"):
        tail_policy("apply", "--checkpoint-tail", "--set", "replication.separator=_")
    with pytest.raises(InvalidValueError, match=r"offsetlake\.replication\.policy must be one of"):
        tail_policy("apply", "--checkpoint-tail", "--set", "offsetlake.replication.policy=mirror")


def test_the_bundles_apply_task_passes_the_pipelines_policy() -> None:
    pipeline = yaml.safe_load((REPO / "resources" / "offsetlake.pipeline.yml").read_text())
    job = python_resources_of_target(
        "dev", {"source_clusters": "p=s:9092", "target_bootstrap_servers": "t:9092"}
    )
    (configuration,) = [p["configuration"] for p in pipeline["resources"]["pipelines"].values()]
    tasks: list[dict[str, Any]] = job["jobs"]["offsetlake_failover"]["tasks"]
    (apply,) = [task for task in tasks if task["task_key"] == "apply_offsets"]
    parameters = apply["python_wheel_task"]["parameters"]
    assert "--checkpoint-tail=true" in parameters
    for key in ("offsetlake.replication.policy", "offsetlake.replication.separator"):
        assert f"{key}={configuration[key]}" in parameters
