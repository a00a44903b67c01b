"""The manual failover job: pause the sync job (when both apply), refresh the pipeline so gold holds
the newest translated offsets, then plan or apply them to the consumer groups on the target cluster
(plan, alter, read back, audit).

An operator starts it by its id with `databricks jobs run-now` and job parameters, or from the Jobs
UI (docs/deploy.md, "Failing over"): every choice made during an outage is a job parameter with a
safe default, and the default mode is plan (a dry run): nothing is altered until an operator says apply.

Defined in Python, not YAML, for one field: the refresh's `refresh_selection` is computed from the
pipeline's table lineage (offsetlake.contract.refresh_selection) for the graph the target's variables
declare, never listed by hand. The CLI calls :func:`failover_job` through `load_resources`
(resources/__init__.py) with the target's variable values. Relative paths here are relative to the
bundle root (the CLI places Python output at the root: bundle/config/mutator/python).
"""

from __future__ import annotations

import re
from typing import Any, Final

from databricks.bundles.core import Bundle
from databricks.bundles.jobs import Job

from offsetlake.contract.refresh_selection import failover_refresh_selection
from offsetlake.contract.settings import PipelineSettings

from .pipeline_settings import pipeline_configuration, set_arguments

FAILOVER_JOB_KEY: Final = "offsetlake_failover"
_VARIABLE: Final = re.compile(r"\$\{var\.([A-Za-z0-9_-]+)\}")


def refresh_selection(bundle: Bundle) -> list[str]:
    """What the failover refreshes, for the graph the pipeline's configuration declares with the
    target's variable values (mapping and tracing tables exist only when configured)."""

    def with_variables(value: str) -> str:
        return _VARIABLE.sub(lambda found: str(bundle.variables[found.group(1)]), value)

    conf = {key: with_variables(value) for key, value in pipeline_configuration().items()}
    return list(failover_refresh_selection(PipelineSettings.from_conf(conf.get)))


def failover_job(bundle: Bundle) -> Job:
    """The failover job for ``bundle``'s target, its access and paging from the target's variables,
    never from the target's name (a target cannot override a resource defined in Python: the CLI
    refuses a change to one). It pages when `notification_destinations` lists any (dev lists none)."""
    paging: dict[str, Any] = {}
    if bundle.variables.get("notification_destinations"):
        paging = {
            "webhook_notifications": {
                "on_failure": "${var.notification_destinations}",
                "on_duration_warning_threshold_exceeded": "${var.notification_destinations}",
            },
        }
    return Job.from_dict(
        {
            "name": FAILOVER_JOB_KEY,
            "max_concurrent_runs": 1,
            "queue": {"enabled": False},
            "notification_settings": {"no_alert_for_skipped_runs": True},
            "parameters": [
                {
                    "name": "mode",
                    "default": "plan",
                },  # plan: a dry run, audited; apply: alter the target's groups
                {
                    "name": "as_of",
                    "default": "",
                },  # empty: the latest offsets; an ISO time restores those of that time
                {"name": "groups", "default": ".*"},
                # A group with members on the target refuses the run (exit 3).
                {"name": "active_group_policy", "default": "fail"},
                {"name": "allow_rewind", "default": "false"},
                {"name": "max_age", "default": "1h"},
            ],
            "timeout_seconds": 1800,
            "health": {"rules": [{"metric": "RUN_DURATION_SECONDS", "op": "GREATER_THAN", "value": 900}]},
            "email_notifications": {
                "on_failure": "${var.notification_emails}",
                "on_duration_warning_threshold_exceeded": "${var.notification_emails}",
            },
            **paging,
            "permissions": "${var.job_permissions}",
            "tasks": [
                # First, when this run applies and the sync job applies too: pause the sync job's
                # schedule and end its active runs, so that no sync run moves a group this failover
                # set (an as_of rewind would be moved forward again within five minutes). It stays
                # paused until resumed (docs/deploy.md, "Failing over"). In plan mode it alters nothing.
                {
                    "task_key": "pause_sync",
                    "python_wheel_task": {
                        "package_name": "offsetlake",
                        "entry_point": "offsetlake",
                        "parameters": [
                            "pause-sync",
                            "--job-id=${resources.jobs.offsetlake_sync.id}",
                            "--mode={{job.parameters.mode}}",
                            "--sync-mode=${var.sync_mode}",
                        ],
                    },
                    "environment_key": "default",
                    "timeout_seconds": 600,
                    "max_retries": 2,
                    "min_retry_interval_millis": 10000,
                },
                # Runs whatever the pause did: a failed pause fails the run (report_outcome), never
                # the failover.
                {
                    "task_key": "refresh_pipeline",
                    "depends_on": [{"task_key": "pause_sync"}],
                    "run_if": "ALL_DONE",
                    "pipeline_task": {
                        "pipeline_id": "${resources.pipelines.offsetlake_pipeline.id}",
                        "full_refresh": False,
                        # Only what latest_offsets (and k2k_mapping_conflicts, when mappings are
                        # configured) is computed from, and the health rows the report prints.
                        # Progress, data loss and history follow at the next full update.
                        "refresh_selection": refresh_selection(bundle),
                    },
                    # Bounded: during an outage the refresh may hang on a dead cluster; apply runs
                    # anyway, and reads the target's checkpoints written after gold itself.
                    "timeout_seconds": 600,
                },
                # Runs whatever the refresh's outcome: the day the source cluster is lost, the refresh
                # may fail or be partial, and that is exactly when the failover must still run. apply
                # decides from freshness (--max-age: it refuses translations gold has not re-observed
                # recently, and exits non-zero when nothing is fresh enough) and prints each cluster's
                # health.
                {
                    "task_key": "apply_offsets",
                    "depends_on": [{"task_key": "refresh_pipeline"}],
                    "run_if": "ALL_DONE",
                    "python_wheel_task": {
                        "package_name": "offsetlake",
                        "entry_point": "offsetlake",
                        "parameters": [
                            "{{job.parameters.mode}}",
                            "--as-of={{job.parameters.as_of}}",
                            "--groups={{job.parameters.groups}}",
                            "--active-group-policy={{job.parameters.active_group_policy}}",
                            "--allow-rewind={{job.parameters.allow_rewind}}",
                            "--max-age={{job.parameters.max_age}}",
                            # The groups it places stay failed over: every later sync run leaves
                            # them alone until an operator resumes them (--resume-sync).
                            "--as-failover",
                            # Every checkpoint MM2's topics on the target hold, each read from its log
                            # start by the task itself (the source may be gone; a failed or partial
                            # refresh may have left records in bronze that gold never saw), under the
                            # pipeline's replication policy; K2K's tracing headers searched now for
                            # each selected group's newest snapshot (off without K2K routes).
                            "--checkpoint-tail=true",
                            # The pipeline's whole configuration as --set pairs (its replication
                            # policy, target alias, K2K routes...), generated from its resource.
                            *set_arguments(),
                            "--catalog",
                            "${resources.schemas.offsetlake_schema.catalog_name}",
                            "--schema",
                            "${resources.schemas.offsetlake_schema.name}",
                            "--target-bootstrap-servers",
                            "${var.target_bootstrap_servers}",
                            "--secret-scope",
                            "${resources.secret_scopes.offsetlake_kafka.name}",
                            "--method-precedence",
                            "${var.method_precedence}",
                        ],
                    },
                    "environment_key": "default",
                    "timeout_seconds": 900,
                    # A rerun converges (applied partitions become noop); a refused run (exit 3) is
                    # retried too, harmlessly, and still fails the job if the group stays active.
                    "max_retries": 2,
                    "min_retry_interval_millis": 30000,
                    "retry_on_timeout": True,
                },
                # The leaf that decides the run's result. Databricks judges a run by its leaf tasks:
                # with apply_offsets as the leaf, a failed refresh followed by a successful apply ends
                # "Succeeded with failures" and on_failure never fires. This task runs only when a
                # task before it failed (AT_LEAST_ONE_FAILED; otherwise it is Excluded, which counts
                # as success), prints each task's state and message, and fails the run, so the
                # failure is notified.
                {
                    "task_key": "report_outcome",
                    "depends_on": [
                        {"task_key": "pause_sync"},
                        {"task_key": "refresh_pipeline"},
                        {"task_key": "apply_offsets"},
                    ],
                    "run_if": "AT_LEAST_ONE_FAILED",
                    "python_wheel_task": {
                        "package_name": "offsetlake",
                        "entry_point": "offsetlake",
                        "parameters": ["job-report", "--run-id={{job.run_id}}", "--task-key=report_outcome"],
                    },
                    "environment_key": "default",
                    "timeout_seconds": 300,
                    # No retries: a report that fails is meant to fail the run.
                },
            ],
            "environments": [
                {
                    "environment_key": "default",
                    "spec": {"environment_version": "4", "dependencies": ["dist/*.whl"]},
                }
            ],
        }
    )
