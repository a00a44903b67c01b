"""The bundle as the Databricks CLI resolves it for dev and prod (tests/bundle_resolver.py).

The checks a first deployment depends on: every consumer of the schema names the schema the
pipeline writes (development mode prefixes schema names, and only `${resources.schemas.…}`
follows), every reference resolves, prod deploys one copy whoever runs the deploy, the sync
schedule's pause status is the target's, and nothing a resource needs is left empty.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from offsetlake.cli.main import build_parser
from tests.bundle_resolver import (
    REPO_ROOT,
    BundleResolutionError,
    DestroyPlan,
    Identity,
    destroy_plan,
    job_runners,
    load_configuration,
    principal_of,
    resolve_bundle,
    resources_named,
    root_folder_acl,
    secret_scope_acls,
    target_mode_errors,
)

JANE = Identity("jane.doe@example.com")
JOHN = Identity("john.roe@example.com")
DEPLOYER_SP = Identity("6f1c1c7e-4f0b-4e8e-9d55-0c7b9b1d2a11", display_name="offsetlake-ci")
# The application ID committed in the prod target (a placeholder until replaced: docs/deploy.md).
SERVICE_PRINCIPAL = load_configuration()["targets"]["prod"]["variables"]["service_principal"]
PROD_DEPLOYER = Identity(SERVICE_PRINCIPAL, display_name="offsetlake-prod")
JANE_OPERATOR = Identity("jane.doe@example.com", groups=("offsetlake-operators",))

REQUIRED_EVERYWHERE = {
    "source_clusters": "primary=kafka-a-1:9092",
    "target_bootstrap_servers": "kafka-b-1:9092",
}
PROD_OVERRIDES: dict[str, Any] = REQUIRED_EVERYWHERE | {
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
        if "python_wheel_task" in task
        and task["python_wheel_task"]["parameters"][0] not in ("job-report", "pause-sync")
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
    """The failover job pages only when destinations are listed (dev lists none); the sync job's
    prod paging still shows an empty list."""
    assert sorted(empty_values(resolve("prod", notification_destinations=[])["resources"])) == sorted(
        [
            ".jobs.offsetlake_sync.webhook_notifications.on_failure",
            ".jobs.offsetlake_sync.webhook_notifications.on_duration_warning_threshold_exceeded",
        ]
    )


@pytest.mark.parametrize("missing", ["notification_emails", "target_bootstrap_servers"])
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
    assert {d["task_key"] for d in report["depends_on"]} == {
        "pause_sync",
        "refresh_pipeline",
        "apply_offsets",
    }
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
    return {
        target: json.loads(re.sub(r"<([^>]+)>", r"sample \1", written))
        for target, written in OVERRIDES_BLOCK.findall(text)
    }


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
    from offsetlake.contract.refresh_selection import failover_refresh_selection
    from offsetlake.contract.settings import PipelineSettings

    for target in ("dev", "prod"):
        resources = resolve(target)["resources"]
        configuration = resources["pipelines"]["offsetlake_pipeline"]["configuration"]
        settings = PipelineSettings.from_conf({key: str(value) for key, value in configuration.items()}.get)
        tasks = resources["jobs"]["offsetlake_failover"]["tasks"]
        refresh = next(task for task in tasks if task["task_key"] == "refresh_pipeline")["pipeline_task"]
        assert tuple(refresh["refresh_selection"]) == failover_refresh_selection(settings)
        assert "full_refresh_selection" not in refresh


def test_the_failovers_refresh_follows_the_graph_the_targets_variables_declare() -> None:
    """Generated with the target's variable values (resources/offsetlake_failover_job.py): with K2K
    mappings and tracing configured, their tables are refreshed too (they exist only then)."""
    k2k = {"mappings_topics": "primary", "k2k_tracing_topics": "primary={topic}"}
    for target in ("dev", "prod"):
        tasks = resolve(target, **k2k)["resources"]["jobs"]["offsetlake_failover"]["tasks"]
        (refresh,) = [task["pipeline_task"] for task in tasks if task["task_key"] == "refresh_pipeline"]
        plain = resolve(target)["resources"]["jobs"]["offsetlake_failover"]["tasks"][1]["pipeline_task"]
        assert set(refresh["refresh_selection"]) - set(plain["refresh_selection"]) == {
            "bronze_mappings",
            "decoded_mappings",
            "silver_mappings",
            "k2k_mapping_conflicts",
            "k2k_tracing_lookups",
        }
        assert "latest_group_offsets" in plain["refresh_selection"]  # the partitions to place


def test_a_target_that_changes_the_python_defined_job_is_refused(tmp_path: Path) -> None:
    """The CLI refuses Python's resource when YAML (a target's override) already made one of its key."""

    def override(configuration: dict[str, Any]) -> None:
        configuration["targets"]["prod"]["resources"]["jobs"]["offsetlake_failover"] = {
            "max_concurrent_runs": 2
        }

    root = copy_of_the_bundle(tmp_path, override)
    with pytest.raises(
        BundleResolutionError, match=r"unexpected updated resources: resources\.jobs\.offsetlake_failover"
    ):
        resolve_bundle("prod", identity=PROD_DEPLOYER, overrides_file=PROD_OVERRIDES, root=root)


# --- permissions: who reads the Kafka credentials (issue 33) -----------------------------------------
# The CLI's permission mutators are modelled in tests/bundle_resolver.py (apply_bundle_permissions.go
# levelsMap, fix_permissions.go, permission_diagnostics.go, secret_scope_fixups.go).

READERS = ("group_name", "offsetlake-readers")
OPERATORS = ("group_name", "offsetlake-operators")


def scope_acls(target: str, identity: Identity, root: Path = REPO_ROOT) -> dict[tuple[str, str], str]:
    values = REQUIRED_EVERYWHERE if target == "dev" else PROD_OVERRIDES
    resolved = resolve_bundle(target, identity=identity, overrides_file=values, root=root)
    return secret_scope_acls(resolved, "offsetlake_kafka")


def test_only_the_service_principal_the_operators_and_the_deployer_can_read_the_kafka_secrets() -> None:
    sp = ("service_principal_name", SERVICE_PRINCIPAL)
    assert scope_acls("prod", PROD_DEPLOYER) == {sp: "MANAGE", OPERATORS: "MANAGE"}
    assert scope_acls("prod", JANE_OPERATOR) == {
        sp: "READ",
        OPERATORS: "MANAGE",
        ("user_name", "jane.doe@example.com"): "MANAGE",
    }
    assert scope_acls("dev", JANE) == {("user_name", "jane.doe@example.com"): "MANAGE"}


def test_readers_reach_the_tables_the_dashboard_and_the_alerts_only() -> None:
    resolved = resolve("prod", identity=PROD_DEPLOYER)
    reached = {
        name: {
            permission["level"]
            for permission in resource.get("permissions") or []
            if principal_of(permission) == READERS
        }
        for name, resource in resources_named(resolved, "*").items()
    }
    assert {name: levels for name, levels in reached.items() if levels} == {
        "dashboards.offsetlake_freshness": {"CAN_READ"},
        "alerts.offsetlake_stale_translations": {"CAN_READ"},
        "alerts.offsetlake_sync_stalled": {"CAN_READ"},
    }
    grants = resolved["resources"]["schemas"]["offsetlake_schema"]["grants"]
    assert [g["privileges"] for g in grants if g["principal"] == READERS[1]] == [["USE_SCHEMA", "SELECT"]]
    for kind in ("jobs", "pipelines"):
        for name, resource in resources_named(resolved, f"{kind}.*").items():
            levels = {principal_of(p): p["level"] for p in resource["permissions"]}
            assert levels == {
                OPERATORS: "CAN_MANAGE",
                ("service_principal_name", SERVICE_PRINCIPAL): "IS_OWNER",
            }, name


@pytest.mark.parametrize(
    ("target", "identity"), [("prod", PROD_DEPLOYER), ("prod", JANE_OPERATOR), ("dev", JANE), ("dev", JOHN)]
)
def test_bundle_validate_prints_no_permission_warning(target: str, identity: Identity) -> None:
    warnings: list[str] = []
    values = REQUIRED_EVERYWHERE if target == "dev" else PROD_OVERRIDES
    resolve_bundle(target, identity=identity, overrides_file=values, warnings=warnings)
    assert warnings == []


# --- the on-call path and permissions that do not depend on who deployed (issue 47) -----------------

SP = ("service_principal_name", SERVICE_PRINCIPAL)
JANE_USER = ("user_name", "jane.doe@example.com")
RUN_WITHOUT_THE_BUNDLE = re.compile(r"databricks jobs run-now --timeout (\d+)m --json '([^']*)'")


@pytest.mark.parametrize("deployer", [PROD_DEPLOYER, JANE_OPERATOR], ids=["sp", "second-identity"])
def test_who_reads_the_scope_and_the_root_and_who_starts_the_failover(deployer: Identity) -> None:
    """Only the service principal can read the bundle root, where `bundle run` pulls the state from
    (cmd/bundle/run.go AlwaysPull, ErrorOnEmptyState; bundle/permissions/workspace_root.go): the
    operators start the failover job by its id, which their CAN_MANAGE allows. Readers get none."""
    resolved = resolve("prod", identity=deployer)
    assert root_folder_acl(resolved) == {SP: "CAN_MANAGE"}
    assert job_runners(resolved, "offsetlake_failover") == {SP, OPERATORS} | (
        {JANE_USER} if deployer == JANE_OPERATOR else set()
    )
    assert READERS not in secret_scope_acls(resolved, "offsetlake_kafka")


@pytest.mark.parametrize("deployer", [PROD_DEPLOYER, JANE_OPERATOR, JOHN], ids=["sp", "operator", "other"])
def test_the_service_principal_manages_what_its_runs_drive_whoever_deployed(deployer: Identity) -> None:
    """The failover job (run as the service principal) pauses the sync job, starts the pipeline's
    refresh and reads its own run: the principal is listed CAN_MANAGE, not only owner by its own
    deploy (fix_permissions.go makes the deploying identity the owner, whoever it is)."""
    resolved = resolve("prod", identity=deployer)
    for name in ("jobs.offsetlake_sync", "jobs.offsetlake_failover", "pipelines.offsetlake_pipeline"):
        (resource,) = resources_named(resolved, name).values()
        levels = {principal_of(p): p["level"] for p in resource["permissions"]}
        expected = "IS_OWNER" if deployer == PROD_DEPLOYER else "CAN_MANAGE"
        assert levels[SP] == expected, name
        assert levels[OPERATORS] == "CAN_MANAGE", name
        assert [p for p, level in levels.items() if level == "IS_OWNER"] == [
            (("service_principal_name" if deployer.is_service_principal else "user_name"), deployer.user_name)
        ], name


def test_the_failovers_access_and_paging_follow_the_variables_not_the_targets_name(tmp_path: Path) -> None:
    def renamed(configuration: dict[str, Any]) -> None:
        configuration["targets"]["production"] = configuration["targets"].pop("prod")

    root = copy_of_the_bundle(tmp_path, renamed)
    resolved = resolve_bundle("production", identity=PROD_DEPLOYER, overrides_file=PROD_OVERRIDES, root=root)
    failover = resolved["resources"]["jobs"]["offsetlake_failover"]
    assert OPERATORS in job_runners(resolved, "offsetlake_failover")
    assert failover["webhook_notifications"]["on_failure"] == PROD_OVERRIDES["notification_destinations"]


def failover_section() -> str:
    text = DEPLOY_DOC.read_text(encoding="utf-8")
    return text.split("\n## 6. Failing over\n", 1)[1].split("\n## 7.", 1)[0]


def test_the_failover_section_needs_only_the_cli_and_a_login() -> None:
    """No bundle checkout, overrides file or .venv: the operator finds the job by its deployed name
    and starts it with job parameters (cmd/workspace/jobs/jobs.go: `jobs list --name`, `run-now`
    with --json, which waits up to --timeout, 20 minutes unless given)."""
    section = failover_section()
    commands = "\n".join(re.findall(r"```sh\n(.*?)```", section, re.DOTALL))
    assert commands.count("databricks ") >= 6
    for needed_only_by_the_deployer in ("databricks bundle", "variable-overrides", ".venv", "pip "):
        assert needed_only_by_the_deployer not in commands
    failover = resolve("prod", identity=PROD_DEPLOYER)["resources"]["jobs"]["offsetlake_failover"]
    (listed,) = set(re.findall(r"databricks jobs list --name (\S+)", section))
    assert listed == failover["name"]
    declared = {p["name"] for p in failover["parameters"]}
    runs = RUN_WITHOUT_THE_BUNDLE.findall(commands)
    assert len(runs) >= 4
    modes = set()
    for minutes, body in runs:
        request = json.loads(body.replace("<job id>", "812"))
        assert set(request) <= {"job_id", "job_parameters"} and request["job_id"] == 812
        assert set(request.get("job_parameters", {})) <= declared
        modes.add(request.get("job_parameters", {}).get("mode", "plan"))
        # The CLI waits for the run's end: the job's own timeout, which bounds the whole run, fits in it.
        assert int(minutes) * 60 > failover["timeout_seconds"]
    assert modes == {"plan", "apply"}


def copy_of_the_bundle(tmp_path: Path, edit: Any) -> Path:
    """The bundle's files under tmp_path, databricks.yml changed by ``edit`` (a dict -> None)."""
    shutil.copytree(REPO_ROOT / "resources", tmp_path / "resources")
    configuration = yaml.safe_load((REPO_ROOT / "databricks.yml").read_text(encoding="utf-8"))
    edit(configuration)
    (tmp_path / "databricks.yml").write_text(yaml.safe_dump(configuration), encoding="utf-8")
    return tmp_path


def test_the_model_sees_top_level_permissions_reach_the_secret_scope(tmp_path: Path) -> None:
    """What prod had before issue 33: readers CAN_VIEW at the top level is READ on the scope."""

    def top_level(configuration: dict[str, Any]) -> None:
        configuration["targets"]["prod"]["permissions"] = [
            {"group_name": "${var.operators_group}", "level": "CAN_MANAGE"},
            {"group_name": "${var.readers_group}", "level": "CAN_VIEW"},
        ]

    root = copy_of_the_bundle(tmp_path, top_level)
    assert scope_acls("prod", PROD_DEPLOYER, root)[READERS] == "READ"
    warnings: list[str] = []
    resolve_bundle(
        "prod", identity=PROD_DEPLOYER, overrides_file=PROD_OVERRIDES, root=root, warnings=warnings
    )
    assert "'secret_scopes' already has permissions set for 'offsetlake-operators' group" in warnings
    recommendation = (
        f"permissions section should explicitly include the current deployment identity '{SERVICE_PRINCIPAL}'"
    )
    assert any(warning.startswith(recommendation) for warning in warnings)


# --- destroy tells the truth ------------------------------------------------------------------------

# The keys prod's state knows. prevent_destroy guards only a key still in the configuration
# (databricks/cli bundle/phases/plan.go checkForPreventDestroy): under a new key the schema is a new
# resource, and the old one is deleted with force, its tables with it (direct/dresources/schema.go).
PINNED_PROD_KEYS = {
    "schemas": {"offsetlake_schema"},
    "pipelines": {"offsetlake_pipeline"},
    "secret_scopes": {"offsetlake_kafka"},
}


def test_prod_keeps_the_keys_its_state_knows_and_refuses_destroy() -> None:
    resources = resolve("prod", identity=PROD_DEPLOYER)["resources"]
    for kind, keys in PINNED_PROD_KEYS.items():
        assert set(resources[kind]) == keys, kind
    plan = destroy_plan(resolve("prod", identity=PROD_DEPLOYER))
    assert set(plan.refused_by) == {
        f"resources.{kind}.{key}" for kind, keys in PINNED_PROD_KEYS.items() for key in keys
    }
    assert plan.dropped_schemas == ()


def test_prod_keeps_its_schema_when_the_schema_file_is_removed(tmp_path: Path) -> None:
    """The prod target defines the whole schema itself, so losing resources/offsetlake.schema.yml
    changes nothing for prod's state."""
    root = copy_of_the_bundle(tmp_path, lambda configuration: None)
    (root / "resources" / "offsetlake.schema.yml").unlink()
    resolved = resolve_bundle("prod", identity=PROD_DEPLOYER, overrides_file=PROD_OVERRIDES, root=root)
    schema = resolved["resources"]["schemas"]["offsetlake_schema"]
    assert (schema["catalog_name"], schema["name"], schema["lifecycle"]) == (
        "main",
        "offsetlake",
        {"prevent_destroy": True},
    )


def test_destroying_dev_drops_its_schema_and_the_docs_say_so() -> None:
    plan = destroy_plan(resolve("dev"))
    assert plan == DestroyPlan(refused_by=(), dropped_schemas=("dev.dev_jane_doe_offsetlake",))
    text = DEPLOY_DOC.read_text(encoding="utf-8")
    (paragraph,) = [p for p in text.split("\n\n") if "databricks bundle destroy -t dev" in p]
    assert "tables stay" not in paragraph
    assert "drops the schema `dev_<short name>_offsetlake` with every table" in " ".join(paragraph.split())
    assert "databricks bundle deployment unbind offsetlake_schema -t dev" in paragraph


def test_the_docs_pin_the_prod_schema_key() -> None:
    text = " ".join(DEPLOY_DOC.read_text(encoding="utf-8").split())
    assert "Never rename the key `offsetlake_schema`" in text


# --- the pre-production check runs on prod's runtime --------------------------------------------------

PRE_PROD_DEPLOY = re.compile(r"databricks bundle deploy -t dev((?: --var \S+)+)")


def test_the_documented_pre_production_check_runs_the_pipeline_on_prods_channel() -> None:
    text = DEPLOY_DOC.read_text(encoding="utf-8")
    (flags,) = PRE_PROD_DEPLOY.findall(text)
    given = dict(flag.split("=", 1) for flag in flags.split(" --var ")[1:])
    resolved = resolve_bundle("dev", identity=JANE, variables=given, overrides_file=REQUIRED_EVERYWHERE)
    prod = resolve("prod")["resources"]["pipelines"]["offsetlake_pipeline"]["channel"]
    assert resolved["resources"]["pipelines"]["offsetlake_pipeline"]["channel"] == prod == "CURRENT"


# --- the smaller points ------------------------------------------------------------------------------


def test_every_target_builds_a_wheel_version_of_its_own_per_deploy(resolved: dict[str, Any]) -> None:
    """The CLI patches a timestamp into the version (dynamic_version): serverless caches wheels by name."""
    for name, artifact in resolved["artifacts"].items():
        dynamic = artifact.get("dynamic_version") or resolved.get("presets", {}).get(
            "artifacts_dynamic_version"
        )
        assert dynamic is True, name


def test_prods_service_principal_is_committed_and_two_deployers_make_one_copy() -> None:
    assert re.fullmatch(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", SERVICE_PRINCIPAL)
    assert "service_principal" not in documented_overrides()["prod"]
    roots = {
        resolve_bundle("prod", identity=who, overrides_file=documented_overrides()["prod"])["workspace"][
            "root_path"
        ]
        for who in (JANE, JOHN, PROD_DEPLOYER)
    }
    assert roots == {f"/Workspace/Users/{SERVICE_PRINCIPAL}/.bundle/offsetlake/prod"}


def test_the_ci_recipe_counts_the_variables_it_shows() -> None:
    text = DEPLOY_DOC.read_text(encoding="utf-8")
    numbers = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}
    recipe = re.compile(r"the\s+same\s+(\w+)\s+environment\s+variables.*?```sh\n(.*?)```", re.DOTALL)
    ((count, block),) = recipe.findall(text)
    assert numbers[count] == len(re.findall(r"^export DATABRICKS_\w+=", block, re.MULTILINE))


# --- a failover and the sync job never fight ---------------------------------------------------------


@pytest.mark.parametrize("mode", ["plan", "apply"])
def test_the_failovers_first_task_pauses_this_targets_sync_job(resolved: dict[str, Any], mode: str) -> None:
    tasks = resolved["resources"]["jobs"]["offsetlake_failover"]["tasks"]
    pause = tasks[0]
    assert (pause["task_key"], pause.get("depends_on")) == ("pause_sync", None)
    assert all(
        "pause_sync" in {d["task_key"] for d in task["depends_on"]}
        for task in tasks[1:]
        if task["task_key"] != "apply_offsets"
    )
    deployed_id = "<deployed id of jobs.offsetlake_sync>"
    argv = [
        p.replace(deployed_id, "812").replace("{{job.parameters.mode}}", mode)
        for p in pause["python_wheel_task"]["parameters"]
    ]
    assert f"--job-id={deployed_id}" in pause["python_wheel_task"]["parameters"]
    parsed = build_parser().parse_args(argv)
    sync_mode = wheel_tasks(resolved)["jobs.offsetlake_sync.sync_standby_groups"]["python_wheel_task"][
        "parameters"
    ][0]
    assert (parsed.command, parsed.job_id, parsed.mode, parsed.sync_mode) == (
        "pause-sync",
        812,
        mode,
        sync_mode,
    )


def test_the_docs_say_how_to_resume_the_sync_after_a_failover() -> None:
    text = " ".join(DEPLOY_DOC.read_text(encoding="utf-8").split())
    assert "**Resuming the sync job after a failover.**" in text
    assert "any `databricks bundle deploy -t prod` resumes it" in text
