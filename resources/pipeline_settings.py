"""The pipeline's configuration, read where the bundle declares it and passed to every apply task.

The apply names topics by the pipeline's settings (replication policy, separator, target alias, K2K
routes and header names: offsetlake.cli.settings). On Databricks it has no spec of the pipeline's
last update to read them from, so each apply task passes the pipeline resource's whole
``configuration`` as ``--set`` pairs, generated here from offsetlake.pipeline.yml as declared
(``${var.*}`` references left for the CLI to resolve, as in the pipeline): a key added to the
pipeline's configuration reaches every apply task with no other edit.

A task defined in Python puts :func:`set_arguments` in its parameters. A task defined in YAML
writes the one parameter :data:`PIPELINE_SETTINGS`, which the mutator
:func:`pass_pipeline_settings` (databricks.yml ``python.mutators``) replaces with them at deploy
time; left in place, the CLI refuses it as an unknown flag, so no apply runs on the defaults unseen.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Final

import yaml
from databricks.bundles.core import job_mutator
from databricks.bundles.jobs import Job

PIPELINE_FILE: Final = Path(__file__).resolve().parent / "offsetlake.pipeline.yml"
PIPELINE_SETTINGS: Final = "--pipeline-settings"
"""The parameter a YAML-defined apply task writes where the pipeline's ``--set`` pairs go."""


def pipeline_configuration(path: Path = PIPELINE_FILE) -> dict[str, str]:
    """The pipeline resource's ``configuration``, as declared (references unresolved)."""
    pipelines = yaml.safe_load(path.read_text(encoding="utf-8"))["resources"]["pipelines"]
    (configuration,) = [settings["configuration"] for settings in pipelines.values()]
    return {str(key): str(value) for key, value in configuration.items()}


def set_arguments(configuration: Mapping[str, str] | None = None) -> list[str]:
    """``--set KEY=VALUE`` for every key of the pipeline's configuration, in its order."""
    conf = pipeline_configuration() if configuration is None else configuration
    return [argument for key, value in conf.items() for argument in ("--set", f"{key}={value}")]


@job_mutator
def pass_pipeline_settings(job: Job) -> Job:
    """``job`` with each :data:`PIPELINE_SETTINGS` parameter of a wheel task replaced by the
    pipeline's ``--set`` pairs; a job without one is returned as it is."""
    tasks = list(job.tasks)
    for index, task in enumerate(tasks):
        wheel = task.python_wheel_task
        if wheel is None or PIPELINE_SETTINGS not in wheel.parameters:
            continue
        parameters = [
            argument
            for parameter in wheel.parameters
            for argument in (set_arguments() if parameter == PIPELINE_SETTINGS else [parameter])
        ]
        tasks[index] = replace(task, python_wheel_task=replace(wheel, parameters=parameters))
    return job if tasks == list(job.tasks) else replace(job, tasks=tasks)
