"""The bundle's apply tasks pass the pipeline's own configuration (resources/pipeline_settings.py).

On Databricks the apply has no spec of the pipeline's last update: every setting it reads comes
from its task's `--set` pairs, generated from the pipeline resource's `configuration` (never
restated by hand), so a key added to that configuration reaches every apply task with no edit.
"""

from __future__ import annotations

import argparse
import itertools
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from offsetlake.cli.context import Context
from offsetlake.cli.main import build_parser
from offsetlake.cli.settings import pipeline_settings
from offsetlake.cli.stores import command_home
from offsetlake.contract.settings import PipelineSettings
from offsetlake.sessions import RUNTIME_ENV
from tests.bundle_resolver import REPO_ROOT, Identity, resolve_bundle, resources_named

JANE = Identity("jane.doe@example.com")
REQUIRED = {"source_clusters": "primary=kafka-a-1:9092", "target_bootstrap_servers": "kafka-b-1:9092"}
PROD = REQUIRED | {
    "notification_emails": ["oncall@example.com"],
    "notification_destinations": [{"id": "3c1f0b8e-pagerduty"}],
    "alert_subscriptions": [{"destination_id": "3c1f0b8e-pagerduty"}],
}
JOB_PARAMETER = re.compile(r"\{\{job\.parameters\.(\w+)\}\}")
APPLY_TASKS = {"offsetlake_sync.sync_standby_groups", "offsetlake_failover.apply_offsets"}


def resolve(target: str, root: Path = REPO_ROOT, **values: Any) -> dict[str, Any]:
    overrides = (REQUIRED if target == "dev" else PROD) | values
    return resolve_bundle(target, identity=JANE, overrides_file=overrides, root=root)


def configuration(resolved: dict[str, Any]) -> dict[str, str]:
    (pipeline,) = resources_named(resolved, "pipelines.*").values()
    return {key: str(value) for key, value in pipeline["configuration"].items()}


def wheel_tasks(resolved: dict[str, Any]) -> dict[str, list[str]]:
    """`<job>.<task>` -> the parameters of each wheel task, the job's parameters at their defaults."""
    found: dict[str, list[str]] = {}
    for key, job in resources_named(resolved, "jobs.*").items():
        defaults = {parameter["name"]: str(parameter["default"]) for parameter in job.get("parameters", [])}

        def at_default(reference: re.Match[str], defaults: dict[str, str] = defaults) -> str:
            return defaults[reference.group(1)]

        for task in job["tasks"]:
            if "python_wheel_task" in task:
                parameters = task["python_wheel_task"]["parameters"]
                name = f"{key.removeprefix('jobs.')}.{task['task_key']}"
                found[name] = [JOB_PARAMETER.sub(at_default, str(parameter)) for parameter in parameters]
    return found


def settings_readers(resolved: dict[str, Any]) -> dict[str, argparse.Namespace]:
    """Every wheel task whose command reads the pipeline settings (takes `--set`), as the CLI parses it."""
    parser = build_parser()
    (commands,) = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    reading = {
        name
        for name, command in commands.choices.items()
        if any("--set" in action.option_strings for action in command._actions)
    }
    return {
        name: parser.parse_args(arguments)
        for name, arguments in wheel_tasks(resolved).items()
        if arguments[0] in reading
    }


@pytest.mark.parametrize("target", ["dev", "prod"])
def test_every_apply_task_reads_the_settings_the_pipeline_runs_with(
    target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    resolved = resolve(target, k2k_tracing_topics="primary=dr.{topic}", replication_separator="_")
    conf = configuration(resolved)
    readers = settings_readers(resolved)
    assert set(readers) == APPLY_TASKS
    monkeypatch.setenv(RUNTIME_ENV, "17.3")  # on Databricks: no home, only the task's --set pairs
    pipeline = PipelineSettings.from_mapping(conf)
    for name, parsed in readers.items():
        assert parsed.set == [f"{key}={value}" for key, value in conf.items()], name
        assert pipeline_settings(parsed, command_home(Context())) == pipeline, name


def test_a_key_added_to_the_pipelines_configuration_reaches_every_apply_task(tmp_path: Path) -> None:
    shutil.copytree(REPO_ROOT / "resources", tmp_path / "resources")
    shutil.copy(REPO_ROOT / "databricks.yml", tmp_path / "databricks.yml")
    pipeline_file = tmp_path / "resources" / "offsetlake.pipeline.yml"
    document = yaml.safe_load(pipeline_file.read_text(encoding="utf-8"))
    (pipeline,) = document["resources"]["pipelines"].values()
    pipeline["configuration"]["offsetlake.added.setting"] = "${var.target_alias}"
    pipeline["configuration"]["offsetlake.replication.separator"] = "__"
    pipeline_file.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")

    resolved = resolve("dev", root=tmp_path, target_alias="dr")
    tasks = {name: arguments for name, arguments in wheel_tasks(resolved).items() if name in APPLY_TASKS}
    assert set(tasks) == APPLY_TASKS
    for name, parameters in tasks.items():
        pairs = [value for flag, value in itertools.pairwise(parameters) if flag == "--set"]
        assert "offsetlake.added.setting=dr" in pairs, name
        assert "offsetlake.replication.separator=__" in pairs, name
        assert pairs == [f"{key}={value}" for key, value in configuration(resolved).items()], name
