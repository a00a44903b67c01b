"""The bundle as the Databricks CLI resolves it for dev and prod (tests/bundle_resolver.py).

The checks a first deployment depends on: every consumer of the schema names the schema the
pipeline writes (development mode prefixes schema names, and only `${resources.schemas.…}`
follows), every reference resolves, prod deploys one copy whoever runs the deploy, the sync
schedule's pause status is the target's, and nothing a resource needs is left empty.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from offsetlake.cli.main import build_parser
from tests.bundle_resolver import (
    REPO_ROOT,
    BundleResolutionError,
    Identity,
    load_configuration,
    resolve_bundle,
    resources_named,
    target_mode_errors,
)

JANE = Identity("jane.doe@example.com")
JOHN = Identity("john.roe@example.com")
DEPLOYER_SP = Identity("6f1c1c7e-4f0b-4e8e-9d55-0c7b9b1d2a11", display_name="offsetlake-ci")
SERVICE_PRINCIPAL = "9b2d8a40-1b7e-4c65-a0f3-4d2e8c6f7a19"

REQUIRED_EVERYWHERE = {
    "source_clusters": "primary=kafka-a-1:9092",
    "target_bootstrap_servers": "kafka-b-1:9092",
}
PROD_OVERRIDES: dict[str, Any] = REQUIRED_EVERYWHERE | {
    "service_principal": SERVICE_PRINCIPAL,
    "notification_emails": ["oncall@example.com"],
    "notification_destinations": [{"id": "3c1f0b8e-pagerduty"}],
    "alert_subscriptions": [{"destination_id": "3c1f0b8e-pagerduty"}],
}
TABLE_REFERENCE = re.compile(r"\bFROM\s+([\w.`]+)", re.IGNORECASE)


def resolve(target: str, identity: Identity = JANE, **overrides: Any) -> dict[str, Any]:
    values = REQUIRED_EVERYWHERE if target == "dev" else PROD_OVERRIDES
    return resolve_bundle(target, identity=identity, overrides_file=values | overrides)


@pytest.fixture(scope="module", params=["dev", "prod"])
def resolved(request: pytest.FixtureRequest) -> dict[str, Any]:
    return resolve(request.param)


def schema_of(resolved: dict[str, Any]) -> tuple[str, str]:
    schema = resolved["resources"]["schemas"]["offsetlake_schema"]
    return schema["catalog_name"], schema["name"]


def wheel_option(task: dict[str, Any], option: str) -> str:
    parameters = task["python_wheel_task"]["parameters"]
    return parameters[parameters.index(option) + 1]


def wheel_tasks(resolved: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        f"{key}.{task['task_key']}": task
        for key, job in resources_named(resolved, "jobs.*").items()
        for task in job["tasks"]
        if "python_wheel_task" in task and task["python_wheel_task"]["parameters"][0] != "job-report"
    }


# --- one schema for every consumer ------------------------------------------------------------------


def test_development_mode_prefixes_the_schema_and_nothing_names_the_unprefixed_one() -> None:
    catalog, schema = schema_of(resolve("dev"))
    assert (catalog, schema) == ("dev", "dev_jane_doe_offsetlake")
    assert schema_of(resolve("prod")) == ("main", "offsetlake")


def test_every_consumer_names_the_schema_the_pipeline_writes(resolved: dict[str, Any]) -> None:
    catalog, schema = schema_of(resolved)
    pipeline = resolved["resources"]["pipelines"]["offsetlake_pipeline"]
    assert (pipeline["catalog"], pipeline["schema"]) == (catalog, schema)
    tasks = wheel_tasks(resolved)
    assert set(tasks) == {
        "jobs.offsetlake_failover.apply_offsets",
        "jobs.offsetlake_sync.sync_standby_groups",
    }
    for name, task in tasks.items():
        assert (wheel_option(task, "--catalog"), wheel_option(task, "--schema")) == (catalog, schema), name
    (dashboard,) = resources_named(resolved, "dashboards.*").values()
    assert (dashboard["dataset_catalog"], dashboard["dataset_schema"]) == (catalog, schema)
    alerts = resources_named(resolved, "alerts.*")
    assert len(alerts) == 2
    for name, alert in alerts.items():
        (table,) = TABLE_REFERENCE.findall(alert["query_text"])
        assert table.rsplit(".", 1)[0] == f"{catalog}.{schema}", name
    assert (pipeline["event_log"]["catalog"], pipeline["event_log"]["schema"]) == (catalog, schema)


def test_every_consumer_names_the_secret_scope_the_bundle_creates(resolved: dict[str, Any]) -> None:
    scope = resolved["resources"]["secret_scopes"]["offsetlake_kafka"]["name"]
    configuration = resolved["resources"]["pipelines"]["offsetlake_pipeline"]["configuration"]
    assert configuration["offsetlake.secret_scope"] == scope
    for name, task in wheel_tasks(resolved).items():
        assert wheel_option(task, "--secret-scope") == scope, name


def test_no_resource_names_the_schema_variable() -> None:
    """`${var.schema}` is the unprefixed name: only the schema resource itself may use it."""
    resources = load_configuration()["resources"]
    offenders = [
        f"{kind}.{key}"
        for kind, group in resources.items()
        for key, resource in group.items()
        if "${var.schema}" in str(resource) and (kind, key) != ("schemas", "offsetlake_schema")
    ]
    assert offenders == []


# --- every reference resolves, nothing required is empty -------------------------------------------


def empty_values(node: Any, path: str = "") -> list[str]:
    if isinstance(node, dict):
        return [found for key, value in node.items() for found in empty_values(value, f"{path}.{key}")]
    if isinstance(node, list):
        if not node:
            return [path]
        return [
            found for index, value in enumerate(node) for found in empty_values(value, f"{path}[{index}]")
        ]
    return []


def test_nothing_required_is_left_empty(resolved: dict[str, Any]) -> None:
    assert empty_values(resolved["resources"]) == []
    assert empty_values(resolved.get("permissions", ["none set"])) == []
    configuration = resolved["resources"]["pipelines"]["offsetlake_pipeline"]["configuration"]
    assert configuration["offsetlake.target.bootstrap.servers"] and configuration["offsetlake.sources"]


def test_an_empty_recipient_list_given_for_prod_is_caught() -> None:
    assert empty_values(resolve("prod", notification_destinations=[])["resources"]) == [
        ".jobs.offsetlake_failover.webhook_notifications.on_failure",
        ".jobs.offsetlake_failover.webhook_notifications.on_duration_warning_threshold_exceeded",
        ".jobs.offsetlake_sync.webhook_notifications.on_failure",
        ".jobs.offsetlake_sync.webhook_notifications.on_duration_warning_threshold_exceeded",
    ]


@pytest.mark.parametrize("missing", ["service_principal", "notification_emails", "target_bootstrap_servers"])
def test_prod_refuses_to_resolve_without_a_required_value(missing: str) -> None:
    values = {k: v for k, v in PROD_OVERRIDES.items() if k != missing}
    with pytest.raises(BundleResolutionError, match=f"no value assigned to required variable {missing}"):
        resolve_bundle("prod", identity=DEPLOYER_SP, overrides_file=values)


def test_dev_needs_only_the_two_cluster_addresses() -> None:
    resolved = resolve_bundle("dev", identity=JANE, overrides_file=REQUIRED_EVERYWHERE)
    assert resolved["resources"]["jobs"]["offsetlake_sync"]["email_notifications"]["on_failure"] == [
        "jane.doe@example.com"
    ]


@pytest.mark.parametrize("target", ["dev", "prod"])
def test_the_cli_target_mode_checks_pass(target: str) -> None:
    raw_target = load_configuration()["targets"][target]
    assert target_mode_errors(resolve(target), raw_target) == []


# --- prod: one copy, run as the service principal, grants as code ------------------------------------


def test_prod_is_one_copy_whoever_deploys() -> None:
    raw = load_configuration()["targets"]["prod"]["workspace"]["root_path"]
    assert "current_user" not in raw
    paths = {resolve("prod", identity=who)["workspace"]["root_path"] for who in (JANE, JOHN, DEPLOYER_SP)}
    assert paths == {f"/Workspace/Users/{SERVICE_PRINCIPAL}/.bundle/offsetlake/prod"}


def test_prod_runs_everything_as_the_service_principal() -> None:
    resolved = resolve("prod", identity=DEPLOYER_SP)
    for name in ("jobs.*", "pipelines.*", "alerts.*"):
        for key, resource in resources_named(resolved, name).items():
            assert resource["run_as"] == {"service_principal_name": SERVICE_PRINCIPAL}, key


def test_prod_grants_what_pipeline_apply_operators_and_readers_need() -> None:
    grants = {
        g["principal"]: set(g["privileges"])
        for g in resolve("prod")["resources"]["schemas"]["offsetlake_schema"]["grants"]
    }
    assert grants[SERVICE_PRINCIPAL] >= {
        "USE_SCHEMA",
        "CREATE_TABLE",
        "CREATE_MATERIALIZED_VIEW",
        "MODIFY",
        "SELECT",
    }
    assert grants["offsetlake-operators"] >= {"USE_SCHEMA", "SELECT"}
    assert grants["offsetlake-readers"] == {"USE_SCHEMA", "SELECT"}
    scope = resolve("prod")["resources"]["secret_scopes"]["offsetlake_kafka"]
    assert {"level": "READ", "service_principal_name": SERVICE_PRINCIPAL} in scope["permissions"]


def test_prod_protects_its_tables_and_secrets_from_destroy() -> None:
    resources = resolve("prod")["resources"]
    for kind, key in (("pipelines", "offsetlake_pipeline"), ("schemas", "offsetlake_schema"),
                      ("secret_scopes", "offsetlake_kafka")):  # fmt: skip
        assert resources[kind][key]["lifecycle"] == {"prevent_destroy": True}, key
    assert resources["pipelines"]["offsetlake_pipeline"]["cascade_on_destroy"] is False


def test_bundle_pins_a_cli_floor_an_engine_and_an_identity() -> None:
    bundle = load_configuration()["bundle"]
    assert re.fullmatch(r">= \d+\.\d+\.\d+", bundle["databricks_cli_version"])
    assert bundle["engine"] == "direct"  # the engine that honours cascade_on_destroy
    assert re.fullmatch(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", bundle["uuid"])


# --- schedules and modes come from the target --------------------------------------------------------


def test_sync_schedule_pause_status_is_the_targets() -> None:
    targets = load_configuration()["targets"]
    for target, expected in (("dev", "PAUSED"), ("prod", "UNPAUSED")):
        assert targets[target]["variables"]["sync_schedule"] == expected
        schedule = resolve(target)["resources"]["jobs"]["offsetlake_sync"]["schedule"]
        assert schedule["pause_status"] == expected, target


def test_prod_starts_as_a_dry_run_and_the_failover_plans_unless_told_to_apply() -> None:
    for target in ("dev", "prod"):
        resolved = resolve(target)
        sync = wheel_tasks(resolved)["jobs.offsetlake_sync.sync_standby_groups"]
        assert sync["python_wheel_task"]["parameters"][0] == "plan", target
        failover = resolved["resources"]["jobs"]["offsetlake_failover"]
        assert {p["name"]: p["default"] for p in failover["parameters"]}["mode"] == "plan"


@pytest.mark.parametrize("mode", ["plan", "apply"])
def test_failover_task_parameters_parse_with_the_offsetlake_cli(mode: str) -> None:
    failover = resolve("prod")["resources"]["jobs"]["offsetlake_failover"]
    defaults = {p["name"]: p["default"] for p in failover["parameters"]} | {"mode": mode}
    task = wheel_tasks(resolve("prod"))["jobs.offsetlake_failover.apply_offsets"]
    argv = [
        re.sub(r"\{\{job\.parameters\.(\w+)\}\}", lambda m: str(defaults[m.group(1)]), parameter)
        for parameter in task["python_wheel_task"]["parameters"]
    ]
    parsed = build_parser().parse_args(argv)
    assert (parsed.command, parsed.schema, parsed.catalog) == (mode, "offsetlake", "main")


def test_failover_with_a_mistyped_mode_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["aply"])
    assert exit_info.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_pipeline_channel_is_pinned_per_target() -> None:
    channels = {
        t: resolve(t)["resources"]["pipelines"]["offsetlake_pipeline"]["channel"] for t in ("dev", "prod")
    }
    assert channels == {"dev": "PREVIEW", "prod": "CURRENT"}


def test_failover_fails_the_run_when_its_refresh_failed_but_apply_ran() -> None:
    tasks = {t["task_key"]: t for t in resolve("prod")["resources"]["jobs"]["offsetlake_failover"]["tasks"]}
    leaves = set(tasks) - {d["task_key"] for t in tasks.values() for d in t.get("depends_on", [])}
    assert leaves == {"report_outcome"}
    report = tasks["report_outcome"]
    assert report["run_if"] == "AT_LEAST_ONE_FAILED"
    assert {d["task_key"] for d in report["depends_on"]} == {"refresh_pipeline", "apply_offsets"}
    parameters = report["python_wheel_task"]["parameters"]
    assert parameters == ["job-report", "--run-id={{job.run_id}}", "--task-key=report_outcome"]
    parsed = build_parser().parse_args([p.replace("{{job.run_id}}", "123") for p in parameters])
    assert (parsed.command, str(parsed.run_id), parsed.task_key) == ("job-report", "123", "report_outcome")


# --- docs/deploy.md works as written ------------------------------------------------------------------

DEPLOY_DOC = REPO_ROOT / "docs" / "deploy.md"
OVERRIDES_BLOCK = re.compile(
    r"cat > \.databricks/bundle/(\w+)/variable-overrides\.json <<'JSON'\n(.*?)\nJSON\n", re.DOTALL
)


def documented_overrides() -> dict[str, dict[str, Any]]:
    """The variable-overrides.json each walkthrough step writes, placeholders filled with samples."""
    text = DEPLOY_DOC.read_text(encoding="utf-8")
    samples = {"<service principal application id>": SERVICE_PRINCIPAL}
    found = {}
    for target, written in OVERRIDES_BLOCK.findall(text):
        body = written
        for placeholder, sample in samples.items():
            body = body.replace(placeholder, sample)
        found[target] = json.loads(re.sub(r"<([^>]+)>", r"sample \1", body))
    return found


def test_the_documented_variable_files_resolve_for_dev_and_prod() -> None:
    overrides = documented_overrides()
    assert set(overrides) == {"dev", "prod"}
    for target, identity in (("dev", JANE), ("prod", DEPLOYER_SP)):
        resolved = resolve_bundle(target, identity=identity, overrides_file=overrides[target])
        assert empty_values(resolved["resources"]) == [], target


def test_every_documented_run_names_a_resource_and_its_parameters() -> None:
    text = DEPLOY_DOC.read_text(encoding="utf-8")
    runs = re.findall(r"databricks bundle run -t (\w+) (\w+)((?: --params \S+)?)", text)
    assert len(runs) >= 6
    for target, key, params in runs:
        resolved = resolve(target)
        kinds = [kind for kind in ("jobs", "pipelines") if key in resolved["resources"].get(kind, {})]
        assert kinds, f"bundle run -t {target} {key}: no such job or pipeline"
        if params:
            declared = {p["name"] for p in resolved["resources"]["jobs"][key]["parameters"]}
            given = {pair.split("=", 1)[0] for pair in params.split(" ", 2)[-1].split(",") if "=" in pair}
            assert given <= declared, (key, given - declared)


def test_failover_refreshes_only_what_latest_offsets_and_the_health_rows_are_computed_from() -> None:
    from offsetlake.pipeline.refresh_selection import failover_refresh_selection
    from offsetlake.pipeline.settings import PipelineSettings

    for target in ("dev", "prod"):
        resources = resolve(target)["resources"]
        configuration = resources["pipelines"]["offsetlake_pipeline"]["configuration"]
        settings = PipelineSettings.from_conf({key: str(value) for key, value in configuration.items()}.get)
        tasks = resources["jobs"]["offsetlake_failover"]["tasks"]
        refresh = next(task for task in tasks if task["task_key"] == "refresh_pipeline")["pipeline_task"]
        assert tuple(refresh["refresh_selection"]) == failover_refresh_selection(settings)
        assert "full_refresh_selection" not in refresh
