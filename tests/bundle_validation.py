"""Offline checks of the Databricks asset bundle: JSON-schema validation, doc parsing, secret scan.

The Databricks CLI is not available in CI (no network), so the bundle is checked against the
published bundle JSON schema instead. That schema uses `\\p{L}` in its `pattern`s, which Python's
`re` cannot compile, so patterns are evaluated with the `regex` package.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import regex
import yaml
from jsonschema import Draft202012Validator, ValidationError, validators
from jsonschema.protocols import Validator

REPO_ROOT = Path(__file__).resolve().parents[1]
RESOURCES_DIR = REPO_ROOT / "resources"
BUNDLE_ROOT_FILE = REPO_ROOT / "databricks.yml"
# CI runs in a fresh clone with the shared/ checkout beside the repository; a git worktree one level
# further down (<checkout>/../wt/<name>) finds the same checkout one directory higher. Without it,
# the CLI prints its own schema (`databricks bundle schema > <file>`: cmd/bundle/schema.go), named by
# OFFSETLAKE_BUNDLE_SCHEMA (docs/deploy.md, "Checking the bundle offline").
_SCHEMA_IN_SHARED = Path("shared") / "schemas" / "databricks-bundle.schema.json"
BUNDLE_SCHEMA_PATH = (
    Path(os.environ["OFFSETLAKE_BUNDLE_SCHEMA"])
    if os.environ.get("OFFSETLAKE_BUNDLE_SCHEMA")
    else next(
        (
            folder / _SCHEMA_IN_SHARED
            for folder in REPO_ROOT.parents[:2]
            if (folder / _SCHEMA_IN_SHARED).is_file()
        ),
        REPO_ROOT.parent / _SCHEMA_IN_SHARED,
    )
)

VARIABLE_REFERENCE = re.compile(r"\$\{var\.([A-Za-z0-9_-]+)\}")


@dataclass(frozen=True)
class SchemaViolation:
    """One schema error, located by the JSON path of the offending value."""

    json_path: str
    message: str

    def __str__(self) -> str:
        return f"{self.json_path}: {self.message}"


def bundle_files() -> list[Path]:
    """databricks.yml followed by the resource files its `include: [resources/*.yml]` pulls in."""
    return [BUNDLE_ROOT_FILE, *sorted(RESOURCES_DIR.glob("*.yml"))]


def load_yaml(path: Path) -> dict[str, Any]:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(document, dict):
        raise ValueError(f"{path}: expected a YAML mapping at the top level, got {type(document).__name__}")
    return document


@functools.cache
def _compiled_pattern(pattern: str) -> regex.Pattern[str]:
    return regex.compile(pattern)


def _unicode_pattern(
    validator: Validator, pattern: str, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    """JSON Schema `pattern` (an unanchored search) with Unicode property classes such as \\p{L}."""
    if validator.is_type(instance, "string") and not _compiled_pattern(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


_BundleSchemaValidator = validators.extend(Draft202012Validator, {"pattern": _unicode_pattern})


def load_bundle_validator(schema_path: Path = BUNDLE_SCHEMA_PATH) -> Validator:
    """A validator for one bundle configuration file (databricks.yml or an included file).

    The published schema leaves the top level open (`additionalProperties: {}`) while the CLI
    reports unknown top-level fields; closing it makes a typo such as `resource:` an error here.
    """
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    return _BundleSchemaValidator({**schema, "additionalProperties": False})


# Errors that mean "this oneOf branch expects another kind of value", not "this value is close".
_KIND_MISMATCH = frozenset({"type", "pattern", "enum", "const"})


def _expected_kinds(schema: Mapping[str, Any]) -> str:
    kinds: list[str] = []
    for branch in schema.get("oneOf", schema.get("anyOf", [])):
        if "enum" in branch:
            kinds.append("one of " + ", ".join(map(str, branch["enum"])))
        elif "pattern" in branch:
            if "a ${...} reference" not in kinds:
                kinds.append("a ${...} reference")
        elif "type" in branch:
            kinds.append(str(branch["type"]))
    return " or ".join(kinds) or "a different value"


def _leaf_violations(error: ValidationError) -> Iterator[SchemaViolation]:
    """Descend through oneOf/anyOf into the branches of the right kind, to name the deepest path.

    Every bundle field is `oneOf: [<real type>, <${...} reference pattern>...]`, so a plain
    "is not valid under any of the given schemas" would point at a whole job instead of the field.
    """
    if not error.context:
        yield SchemaViolation(error.json_path, error.message)
        return
    errors_by_branch: dict[Any, list[ValidationError]] = defaultdict(list)
    for branch_error in error.context:
        errors_by_branch[branch_error.relative_schema_path[0]].append(branch_error)
    matching_branches = [
        branch_errors
        for branch_errors in errors_by_branch.values()
        if not any(not e.relative_path and e.validator in _KIND_MISMATCH for e in branch_errors)
    ]
    if not matching_branches:
        yield SchemaViolation(
            error.json_path, f"{error.instance!r} is not valid here: expected {_expected_kinds(error.schema)}"
        )
        return
    for branch_errors in matching_branches:
        for branch_error in branch_errors:
            yield from _leaf_violations(branch_error)


def schema_violations(document: Any, validator: Validator) -> list[SchemaViolation]:
    """Every schema error of a bundle document, each with the JSON path of the offending value."""
    found = {violation for error in validator.iter_errors(document) for violation in _leaf_violations(error)}
    return sorted(found, key=lambda violation: (violation.json_path, violation.message))


def variable_references(document: Any) -> set[str]:
    """Names used as ${var.NAME} anywhere in a parsed document."""
    if isinstance(document, Mapping):
        return set().union(*(variable_references(value) for value in document.values()))
    if isinstance(document, list):
        return set().union(*(variable_references(value) for value in document))
    if isinstance(document, str):
        return set(VARIABLE_REFERENCE.findall(document))
    return set()


def _markdown_cells(row: str) -> list[str]:
    """Cells of a Markdown table row; `\\|` is a literal pipe inside a cell."""
    cells = re.split(r"(?<!\\)\|", row.strip().removeprefix("|").removesuffix("|"))
    return [cell.strip().replace("\\|", "|") for cell in cells]


def documented_pipeline_settings(architecture_markdown: str) -> dict[str, str | None]:
    """Pipeline configuration keys and their literal defaults from docs/architecture.md.

    A cell may name sibling keys as `a.b.include` / `.exclude` with defaults `x` / `y`; a default
    that is prose rather than a literal, such as "(required)" or "empty", maps to None.
    """
    section = architecture_markdown.split("## Pipeline configuration keys", 1)
    if len(section) != 2:
        raise ValueError("docs/architecture.md has no '## Pipeline configuration keys' section")
    settings: dict[str, str | None] = {}
    for line in section[1].split("\n## ", 1)[0].splitlines():
        if not line.startswith("|"):
            continue
        key_cell, default_cell, *_ = _markdown_cells(line)
        keys = re.findall(r"`([^`]+)`", key_cell)
        if not keys:  # header and separator rows
            continue
        full_keys: list[str] = []
        for key in keys:
            sibling_of = full_keys[-1].rsplit(".", 1)[0] if key.startswith(".") else ""
            full_keys.append(sibling_of + key)
        defaults = re.findall(r"`([^`]*)`", default_cell)
        if defaults and len(defaults) != len(full_keys):
            raise ValueError(f"cannot pair keys {full_keys} with defaults {defaults} in: {line}")
        settings.update(zip(full_keys, defaults or [None] * len(full_keys), strict=True))
    return settings


_CREDENTIAL_KEY = re.compile(
    r"password|passwd|jaas|sasl|token|api[_-]?key|private[_-]?key|credential|secret(?![_.-]?scope)",
    re.IGNORECASE,
)
_CREDENTIAL_TEXT = re.compile(
    r"LoginModule"  # the body of a sasl.jaas.config
    r"|password\s*[=:]\s*\S"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----"
    r"|\bdapi[0-9a-f]{32}\b",  # Databricks personal access token
    re.IGNORECASE,
)


def credential_findings(document: Any, raw_text: str) -> list[str]:
    """Keys or values that look like credentials; a secret scope *name* is fine.

    The raw text is scanned as well so that a credential in a YAML comment is caught too.
    """
    findings: list[str] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, Mapping):
            for key, value in node.items():
                child = f"{path}.{key}"
                if _CREDENTIAL_KEY.search(str(key)):
                    findings.append(f"{child}: credential-like key")
                walk(value, child)
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{path}[{index}]")
        elif isinstance(node, str) and _CREDENTIAL_TEXT.search(node):
            findings.append(f"{path}: credential-like value")

    walk(document, "$")
    for number, line in enumerate(raw_text.splitlines(), start=1):
        if _CREDENTIAL_TEXT.search(line):
            findings.append(f"line {number}: credential-like text")
    return findings
