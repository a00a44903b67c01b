"""The Databricks asset bundle: schema-valid, loadable as bundle dataclasses, in step with the docs.

Pure and offline: the bundle JSON schema from the shared checkout stands in for
`databricks bundle validate`, and docs/architecture.md is parsed so that the pipeline
configuration keys cannot drift from the documented contract.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from databricks.bundles.jobs import Job, RunIf
from databricks.bundles.pipelines import Pipeline
from jsonschema.protocols import Validator

from offsetlake.cli.main import build_parser
from tests.bundle_resolver import python_resources_of_target
from tests.bundle_validation import (
    BUNDLE_ROOT_FILE,
    BUNDLE_SCHEMA_PATH,
    REPO_ROOT,
    RESOURCES_DIR,
    bundle_files,
    credential_findings,
    documented_pipeline_settings,
    load_bundle_validator,
    load_yaml,
    schema_violations,
    variable_references,
)

SYNC_JOB_FILE = RESOURCES_DIR / "offsetlake.sync.job.yml"
PIPELINE_FILE = RESOURCES_DIR / "offsetlake.pipeline.yml"
TRANSFORMATIONS_DIR = REPO_ROOT / "src" / "offsetlake" / "pipeline" / "transformations"
JOB_KEY = "offsetlake_failover"
SYNC_JOB_KEY = "offsetlake_sync"
PIPELINE_KEY = "offsetlake_pipeline"
# What `variable-overrides.json` gives the CLI for each target (docs/deploy.md).
DEPLOY_VALUES: dict[str, dict[str, Any]] = {
    "dev": {"source_clusters": "primary=kafka-a-1:9092", "target_bootstrap_servers": "kafka-b-1:9092"},
}
DEPLOY_VALUES["prod"] = DEPLOY_VALUES["dev"] | {
    "notification_emails": ["oncall@example.com"],
    "notification_destinations": [{"id": "3c1f0b8e-pagerduty"}],
    "alert_subscriptions": [{"destination_id": "3c1f0b8e-pagerduty"}],
}


def python_defined(target: str) -> dict[str, Any]:
    """The resources `python.resources` adds for ``target``, as a bundle document like a YAML file's:
    the failover job (resources/offsetlake_failover_job.py), called the way the CLI calls it."""
    return {"resources": python_resources_of_target(target, DEPLOY_VALUES[target])}


FAILOVER_DOCUMENT = python_defined("dev")


@pytest.fixture(scope="module")
def bundle_validator() -> Validator:
    assert BUNDLE_SCHEMA_PATH.is_file(), (
        f"bundle JSON schema not found at {BUNDLE_SCHEMA_PATH}: put the shared/ checkout beside the repo, "
        "or `databricks bundle schema > <file>` and OFFSETLAKE_BUNDLE_SCHEMA=<file>"
    )
    return load_bundle_validator()


@pytest.fixture(scope="module")
def variables() -> dict[str, dict[str, Any]]:
    return load_yaml(BUNDLE_ROOT_FILE)["variables"]


@pytest.fixture(scope="module")
def job_settings() -> dict[str, Any]:
    return FAILOVER_DOCUMENT["resources"]["jobs"][JOB_KEY]


@pytest.fixture(scope="module")
def pipeline_settings() -> dict[str, Any]:
    return load_yaml(PIPELINE_FILE)["resources"]["pipelines"][PIPELINE_KEY]


@pytest.fixture(scope="module")
def documented_settings() -> dict[str, str | None]:
    return documented_pipeline_settings((REPO_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def project() -> dict[str, Any]:
    return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


# --- schema ------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", bundle_files(), ids=lambda path: path.relative_to(REPO_ROOT).as_posix())
def test_bundle_file_matches_the_bundle_schema(path: Path, bundle_validator: Validator) -> None:
    violations = schema_violations(load_yaml(path), bundle_validator)
    assert not violations, "\n".join(map(str, violations))


@pytest.mark.parametrize("target", ["dev", "prod"])
def test_python_defined_resources_match_the_bundle_schema(target: str, bundle_validator: Validator) -> None:
    violations = schema_violations(python_defined(target), bundle_validator)
    assert not violations, "\n".join(map(str, violations))


def test_bundle_includes_exactly_the_resource_files() -> None:
    bundle = load_yaml(BUNDLE_ROOT_FILE)
    assert bundle["bundle"]["name"] == "offsetlake"
    assert bundle["include"] == ["resources/*.yml"]
    assert bundle["python"] == {
        "venv_path": ".venv",
        "resources": ["resources:load_resources"],
        "mutators": ["resources.pipeline_settings:pass_pipeline_settings"],
    }
    for target in ("dev", "prod"):
        assert {kind: set(group) for kind, group in python_defined(target)["resources"].items()} == {
            "jobs": {JOB_KEY}
        }
    assert [path.name for path in bundle_files()[1:]] == [
        "offsetlake.alert.yml",
        "offsetlake.dashboard.yml",
        "offsetlake.pipeline.yml",
        "offsetlake.schema.yml",
        "offsetlake.secrets.yml",
        "offsetlake.sync.job.yml",
    ]


_DELETE = object()
_JOB = ["resources", "jobs", JOB_KEY]
_PIPELINE = ["resources", "pipelines", PIPELINE_KEY]
_JOB_PATH = f"$.resources.jobs.{JOB_KEY}"


@pytest.mark.parametrize(
    ("source", "field", "value", "expected"),
    [
        pytest.param(
            BUNDLE_ROOT_FILE, ["resource"], {}, ("$", "'resource' was unexpected"), id="unknown-top-key",
        ),
        pytest.param(
            BUNDLE_ROOT_FILE, ["targets", "dev", "default"], "yes", ("$.targets.dev.default", "boolean"),
            id="bool-as-string",
        ),
        pytest.param(
            FAILOVER_DOCUMENT, [*_JOB, "max_concurrent_runs"], "one",
            (f"{_JOB_PATH}.max_concurrent_runs", "integer"), id="int-as-string",
        ),
        pytest.param(
            FAILOVER_DOCUMENT, [*_JOB, "tasks", 1, "task_key"], _DELETE,
            (f"{_JOB_PATH}.tasks[1]", "'task_key' is a required property"), id="task-without-key",
        ),
        pytest.param(
            SYNC_JOB_FILE, ["resources", "jobs", SYNC_JOB_KEY, "schedule", "pause_status"], "SOMETIMES",
            (f"$.resources.jobs.{SYNC_JOB_KEY}.schedule.pause_status", "one of UNPAUSED, PAUSED"),
            id="bad-enum",
        ),
        pytest.param(
            PIPELINE_FILE, [*_PIPELINE, "librarys"], [],
            (f"$.resources.pipelines.{PIPELINE_KEY}", "'librarys' was unexpected"),
            id="unknown-pipeline-field",
        ),
    ],
)  # fmt: skip
def test_broken_copy_fails_with_the_path_of_the_error(
    source: Path | dict[str, Any],
    field: list[str | int],
    value: Any,
    expected: tuple[str, str],
    bundle_validator: Validator,
) -> None:
    broken = copy.deepcopy(source if isinstance(source, dict) else load_yaml(source))
    parent: Any = broken
    for step in field[:-1]:
        parent = parent[step]
    if value is _DELETE:
        del parent[field[-1]]
    else:
        parent[field[-1]] = value
    json_path, message_part = expected
    violations = schema_violations(broken, bundle_validator)
    assert [(v.json_path, message_part in v.message) for v in violations] == [(json_path, True)], violations


def test_interpolation_is_accepted_where_the_schema_wants_another_type(bundle_validator: Validator) -> None:
    """The ${...} patterns use \\p{L}: a Python `re` evaluation would reject (or crash on) them."""
    document = copy.deepcopy(FAILOVER_DOCUMENT)
    document["resources"]["jobs"][JOB_KEY]["max_concurrent_runs"] = "${var.max_runs}"
    document["resources"]["jobs"][JOB_KEY]["tasks"][1]["pipeline_task"]["full_refresh"] = (
        "${var.full_refresh}"
    )
    assert schema_violations(document, bundle_validator) == []


# --- the job -----------------------------------------------------------------------------------


def test_failover_job_refreshes_then_applies_whatever_the_refresh_did(
    job_settings: dict[str, Any], project: dict[str, Any], pipeline_settings: dict[str, Any]
) -> None:
    job = Job.from_dict(job_settings)
    pause, refresh, apply, report = job.tasks
    assert (pause.task_key, refresh.task_key, apply.task_key, report.task_key) == (
        "pause_sync",
        "refresh_pipeline",
        "apply_offsets",
        "report_outcome",
    )
    assert pause.depends_on == []
    # The failover runs whatever the pause did; a failed pause fails the run through the report.
    assert [dependency.task_key for dependency in refresh.depends_on] == ["pause_sync"]
    assert refresh.run_if == RunIf.ALL_DONE
    assert [dependency.task_key for dependency in apply.depends_on] == ["refresh_pipeline"]
    # The failover must not depend on the refresh succeeding (a dead source may fail it).
    assert apply.run_if == RunIf.ALL_DONE
    # ...but a failed refresh must still fail the run: the leaf runs when anything failed.
    assert report.run_if == RunIf.AT_LEAST_ONE_FAILED
    assert job.max_concurrent_runs == 1
    assert job.schedule is None, "failover is run by an operator, never on a schedule"
    assert refresh.pipeline_task is not None
    assert str(refresh.pipeline_task.pipeline_id) == f"${{resources.pipelines.{PIPELINE_KEY}.id}}"
    assert refresh.pipeline_task.full_refresh is False
    assert refresh.timeout_seconds and apply.timeout_seconds and report.timeout_seconds

    for task in (pause, apply, report):
        wheel_task = task.python_wheel_task
        assert wheel_task is not None
        assert wheel_task.package_name == project["name"]
        # python_wheel_task looks the entry point up in the wheel's metadata: it must be a script
        # that raises SystemExit on failure (tests/unit/test_entry_point.py).
        assert project["scripts"][wheel_task.entry_point] == "offsetlake.cli.main:entry_point"
    schema = "${resources.schemas.offsetlake_schema.name}"
    # The pipeline's whole configuration, as declared (tests/unit/test_bundle_settings.py).
    configuration = pipeline_settings["configuration"].items()
    pipeline_pairs = [flag for key, value in configuration for flag in ("--set", f"{key}={value}")]
    assert [str(parameter) for parameter in apply.python_wheel_task.parameters] == [  # type: ignore[union-attr]
        "{{job.parameters.mode}}",
        "--as-of={{job.parameters.as_of}}",
        "--groups={{job.parameters.groups}}",
        "--active-group-policy={{job.parameters.active_group_policy}}",
        "--allow-rewind={{job.parameters.allow_rewind}}",
        "--max-age={{job.parameters.max_age}}",
        "--as-failover",
        "--checkpoint-tail=true",
        *pipeline_pairs,
        "--catalog", "${resources.schemas.offsetlake_schema.catalog_name}",
        "--schema", schema,
        "--target-bootstrap-servers", "${var.target_bootstrap_servers}",
        "--secret-scope", "${resources.secret_scopes.offsetlake_kafka.name}",
        "--method-precedence", "${var.method_precedence}",
    ]  # fmt: skip


def test_failover_job_parameters_are_the_operators_choices_with_safe_defaults(
    job_settings: dict[str, Any],
) -> None:
    parameters = {p.name: p.default for p in Job.from_dict(job_settings).parameters}
    assert parameters == {
        "mode": "plan",
        "as_of": "",
        "groups": ".*",
        "active_group_policy": "fail",
        "allow_rewind": "false",
        "max_age": "1h",
    }
    parser = build_parser()
    (apply,) = [task for task in job_settings["tasks"] if task["task_key"] == "apply_offsets"]
    arguments = [
        re.sub(r"\{\{job\.parameters\.(\w+)\}\}", lambda m: str(parameters[m.group(1)]), parameter)
        for parameter in apply["python_wheel_task"]["parameters"][:6]
    ]
    parsed = parser.parse_args(arguments)
    assert (parsed.command, parsed.as_of, parsed.allow_rewind, str(parsed.active_group_policy)) == (
        "plan",
        None,
        False,
        "fail",
    )


def test_sync_job_keeps_standby_groups_current_on_a_schedule(project: dict[str, Any]) -> None:
    settings = load_yaml(SYNC_JOB_FILE)["resources"]["jobs"][SYNC_JOB_KEY]
    job = Job.from_dict(settings)
    _, sync = job.tasks
    assert [d.task_key for d in sync.depends_on] == ["refresh_pipeline"]
    assert sync.run_if in (None, RunIf.ALL_SUCCESS)  # a routine sync applies only fresh offsets
    assert job.schedule is not None
    assert str(job.schedule.pause_status) == "${var.sync_schedule}"
    assert job.max_concurrent_runs == 1
    parameters = [str(p) for p in sync.python_wheel_task.parameters]  # type: ignore[union-attr]
    assert parameters[:3] == ["${var.sync_mode}", "--active-group-policy", "skip"]
    assert project["scripts"][sync.python_wheel_task.entry_point] == "offsetlake.cli.main:entry_point"  # type: ignore[union-attr]


def _dev_job_and_prod_paging(key: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A job as dev deploys it, and the webhook_notifications prod adds (the sync job's in the prod
    target; the failover job, defined in Python, adds its own for prod)."""
    if key == JOB_KEY:
        prod = python_defined("prod")["resources"]["jobs"][key]
        return FAILOVER_DOCUMENT["resources"]["jobs"][key], prod["webhook_notifications"]
    prod_jobs = load_yaml(BUNDLE_ROOT_FILE)["targets"]["prod"]["resources"]["jobs"]
    return load_yaml(SYNC_JOB_FILE)["resources"]["jobs"][key], prod_jobs[key]["webhook_notifications"]


@pytest.mark.parametrize("key", [JOB_KEY, SYNC_JOB_KEY])
def test_jobs_signal_failure_and_never_alert_for_skipped_runs(key: str) -> None:
    settings, prod_paging = _dev_job_and_prod_paging(key)
    job = Job.from_dict(settings)
    assert str(job.email_notifications.on_failure) == "${var.notification_emails}"  # type: ignore[union-attr]
    # Paging is prod's: dev has no destination to page.
    assert "webhook_notifications" not in settings
    assert prod_paging["on_failure"] == "${var.notification_destinations}"
    assert job.notification_settings.no_alert_for_skipped_runs is True  # type: ignore[union-attr]
    assert job.timeout_seconds and job.timeout_seconds > 0
    (rule,) = job.health.rules  # type: ignore[union-attr]
    assert (str(rule.metric), str(rule.op)) == (
        "JobsHealthMetric.RUN_DURATION_SECONDS",
        "JobsHealthOperator.GREATER_THAN",
    )
    (apply,) = [task for task in job.tasks if task.task_key in ("apply_offsets", "sync_standby_groups")]
    assert apply.max_retries and apply.max_retries > 0, "a rerun of apply converges: retry it"


def test_pipeline_failure_is_notified(pipeline_settings: dict[str, Any]) -> None:
    (notification,) = Pipeline.from_dict(pipeline_settings).notifications
    assert str(notification.email_recipients) == "${var.notification_emails}"
    assert {"on-update-failure", "on-flow-failure"} <= set(map(str, notification.alerts))


def test_apply_task_runs_on_the_built_wheel(job_settings: dict[str, Any]) -> None:
    job = Job.from_dict(job_settings)
    apply = next(task for task in job.tasks if task.task_key == "apply_offsets")
    (environment,) = [env for env in job.environments if env.environment_key == apply.environment_key]
    assert environment.spec is not None
    (wheel,) = environment.spec.dependencies
    # Relative to the bundle root for a job defined in Python (the CLI gives Python's output the
    # root as its location: bundle/config/mutator/python/python_mutator.go loadOutput); the
    # artifact's `pip wheel --wheel-dir dist` writes to dist/.
    assert (REPO_ROOT / str(wheel)).parent.resolve() == REPO_ROOT / "dist"
    (artifact,) = load_yaml(BUNDLE_ROOT_FILE)["artifacts"].values()
    assert artifact["type"] == "whl"
    assert (REPO_ROOT / artifact["path"]).resolve() == REPO_ROOT


# --- the pipeline ------------------------------------------------------------------------------


def test_pipeline_loads_the_transformation_files(pipeline_settings: dict[str, Any]) -> None:
    pipeline = Pipeline.from_dict(pipeline_settings)
    (library,) = pipeline.libraries
    assert library.glob is not None
    include = str(library.glob.include)
    assert include.endswith("/**")
    assert (RESOURCES_DIR / include.removesuffix("/**")).resolve() == TRANSFORMATIONS_DIR
    assert (RESOURCES_DIR / str(pipeline.root_path)).resolve() == REPO_ROOT / "src"
    assert str(pipeline.catalog) == "${resources.schemas.offsetlake_schema.catalog_name}"
    assert str(pipeline.schema) == "${resources.schemas.offsetlake_schema.name}"
    assert pipeline.serverless is True
    assert pipeline.environment is not None
    assert [str(dep) for dep in pipeline.environment.dependencies] == ["--editable ${workspace.file_path}"]


def test_transformations_directory_exists() -> None:
    assert TRANSFORMATIONS_DIR.is_dir(), f"{TRANSFORMATIONS_DIR} is missing: the pipeline glob finds nothing"
    assert any(TRANSFORMATIONS_DIR.rglob("*.py")), f"no transformation files under {TRANSFORMATIONS_DIR}"


def test_pipeline_configuration_has_exactly_the_documented_keys(
    pipeline_settings: dict[str, Any], documented_settings: dict[str, str | None]
) -> None:
    configured = set(Pipeline.from_dict(pipeline_settings).configuration)
    documented = set(documented_settings)
    assert configured == documented, (
        f"missing from the bundle: {sorted(documented - configured)}; "
        f"undocumented in docs/architecture.md: {sorted(configured - documented)}"
    )


def test_pipeline_configuration_defaults_match_the_documented_defaults(
    pipeline_settings: dict[str, Any],
    documented_settings: dict[str, str | None],
    variables: dict[str, dict[str, Any]],
) -> None:
    checked = 0
    for key, value in pipeline_settings["configuration"].items():
        (name,) = variable_references(value) or {None}
        if name is None or documented_settings[key] is None:
            continue
        assert variables[name]["default"] == documented_settings[key], f"{key} via ${{var.{name}}}"
        checked += 1
    assert checked >= 5, "the documented-default comparison silently covered almost nothing"


def test_pipeline_reads_kafka_with_the_builtin_format(pipeline_settings: dict[str, Any]) -> None:
    assert pipeline_settings["configuration"]["offsetlake.kafka.reader"] == "builtin"


def test_bronze_is_one_flow_per_source_and_refuses_a_full_refresh(pipeline_settings: dict[str, Any]) -> None:
    from offsetlake.contract.settings import PipelineSettings

    configuration = pipeline_settings["configuration"]
    assert configuration["offsetlake.bronze.flows"] == "per_source"
    settings = PipelineSettings.from_mapping(
        {"offsetlake.target.bootstrap.servers": "t:1", "offsetlake.sources": "a=s:1"}
        | {"offsetlake.bronze.flows": configuration["offsetlake.bronze.flows"]}
    )
    assert settings.bronze_table_properties == {"pipelines.reset.allowed": "false"}


# --- targets: dev cannot touch production ---------------------------------------------------------


def test_dev_and_prod_sync_only_plans_until_a_target_says_apply() -> None:
    bundle = load_yaml(BUNDLE_ROOT_FILE)
    assert bundle["variables"]["sync_mode"]["default"] == "plan"
    assert bundle["targets"]["dev"]["variables"]["sync_mode"] == "plan"
    assert bundle["targets"]["prod"]["variables"]["sync_mode"] == "plan"  # going live is a reviewed change
    assert build_parser().parse_args(["plan"]).command == "plan"


def test_dev_and_prod_have_their_own_catalog_and_secret_scope() -> None:
    targets = load_yaml(BUNDLE_ROOT_FILE)["targets"]
    names = ("catalog", "secret_scope")
    dev, prod = ({name: targets[t]["variables"][name] for name in names} for t in ("dev", "prod"))
    assert all(dev[name] != prod[name] for name in names), (dev, prod)


def test_prod_root_path_is_not_writable_by_every_workspace_user() -> None:
    root_path = load_yaml(BUNDLE_ROOT_FILE)["targets"]["prod"]["workspace"]["root_path"]
    assert not root_path.startswith("/Workspace/Shared")
    assert root_path.startswith("/Workspace/Users/${var.service_principal}/")


def test_prod_protects_tables_from_bundle_destroy() -> None:
    resources = load_yaml(BUNDLE_ROOT_FILE)["targets"]["prod"]["resources"]
    assert resources["pipelines"][PIPELINE_KEY]["lifecycle"]["prevent_destroy"] is True
    assert resources["schemas"]["offsetlake_schema"]["lifecycle"]["prevent_destroy"] is True


def test_schema_secret_scope_dashboard_and_alert_load_as_bundle_resources() -> None:
    from databricks.bundles.alerts import Alert
    from databricks.bundles.dashboards import Dashboard
    from databricks.bundles.schemas import Schema
    from databricks.bundles.secret_scopes import SecretScope

    schema = Schema.from_dict(
        load_yaml(RESOURCES_DIR / "offsetlake.schema.yml")["resources"]["schemas"]["offsetlake_schema"]
    )
    assert schema.comment and str(schema.name) == "${var.schema}"
    scope = SecretScope.from_dict(
        load_yaml(RESOURCES_DIR / "offsetlake.secrets.yml")["resources"]["secret_scopes"]["offsetlake_kafka"]
    )
    assert str(scope.name) == "${var.secret_scope}"
    prod_scope = load_yaml(BUNDLE_ROOT_FILE)["targets"]["prod"]["resources"]["secret_scopes"][
        "offsetlake_kafka"
    ]
    assert {p["level"] for p in SecretScope.from_dict(prod_scope).as_dict()["permissions"]} == {
        "READ",
        "MANAGE",
    }
    dashboard = Dashboard.from_dict(
        load_yaml(RESOURCES_DIR / "offsetlake.dashboard.yml")["resources"]["dashboards"][
            "offsetlake_freshness"
        ]
    )
    assert (str(dashboard.dataset_catalog), str(dashboard.dataset_schema)) == (
        "${resources.schemas.offsetlake_schema.catalog_name}",
        "${resources.schemas.offsetlake_schema.name}",
    )
    assert (RESOURCES_DIR / str(dashboard.file_path)).is_file()
    assert str(dashboard.warehouse_id) == "${var.warehouse_id}"
    assert "lookup" in load_yaml(BUNDLE_ROOT_FILE)["variables"]["warehouse_id"]
    alert = Alert.from_dict(
        load_yaml(RESOURCES_DIR / "offsetlake.alert.yml")["resources"]["alerts"][
            "offsetlake_stale_translations"
        ]
    )
    assert "latest_offsets" in str(alert.query_text)


def test_dashboard_datasets_name_tables_without_catalog_or_schema() -> None:
    """dataset_catalog/dataset_schema place them per target; a qualified name would escape that."""
    document = json.loads((REPO_ROOT / "src" / "dashboards" / "offsetlake_freshness.lvdash.json").read_text())
    queries = {dataset["name"]: " ".join(dataset["queryLines"]) for dataset in document["datasets"]}
    assert {"translation_age", "methods_disagree", "quarantine_by_reason", "apply_outcomes"} <= set(queries)
    assert not [name for name, query in queries.items() if "offsetlake." in query or "${" in query]
    widget_datasets = {
        query["query"]["datasetName"]
        for page in document["pages"]
        for item in page["layout"]
        for query in item["widget"]["queries"]
    }
    assert widget_datasets == set(queries)


def test_sync_excludes_tests_benchmarks_and_fixtures() -> None:
    exclude = load_yaml(BUNDLE_ROOT_FILE)["sync"]["exclude"]
    assert {"tests/**", "benchmarks/**", "fixtures/**"} <= set(exclude)


# --- variables and docs --------------------------------------------------------------------------


def test_every_variable_is_declared_described_and_used(variables: dict[str, dict[str, Any]]) -> None:
    documents = [load_yaml(path) for path in bundle_files()] + [python_defined(t) for t in ("dev", "prod")]
    referenced = set().union(*(variable_references(document) for document in documents))
    assert referenced - set(variables) == set(), "referenced but not declared"
    assert set(variables) - referenced == set(), "declared but never used"
    assert [name for name, spec in variables.items() if not str(spec.get("description", "")).strip()] == []
    for name, target in load_yaml(BUNDLE_ROOT_FILE)["targets"].items():
        assert set(target.get("variables", {})) <= set(variables), (
            f"target {name} overrides unknown variables"
        )


def test_variables_without_defaults_are_set_at_deploy_time(variables: dict[str, dict[str, Any]]) -> None:
    """The cluster addresses and who is told; dev sets all but the addresses, prod its principal."""
    required = {name for name, spec in variables.items() if "default" not in spec and "lookup" not in spec}
    assert required == {
        "source_clusters",
        "target_bootstrap_servers",
        "service_principal",
        "notification_emails",
        "notification_destinations",
        "alert_subscriptions",
        "job_permissions",
        "dashboard_permissions",
    }
    targets = load_yaml(BUNDLE_ROOT_FILE)["targets"]
    assert required - set(targets["dev"]["variables"]) == {"source_clusters", "target_bootstrap_servers"}
    assert "service_principal" in targets["prod"]["variables"]  # committed: one prod copy


def test_deploy_doc_names_every_variable(variables: dict[str, dict[str, Any]]) -> None:
    deploy_doc = (REPO_ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    assert [name for name in variables if f"`{name}`" not in deploy_doc] == []


# --- the set-up the docs describe (issue 47) ------------------------------------------------------

CONSTRAINTS = dict(
    line.split("==", 1)
    for line in (REPO_ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
    if "==" in line and not line.startswith("#")
)
DEPLOY_DOC = (REPO_ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")


def test_the_python_range_is_the_one_bootstrap_and_the_docs_state(project: dict[str, Any]) -> None:
    from packaging.specifiers import SpecifierSet

    accepted = SpecifierSet(project["requires-python"])
    minors = [minor for minor in range(8, 20) if f"3.{minor}.0" in accepted]
    assert minors == [11, 12, 13]  # 3.13: every compiled pin has a cp313 wheel (pyproject.toml)
    bootstrap = (REPO_ROOT / "scripts" / "bootstrap.sh").read_text(encoding="utf-8")
    ((low, high),) = re.findall(r"\(3, (\d+)\) <= sys\.version_info\[:2\] < \(3, (\d+)\)", bootstrap)
    assert list(range(int(low), int(high))) == minors
    (candidates,) = re.findall(r"for candidate in ([^;]+);", bootstrap)
    assert {f"python3.{minor}" for minor in minors} <= set(candidates.split())
    assert "Python **3.11, 3.12 or 3.13**" in DEPLOY_DOC
    assert "Python 3.11 to 3.13" in README


def test_the_cli_floor_is_what_the_pinned_databricks_bundles_asks(project: dict[str, Any]) -> None:
    """databricks-bundles 1.22.1's description: "Install the Databricks CLI, version 1.22.1 or above"."""
    pinned = CONSTRAINTS["databricks-bundles"]
    assert project["optional-dependencies"]["deploy"] == [f"databricks-bundles=={pinned}"]
    assert load_yaml(BUNDLE_ROOT_FILE)["bundle"]["databricks_cli_version"] == f">= {pinned}"
    assert f"Databricks CLI **{pinned} or newer**" in DEPLOY_DOC


def test_the_deploy_extra_is_what_loading_the_resources_imports(project: dict[str, Any]) -> None:
    """The CLI's .venv needs the project and the `deploy` extra only (no Spark, no test toolchain):
    every distribution that loading resources/ imports is one of them or their dependencies."""
    script = (
        "import json, sys; from importlib.metadata import packages_distributions; "
        "before = set(sys.modules); "
        "from tests.bundle_resolver import python_resources_of_target as load; "
        f"load('prod', {DEPLOY_VALUES['prod']!r}); "
        "owners = packages_distributions(); "
        "tops = {m.split('.')[0] for m in set(sys.modules) - before}; "
        "print(json.dumps(sorted({d for top in tops for d in owners.get(top, [])})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], check=False, cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    imported = {name.lower() for name in json.loads(done.stdout)}
    declared = [*project["dependencies"], *project["optional-dependencies"]["deploy"]]
    allowed = {re.split(r"[<>=\[ ]", requirement, maxsplit=1)[0].lower() for requirement in declared}
    assert "databricks-bundles" in imported and "pyyaml" in imported
    assert imported - {"offsetlake"} <= allowed, imported - allowed


def test_the_quick_start_makes_the_venv_the_bundle_needs() -> None:
    start = README.split("## Deploying to Databricks", 1)[1]
    venv = start.index("python3 -m venv .venv && .venv/bin/pip install -c constraints.txt -e '.[deploy]'")
    assert venv < start.index("databricks bundle validate -t dev")
    assert "-e '.[deploy]'" in DEPLOY_DOC


def test_architecture_table_parsing_handles_sibling_keys_and_escaped_pipes() -> None:
    markdown = (
        "## Pipeline configuration keys\n"
        "| key | default | meaning |\n|---|---|---|\n"
        "| `a.sources` | (required) | x |\n"
        "| `a.groups.include` / `.exclude` | `.*` / `x-.*\\|y-.*` | filter |\n"
        "\n## Tables\n| `not.a.key` | `1` | y |\n"
    )
    assert documented_pipeline_settings(markdown) == {
        "a.sources": None,
        "a.groups.include": ".*",
        "a.groups.exclude": "x-.*|y-.*",
    }


# --- no credentials --------------------------------------------------------------------------------


@pytest.mark.parametrize("path", bundle_files(), ids=lambda path: path.relative_to(REPO_ROOT).as_posix())
def test_bundle_file_holds_no_credentials(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert credential_findings(load_yaml(path), text) == []


def test_python_defined_resources_hold_no_credentials() -> None:
    for path in sorted(RESOURCES_DIR.glob("*.py")):
        assert credential_findings({}, path.read_text(encoding="utf-8")) == [], path
    for target in ("dev", "prod"):
        assert credential_findings(python_defined(target), "") == [], target


@pytest.mark.parametrize(
    "yaml_text",
    [
        "configuration:\n  kafka.sasl.jaas.config: x\n",
        "configuration:\n  offsetlake.x: 'org.apache.kafka.common.security.plain.PlainLoginModule'\n",
        "variables:\n  kafka_password:\n    default: hunter2\n",
        "variables:\n  token:\n    default: dapi0123456789abcdef0123456789abcdef\n",
        "# -----BEGIN PRIVATE KEY-----\nbundle:\n  name: x\n",
    ],
    ids=["jaas-key", "jaas-value", "password-key", "databricks-token", "key-in-comment"],
)
def test_credential_scan_catches_planted_credentials(yaml_text: str) -> None:
    assert credential_findings(yaml.safe_load(yaml_text), yaml_text) != []


def test_credential_scan_accepts_a_secret_scope_name() -> None:
    document = {
        "variables": {"secret_scope": {"default": "offsetlake"}},
        "c": {"offsetlake.secret_scope": "x"},
    }
    assert credential_findings(document, "") == []
