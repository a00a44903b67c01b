"""Resolve the bundle for one target the way the Databricks CLI does, offline.

No CLI or workspace is reachable here, so this models the parts of `databricks bundle validate`
that decide what gets deployed, each after the CLI source that does it (databricks/cli):

1. load `databricks.yml` and its `include:` files, merging them (maps merged, sequences concatenated:
   libs/dyn/merge/merge.go);
2. merge the target's overrides (`bundle/config/root.go` MergeTargetOverrides: bundle, workspace,
   resources, permissions, presets merged; `run_as` and `mode` replaced; a target variable, written
   short or long, replaces the variable's default and drops its lookup: rewriteShorthands);
3. assign variables (`mutator/set_variables.go`: a --var value, then BUNDLE_VAR_<name> for
   non-complex variables, then a lookup, then `.databricks/bundle/<target>/variable-overrides.json`,
   then the default; none is the CLI's "no value assigned to required variable");
3b. load the resources defined in Python (`python.resources` in databricks.yml: the CLI runs
   `python -m databricks.bundles.build --phase load_resources` in the bundle root, which calls each
   `module:function` with the target and the variable values, unresolved references left as they
   are: `mutator/python/python_mutator.go`); a resource the YAML already defines is refused there
   ("unexpected updated resources"), and here;
3c. apply the Python mutators (`python.mutators`: the `apply_mutators` phase, after
   `load_resources`, on the resources of YAML and Python alike, unresolved references left as they
   are): here the job mutators, on the jobs;
4. resolve `${var.*}`, `${bundle.*}` and `${workspace.*}` everywhere, resources included, before any
   preset (`phases/initialize.go`: ResolveVariableReferencesWithoutResources, then
   ProcessStaticResources' ResolveVariableReferencesOnlyResources);
5. development mode's presets (`resourcemutator/apply_target_mode.go`, `apply_presets.go`): the
   '[dev <short>] ' prefix on jobs, pipelines, dashboards and alerts, `dev_<short>_` on schemas,
   pipelines in development mode, PAUSED on schedules and alert schedules *that set none*; then
   `run_as` copied to jobs, pipelines and alerts (`run_as.go`) and the defaults of
   `resource_mutator.go` (a schedule without a pause status is UNPAUSED, a pipeline's channel CURRENT);
6. resolve `${resources.<type>.<key>.<field>}` against the resources as they are now, prefixes
   included (acceptance test `resource_deps/resources_var_presets`); fields that exist only after
   deployment (`id`) become `<deployed id of …>`;
7. permissions (`resourcemutator/apply_bundle_permissions.go`, then `fix_permissions.go`): the
   top-level `permissions` copied onto every resource type of `levelsMap`, each level translated
   for the type (CAN_VIEW is READ on a secret scope), skipped with a warning for a principal the
   resource already lists; then the deploying identity added to every resource's list (IS_OWNER on
   jobs and pipelines, CAN_MANAGE elsewhere; never on secret scopes) and one level per principal;
8. `bundle validate`'s permission diagnostics (`bundle/permissions/permission_diagnostics.go`):
   with a top-level `permissions` section, a recommendation unless the deploying identity or one
   of its groups has CAN_MANAGE there.

`secret_scope_acls` adds what the plan phase does to a secret scope (`secret_scope_fixups.go`,
direct engine only): MANAGE for the deploying identity, then one level per principal, the highest.
`root_folder_acl` is what the deploy phase leaves on the bundle's root folder, which holds the
deployment state `bundle run` pulls (`bundle/permissions/workspace_root.go`); `job_runners` who may
start a job (its permissions after step 7).

What it does not model: merging job tasks by key, path translation, mutators of other resources.
"""

from __future__ import annotations

import copy
import fnmatch
import json
import re
import sys
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
REFERENCE = re.compile(r"\$\{([A-Za-z0-9_.\-\[\]]+)\}")
DEPLOY_TIME_FIELDS = frozenset({"id"})
DEPLOY_TIME_VALUE = "<deployed {} of {}.{}>"
LOOKUP_VALUE = "<id of {} {!r}>"
PREFIXED_NAME_FIELD = {
    "jobs": "name",
    "pipelines": "name",
    "dashboards": "display_name",
    "alerts": "display_name",
}
RUN_AS_RESOURCE_TYPES = ("jobs", "pipelines", "alerts")


class BundleResolutionError(ValueError):
    """The CLI would refuse the bundle at this step (a missing variable, an unknown reference)."""


@dataclass(frozen=True)
class Identity:
    """Who runs `bundle deploy`: `workspace.current_user` (libs/iamutil)."""

    user_name: str
    display_name: str = ""
    groups: tuple[str, ...] = ()
    """Display names of the identity's groups (`current_user.groups`)."""

    @property
    def is_service_principal(self) -> bool:
        """The CLI's heuristic (iamutil.IsServicePrincipalName): the user name is a UUID."""
        try:
            uuid.UUID(self.user_name)
        except ValueError:
            return False
        return True

    @property
    def short_name(self) -> str:
        """iamutil.GetShortUserName: the part before '@' (a principal's display name), normalized."""
        name = self.display_name if self.is_service_principal and self.display_name else self.user_name
        return _normalize(name.split("@", 1)[0])


def _normalize(name: str) -> str:
    """textutil.NormalizeString: lower case, every non-alphanumeric a single '_', none at the ends."""
    replaced = "".join(c if c.isalnum() else "_" for c in name.lower())
    return re.sub(r"_+", "_", replaced).strip("_")


def _schema_prefix(prefix: str) -> str:
    """apply_presets.go normalizePrefix: '[dev jane] ' -> 'dev_jane_'."""
    trimmed = prefix.replace("[", "").strip(" ")
    suffix = "_" if trimmed.endswith("]") else ""
    return _normalize(trimmed) + suffix


def _merge(base: Any, override: Any) -> Any:
    """libs/dyn/merge: maps merged key by key, sequences concatenated, anything else replaced."""
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for key, value in override.items():
            merged[key] = _merge(base[key], value) if key in base else copy.deepcopy(value)
        return merged
    if isinstance(base, list) and isinstance(override, list):
        return [*base, *copy.deepcopy(override)]
    return copy.deepcopy(override)


def _load(path: Path) -> dict[str, Any]:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(document, dict):
        raise BundleResolutionError(f"{path}: not a YAML mapping")
    return document


def load_configuration(root: Path = REPO_ROOT) -> dict[str, Any]:
    """databricks.yml with every file its `include:` globs name merged into it."""
    configuration = _load(root / "databricks.yml")
    for pattern in configuration.get("include", []):
        for path in sorted(root.glob(pattern)):
            included = _load(path)
            unknown = set(included) - {"resources", "variables", "targets"}
            if unknown:
                raise BundleResolutionError(f"{path}: unexpected top-level keys {sorted(unknown)}")
            configuration = _merge(configuration, included)
    return configuration


@contextmanager
def _importing_from(root: Path) -> Iterator[None]:
    """Imports resolve in ``root`` first, as in the CLI's Python process (its working directory is
    the bundle root); modules of another root imported before are set aside, and restored after."""
    names = ("resources",)
    aside = {name: module for name, module in sys.modules.items() if name.split(".")[0] in names}
    for name in aside:
        del sys.modules[name]
    sys.path.insert(0, str(root))
    try:
        yield
    finally:
        sys.path.remove(str(root))
        for name in [name for name in sys.modules if name.split(".")[0] in names]:
            del sys.modules[name]
        sys.modules.update(aside)


def python_resources(
    configuration: Mapping[str, Any], target: str, variables: Mapping[str, Any], root: Path = REPO_ROOT
) -> dict[str, dict[str, Any]]:
    """What `python.resources` adds for ``target`` with these variable values: each function called
    and its resources serialized by databricks-bundles' own `load_resources` phase code."""
    from databricks.bundles.build import _append_resources, _load_functions, _load_resources
    from databricks.bundles.core import Bundle

    names = (configuration.get("python") or {}).get("resources", [])
    with _importing_from(root):
        functions, diagnostics = _load_functions(names)
        bundle = Bundle(target=target, variables=copy.deepcopy(dict(variables)))
        resources, loaded = _load_resources(bundle, functions)
    problems = [item.summary for item in [*diagnostics.items, *loaded.items]]
    if problems or len(functions) != len(names):
        raise BundleResolutionError(f"python.resources {names}: {problems}")
    return _append_resources({"resources": {}}, resources)["resources"]


def python_resources_of_target(
    target: str, overrides_file: Mapping[str, Any], root: Path = REPO_ROOT
) -> dict[str, dict[str, Any]]:
    """The resources defined in Python for ``target``, as the CLI gets them (variables assigned,
    references unresolved), with the variable values of `variable-overrides.json` ``overrides_file``."""
    configuration = _apply_target(load_configuration(root), target)
    values = _assign_variables(configuration.get("variables", {}), {}, {}, overrides_file)
    return python_resources(configuration, target, values, root)


def _apply_python_mutators(
    configuration: dict[str, Any], target: str, variables: Mapping[str, Any], root: Path = REPO_ROOT
) -> None:
    """Each job of ``configuration`` through the job mutators `python.mutators` names, in order, as
    databricks-bundles' own `apply_mutators` phase calls them; a job they return unchanged keeps
    its document as written."""
    from databricks.bundles.build import _get_num_args, _load_resource_mutators
    from databricks.bundles.core import Bundle
    from databricks.bundles.jobs import Job

    names = (configuration.get("python") or {}).get("mutators", [])
    jobs = configuration.get("resources", {}).get("jobs", {})
    with _importing_from(root):
        mutators, diagnostics = _load_resource_mutators(names)
        if diagnostics.items or len(mutators) != len(names):
            raise BundleResolutionError(f"python.mutators {names}: {[i.summary for i in diagnostics.items]}")
        bundle = Bundle(target=target, variables=copy.deepcopy(dict(variables)))
        for key, document in jobs.items():
            job = mutated = Job.from_dict(copy.deepcopy(document))
            for mutator in (m for m in mutators if m.resource_type is Job):
                if _get_num_args(mutator.function) == 1:
                    mutated = mutator.function(mutated)
                else:
                    mutated = mutator.function(copy.deepcopy(bundle), mutated)
            if mutated is not job:
                jobs[key] = mutated.as_dict()


def _add_python_resources(configuration: dict[str, Any], added: Mapping[str, Mapping[str, Any]]) -> None:
    resources = configuration.setdefault("resources", {})
    for kind, group in added.items():
        for key, resource in group.items():
            if key in resources.get(kind, {}):
                raise BundleResolutionError(f"unexpected updated resources: resources.{kind}.{key}")
            resources.setdefault(kind, {})[key] = copy.deepcopy(resource)


def _default_target(configuration: Mapping[str, Any]) -> str:
    defaults = [name for name, target in configuration["targets"].items() if target.get("default")]
    if len(defaults) != 1:
        raise BundleResolutionError(f"expected exactly one default target, found {defaults}")
    return defaults[0]


def _apply_target(configuration: dict[str, Any], target_name: str) -> dict[str, Any]:
    targets = configuration.pop("targets")
    if target_name not in targets:
        raise BundleResolutionError(f"no such target: {target_name}")
    target = targets[target_name] or {}
    for field in ("bundle", "workspace", "artifacts", "resources", "sync", "permissions", "presets"):
        if field in target:
            configuration[field] = _merge(configuration.get(field, {} if field != "permissions" else []),
                                          target[field])  # fmt: skip
    for name, value in (target.get("variables") or {}).items():
        if name not in configuration.get("variables", {}):
            raise BundleResolutionError(f"target {target_name} sets undeclared variable {name}")
        declared = configuration["variables"][name]
        is_full = isinstance(value, dict) and ({"default", "lookup"} & set(value))
        override = value if is_full else {"default": value}
        if "default" in override:
            declared["default"] = copy.deepcopy(override["default"])
            declared.pop("lookup", None)
        if "lookup" in override:
            declared["lookup"] = copy.deepcopy(override["lookup"])
            declared.pop("default", None)
    if "run_as" in target:
        configuration["run_as"] = copy.deepcopy(target["run_as"])
    configuration.setdefault("bundle", {})["target"] = target_name
    if "mode" in target:
        configuration["bundle"]["mode"] = target["mode"]
    return configuration


def _assign_variables(
    declared: Mapping[str, Mapping[str, Any]],
    cli_values: Mapping[str, Any],
    environment: Mapping[str, str],
    overrides_file: Mapping[str, Any],
) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, variable in declared.items():
        complex_type = variable.get("type") == "complex"
        if name in cli_values:
            values[name] = cli_values[name]
        elif f"BUNDLE_VAR_{name}" in environment:
            if complex_type:
                raise BundleResolutionError(f"complex variable {name} cannot be set from the environment")
            values[name] = environment[f"BUNDLE_VAR_{name}"]
        elif "lookup" in variable:
            ((kind, lookup_name),) = variable["lookup"].items()
            values[name] = LOOKUP_VALUE.format(kind, lookup_name)
        elif overrides_file.get(name) is not None:
            values[name] = overrides_file[name]
        elif "default" in variable:
            values[name] = variable["default"]
        else:
            raise BundleResolutionError(f"no value assigned to required variable {name}")
    return values


def _walk_strings(node: Any, substitute: Any) -> Any:
    if isinstance(node, dict):
        return {key: _walk_strings(value, substitute) for key, value in node.items()}
    if isinstance(node, list):
        return [_walk_strings(value, substitute) for value in node]
    if isinstance(node, str):
        return substitute(node)
    return node


def _interpolate(text: str, lookup: Any) -> Any:
    """A string that is one whole reference takes the referenced value (a list stays a list)."""
    whole = REFERENCE.fullmatch(text)
    if whole:
        found = lookup(whole.group(1))
        return text if found is None else found
    return REFERENCE.sub(lambda m: _as_text(lookup(m.group(1)), m.group(0)), text)


def _as_text(value: Any, unresolved: str) -> str:
    if value is None:
        return unresolved
    if isinstance(value, dict | list):
        raise BundleResolutionError(f"{unresolved} is a complex value inside a longer string")
    return str(value).lower() if isinstance(value, bool) else str(value)


def _path_get(document: Any, dotted: str) -> Any:
    node = document
    for part in re.split(r"\.|\[(\d+)\]", dotted):
        if part is None or part == "":
            continue
        if isinstance(node, list) and part.isdigit():
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return None
    return node


def _resolve_static(
    configuration: dict[str, Any], variables: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Step 4: ${var.*}, ${bundle.*}, ${workspace.*} (not ${resources.*}), repeated to a fixed point.

    Variable values may themselves hold references (dev's `${workspace.current_user.userName}`).
    """

    def lookup(reference: str) -> Any:
        head, _, rest = reference.partition(".")
        if head == "var":
            name, _, tail = rest.partition(".")
            if name not in variables:
                raise BundleResolutionError(f"reference to undeclared variable ${{{reference}}}")
            return _path_get(variables[name], tail) if tail else variables[name]
        if head in ("bundle", "workspace"):
            found = _path_get(configuration[head], rest)
            if found is None:
                raise BundleResolutionError(f"${{{reference}}} does not resolve")
            return found
        return None

    for _ in range(10):
        before = json.dumps([configuration, variables], sort_keys=True, default=str)
        variables = _walk_strings(variables, lambda s: _interpolate(s, lookup))
        configuration = _walk_strings(configuration, lambda s: _interpolate(s, lookup))
        if json.dumps([configuration, variables], sort_keys=True, default=str) == before:
            return configuration, variables
    raise BundleResolutionError("variable references do not settle (a cycle?)")


def _workspace_paths(configuration: dict[str, Any], identity: Identity) -> None:
    workspace = configuration.setdefault("workspace", {})
    workspace["current_user"] = {
        "userName": identity.user_name,
        "short_name": identity.short_name,
        "groups": [{"display": group} for group in identity.groups],
    }
    root = workspace.get("root_path") or "~/.bundle/${bundle.name}/${bundle.target}"
    root = root.replace("~", f"/Workspace/Users/{identity.user_name}", 1) if root.startswith("~") else root
    workspace["root_path"] = root
    for field, leaf in (("file_path", "files"), ("artifact_path", "artifacts"), ("state_path", "state")):
        workspace.setdefault(field, f"{root}/{leaf}")


def _apply_presets(configuration: dict[str, Any]) -> None:
    """Step 5: development mode's presets, then run_as and the CLI's resource defaults."""
    resources = configuration.setdefault("resources", {})
    presets = configuration.setdefault("presets", {})
    if configuration["bundle"].get("mode") == "development":
        short = configuration["workspace"]["current_user"]["short_name"]
        presets.setdefault("name_prefix", f"[dev {short}] ")
        presets.setdefault("trigger_pause_status", "PAUSED")
        presets.setdefault("pipelines_development", True)
        if presets["trigger_pause_status"] == "UNPAUSED":
            raise BundleResolutionError("a development target cannot set trigger_pause_status UNPAUSED")
    prefix = presets.get("name_prefix", "")
    pause = presets.get("trigger_pause_status", "")
    for kind, field in PREFIXED_NAME_FIELD.items():
        for resource in resources.get(kind, {}).values():
            resource[field] = prefix + resource.get(field, "")
    for schema in resources.get("schemas", {}).values():
        schema["name"] = (_schema_prefix(prefix) if prefix else "") + schema["name"]
    for job in resources.get("jobs", {}).values():
        for trigger in ("schedule", "trigger", "continuous"):
            if pause and trigger in job and not job[trigger].get("pause_status"):
                job[trigger]["pause_status"] = pause
    for alert in resources.get("alerts", {}).values():
        schedule = alert.get("schedule", {})
        if pause and schedule.get("quartz_cron_schedule") and not schedule.get("pause_status"):
            schedule["pause_status"] = pause
    for pipeline in resources.get("pipelines", {}).values():
        if presets.get("pipelines_development"):
            pipeline["development"] = True
        pipeline.setdefault("channel", "CURRENT")
    for job in resources.get("jobs", {}).values():
        for trigger in ("schedule", "trigger", "continuous"):
            if trigger in job:
                job[trigger].setdefault("pause_status", "UNPAUSED")
    if "run_as" in configuration:
        for kind in RUN_AS_RESOURCE_TYPES:
            for resource in resources.get(kind, {}).values():
                resource.setdefault("run_as", copy.deepcopy(configuration["run_as"]))


def _resolve_resource_references(configuration: dict[str, Any]) -> dict[str, Any]:
    resources = configuration["resources"]

    def lookup(reference: str) -> Any:
        head, _, rest = reference.partition(".")
        if head != "resources":
            raise BundleResolutionError(f"${{{reference}}} is left unresolved")
        kind, key, field = [*rest.split(".", 2), "", ""][:3]
        if key not in resources.get(kind, {}):
            raise BundleResolutionError(f"${{{reference}}} names no resource of this bundle")
        if field in DEPLOY_TIME_FIELDS:
            return DEPLOY_TIME_VALUE.format(field, kind, key)
        found = _path_get(resources[kind][key], field)
        if found is None:
            raise BundleResolutionError(f"${{{reference}}}: the resource has no field {field!r}")
        return found

    return _walk_strings(configuration, lambda s: _interpolate(s, lookup))


# apply_bundle_permissions.go levelsMap: a top-level level -> the level it becomes per resource type.
LEVELS_MAP: dict[str, dict[str, str]] = {
    "jobs": {"CAN_MANAGE": "CAN_MANAGE", "CAN_VIEW": "CAN_VIEW", "CAN_RUN": "CAN_MANAGE_RUN"},
    "pipelines": {"CAN_MANAGE": "CAN_MANAGE", "CAN_VIEW": "CAN_VIEW", "CAN_RUN": "CAN_RUN"},
    "experiments": {"CAN_MANAGE": "CAN_MANAGE", "CAN_VIEW": "CAN_READ"},
    "models": {"CAN_MANAGE": "CAN_MANAGE", "CAN_VIEW": "CAN_READ"},
    "model_serving_endpoints": {"CAN_MANAGE": "CAN_MANAGE", "CAN_VIEW": "CAN_VIEW", "CAN_RUN": "CAN_QUERY"},
    "dashboards": {"CAN_MANAGE": "CAN_MANAGE", "CAN_VIEW": "CAN_READ"},
    "genie_spaces": {"CAN_MANAGE": "CAN_MANAGE", "CAN_VIEW": "CAN_READ"},
    "apps": {"CAN_MANAGE": "CAN_MANAGE", "CAN_VIEW": "CAN_USE"},
    "secret_scopes": {"CAN_MANAGE": "MANAGE", "CAN_VIEW": "READ"},
    "alerts": {"CAN_MANAGE": "CAN_MANAGE", "CAN_VIEW": "CAN_READ", "CAN_RUN": "CAN_RUN"},
    "sql_warehouses": {"CAN_MANAGE": "CAN_MANAGE", "CAN_VIEW": "CAN_VIEW", "CAN_RUN": "CAN_MONITOR"},
    "database_instances": {"CAN_MANAGE": "CAN_MANAGE", "CAN_VIEW": "CAN_USE"},
    "postgres_projects": {"CAN_MANAGE": "CAN_MANAGE", "CAN_VIEW": "CAN_USE"},
    "clusters": {"CAN_MANAGE": "CAN_MANAGE", "CAN_VIEW": "CAN_ATTACH_TO", "CAN_RUN": "CAN_RESTART"},
    "vector_search_endpoints": {"CAN_MANAGE": "CAN_MANAGE", "CAN_VIEW": "CAN_USE"},
    "instance_pools": {"CAN_MANAGE": "CAN_MANAGE", "CAN_VIEW": "CAN_ATTACH_TO"},
}
PRINCIPAL_FIELDS = ("user_name", "service_principal_name", "group_name")
HAS_IS_OWNER = frozenset({"jobs", "pipelines", "sql_warehouses"})  # fix_permissions.go hasIsOwner
# resources.GetMaxLevel's order, for the levels this bundle can meet (lowest first).
LEVEL_RANK = ("CAN_VIEW", "CAN_READ", "CAN_RUN", "CAN_MANAGE_RUN", "CAN_MANAGE", "IS_OWNER")
SECRET_SCOPE_RANK = {"READ": 1, "WRITE": 2, "MANAGE": 3}  # secret_scope_fixups.go permissionRank


def principal_of(permission: Mapping[str, Any]) -> tuple[str, str]:
    """(field, name) of a permission entry: who it is for."""
    for field in PRINCIPAL_FIELDS:
        if permission.get(field):
            return field, permission[field]
    raise BundleResolutionError(f"a permission names no principal: {dict(permission)}")


def _apply_bundle_permissions(configuration: dict[str, Any], warnings: list[str]) -> None:
    """apply_bundle_permissions.go: the top-level permissions onto every resource of a levelsMap type."""
    top_level = configuration.get("permissions") or []
    for permission in top_level:
        if permission["level"] not in ("CAN_MANAGE", "CAN_VIEW", "CAN_RUN"):
            raise BundleResolutionError(f"invalid permission level: {permission['level']}")
    for kind, levels in LEVELS_MAP.items():
        for resource in configuration["resources"].get(kind, {}).values():
            listed = list(resource.get("permissions") or [])
            added = []
            for permission in top_level:
                if permission["level"] not in levels:
                    continue
                field, name = principal_of(permission)
                if any(entry.get(field) == name for entry in listed):
                    label = {"group_name": "group", "user_name": "user name"}.get(
                        field, "service principal name"
                    )
                    warnings.append(f"'{kind}' already has permissions set for '{name}' {label}")
                    continue
                added.append({"level": levels[permission["level"]], field: name})
            if listed or added:
                resource["permissions"] = listed + added


def _fix_permissions(configuration: dict[str, Any]) -> None:
    """fix_permissions.go: the deploying identity manages every resource that lists permissions."""
    current = configuration["workspace"]["current_user"]["userName"]
    field = "service_principal_name" if Identity(current).is_service_principal else "user_name"
    for kind, group in configuration["resources"].items():
        if kind == "secret_scopes":
            continue
        for resource in group.values():
            listed = resource.get("permissions")
            if not isinstance(listed, list):
                continue
            mine = [p for p in listed if current in (p.get("user_name"), p.get("service_principal_name"))]
            owner_set = any(p["level"] == "IS_OWNER" for p in listed)
            if any(p["level"] == "IS_OWNER" for p in mine):
                pass
            elif kind in HAS_IS_OWNER and not owner_set:
                manage = next((p for p in mine if p["level"] == "CAN_MANAGE"), None)
                if manage is not None:
                    manage["level"] = "IS_OWNER"
                else:
                    listed.append({"level": "IS_OWNER", field: current})
            elif not any(p["level"] == "CAN_MANAGE" for p in mine):
                listed.append({"level": "CAN_MANAGE", field: current})
            highest: dict[tuple[str, str], str] = {}
            for permission in listed:
                who = principal_of(permission)
                previous = highest.get(who, permission["level"])
                highest[who] = max(previous, permission["level"], key=_level_rank)
            resource["permissions"] = [{"level": level, who[0]: who[1]} for who, level in highest.items()]


def _level_rank(level: str) -> int:
    return LEVEL_RANK.index(level) if level in LEVEL_RANK else -1


def _permission_diagnostics(configuration: Mapping[str, Any], warnings: list[str]) -> None:
    """permission_diagnostics.go: a top-level section that does not let the deployer manage."""
    top_level = configuration.get("permissions") or []
    if not top_level:
        return
    user = configuration["workspace"]["current_user"]
    groups = {group["display"] for group in user.get("groups", [])}
    for permission in top_level:
        if permission["level"] != "CAN_MANAGE":
            continue
        if user["userName"] in (permission.get("user_name"), permission.get("service_principal_name")):
            return
        if permission.get("group_name") in groups:
            return
    warnings.append(
        f"permissions section should explicitly include the current deployment identity '{user['userName']}' "
        "or one of its groups"
    )


# workspace_root.go GetWorkspaceObjectPermissionLevel: a top-level level -> the folder's level.
FOLDER_LEVELS = {"CAN_MANAGE": "CAN_MANAGE", "CAN_RUN": "CAN_RUN", "CAN_VIEW": "CAN_READ"}
HOME_FOLDERS = "/Workspace/Users/"
# A job run can be started with CAN_MANAGE_RUN or more (Databricks jobs access control).
RUN_LEVELS = frozenset({"CAN_MANAGE_RUN", "CAN_MANAGE", "IS_OWNER"})


def _principal_field(name: str) -> str:
    return "service_principal_name" if Identity(name).is_service_principal else "user_name"


def root_folder_acl(resolved: Mapping[str, Any]) -> dict[tuple[str, str], str]:
    """Who can read the bundle's root folder (and the deployment state under it), per principal.

    workspace_root.go sets the top-level `permissions` on the root folder, translated; without them
    it sets nothing, and the folder keeps what it inherits: a root in a home folder
    (/Workspace/Users/<owner>/...) is its owner's alone (workspace admins aside, not modelled here).
    """
    workspace = resolved["workspace"]
    if not workspace["state_path"].startswith(workspace["root_path"]):
        raise BundleResolutionError("root_folder_acl models a state_path under root_path only")
    acl: dict[tuple[str, str], str] = {}
    root = workspace["root_path"]
    if root.startswith(HOME_FOLDERS):
        owner = root.removeprefix(HOME_FOLDERS).split("/", 1)[0]
        acl[(_principal_field(owner), owner)] = "CAN_MANAGE"
    for permission in resolved.get("permissions") or []:
        acl.setdefault(principal_of(permission), FOLDER_LEVELS[permission["level"]])
    return acl


def job_runners(resolved: Mapping[str, Any], key: str) -> set[tuple[str, str]]:
    """The principals that may start job ``key`` (`jobs run-now`, the Jobs UI's Run now)."""
    listed = resolved["resources"]["jobs"][key].get("permissions") or []
    return {principal_of(permission) for permission in listed if permission["level"] in RUN_LEVELS}


def secret_scope_acls(resolved: Mapping[str, Any], key: str) -> dict[tuple[str, str], str]:
    """The ACLs the direct engine puts on a secret scope (secret_scope_fixups.go), per principal.

    The creator of a scope holds MANAGE on it whatever the bundle says, so the fix-up adds MANAGE for
    the deploying identity, then keeps one level per principal, the highest (MANAGE > WRITE > READ).
    """
    if resolved["bundle"].get("engine", "direct") != "direct":
        raise BundleResolutionError("secret_scope_acls models the direct engine only")
    listed = list(resolved["resources"]["secret_scopes"][key].get("permissions") or [])
    current = resolved["workspace"]["current_user"]["userName"]
    field = "service_principal_name" if Identity(current).is_service_principal else "user_name"
    if not any(
        current in (p.get("user_name"), p.get("service_principal_name")) and p["level"] == "MANAGE"
        for p in listed
    ):
        listed.append({"level": "MANAGE", field: current})
    acls: dict[tuple[str, str], str] = {}
    for permission in listed:
        if permission["level"] not in SECRET_SCOPE_RANK:
            raise BundleResolutionError(f"unknown permission level {permission['level']!r} for secret scope")
        who = principal_of(permission)
        if SECRET_SCOPE_RANK[permission["level"]] > SECRET_SCOPE_RANK.get(acls.get(who, ""), 0):
            acls[who] = permission["level"]
    return acls


@dataclass(frozen=True)
class DestroyPlan:
    """What `bundle destroy` does with a deployment of these resources (direct engine)."""

    refused_by: tuple[str, ...]
    """Resources with lifecycle.prevent_destroy: any one refuses the whole destroy (phases/destroy.go
    approvalForDestroy -> plan.go checkForPreventDestroy)."""
    dropped_schemas: tuple[str, ...]
    """catalog.schema of every schema deleted, with force: its tables go with it whatever the
    pipeline's cascade_on_destroy says (direct/dresources/schema.go DoDelete, Force: true)."""


def destroy_plan(resolved: Mapping[str, Any]) -> DestroyPlan:
    """`bundle destroy` of the deployment `resolved` describes: every resource in the state is deleted."""
    resources = resolved["resources"]
    refused = tuple(
        f"resources.{kind}.{key}"
        for kind, group in resources.items()
        for key, resource in group.items()
        if (resource.get("lifecycle") or {}).get("prevent_destroy")
    )
    schemas = tuple(f"{s['catalog_name']}.{s['name']}" for s in resources.get("schemas", {}).values())
    return DestroyPlan(refused, () if refused else schemas)


def resolve_bundle(
    target: str | None = None,
    *,
    identity: Identity,
    variables: Mapping[str, Any] | None = None,
    environment: Mapping[str, str] | None = None,
    overrides_file: Mapping[str, Any] | None = None,
    root: Path = REPO_ROOT,
    warnings: list[str] | None = None,
) -> dict[str, Any]:
    """The configuration the CLI deploys for ``target``, as far as modelled: what decides the
    deployment, not the whole of what `bundle validate -o json` prints (no paths translated, no
    job tasks merged by key, no default fields the CLI fills in for the API).

    `variables` are --var values; `environment` holds BUNDLE_VAR_* entries; `overrides_file` is
    the content of `.databricks/bundle/<target>/variable-overrides.json`. The permission warnings
    and recommendations `bundle validate` would print are appended to `warnings`.
    """
    configuration = load_configuration(root)
    target = target or _default_target(configuration)
    configuration = _apply_target(configuration, target)
    _workspace_paths(configuration, identity)
    values = _assign_variables(
        configuration.get("variables", {}), variables or {}, environment or {}, overrides_file or {}
    )
    _add_python_resources(configuration, python_resources(configuration, target, values, root))
    _apply_python_mutators(configuration, target, values, root)
    configuration, values = _resolve_static(configuration, values)
    configuration["variables"] = {name: {"value": value} for name, value in values.items()}
    _apply_presets(configuration)
    resolved = _resolve_resource_references(configuration)
    found: list[str] = []
    _apply_bundle_permissions(resolved, found)
    _fix_permissions(resolved)
    _permission_diagnostics(resolved, found)
    if warnings is not None:
        warnings.extend(found)
    leftover = sorted({m.group(0) for text in _strings(resolved) for m in REFERENCE.finditer(text)})
    if leftover:
        raise BundleResolutionError(f"unresolved references: {leftover}")
    return resolved


def _strings(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [text for value in node.values() for text in _strings(value)]
    if isinstance(node, list):
        return [text for value in node for text in _strings(value)]
    return [node] if isinstance(node, str) else []


def resources_named(resolved: Mapping[str, Any], pattern: str) -> dict[str, Any]:
    """Resources whose `<type>.<key>` matches a glob, e.g. 'jobs.*'."""
    return {
        f"{kind}.{key}": resource
        for kind, group in resolved.get("resources", {}).items()
        for key, resource in group.items()
        if fnmatch.fnmatch(f"{kind}.{key}", pattern)
    }


def target_mode_errors(resolved: Mapping[str, Any], raw_target: Mapping[str, Any]) -> list[str]:
    """validate_target_mode.go: what `bundle validate` reports as errors for the target's mode."""
    mode = resolved["bundle"].get("mode")
    workspace = resolved["workspace"]
    user = workspace["current_user"]
    errors: list[str] = []
    if mode == "development":
        for field in ("root_path", "file_path", "artifact_path", "state_path"):
            path = workspace.get(field, "")
            if path and user["userName"] not in path and user["short_name"] not in path:
                errors.append(f"{field} must contain the current username in development mode")
    if mode == "production":
        if any(p.get("development") for p in resolved["resources"].get("pipelines", {}).values()):
            errors.append("production mode cannot include a pipeline with development: true")
        if not (raw_target.get("workspace") or {}).get("root_path"):
            errors.append("production mode should set workspace.root_path (one copy only)")
    return errors
