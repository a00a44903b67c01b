"""The features run where they are told (issue 35): ``apply/`` never looks for a local home or asks
whether it runs on Databricks, and neither it nor ``mm2_reset/`` opens a Spark session of its own;
the entry points (cli/stores.py) decide and pass the store or session in."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "offsetlake"
FEATURES = sorted([*PACKAGE.glob("apply/*.py"), *PACKAGE.glob("mm2_reset/*.py")])
ASKING = {"on_databricks", "local_home", "get_spark", "get_local_spark", "command_home"}
"""Calls that find where a command runs, its home or its session."""
ABOVE_APPLY = ("offsetlake.local", "offsetlake.sessions", "offsetlake.failover", "offsetlake.cli")
ABOVE_FEATURES = ("offsetlake.sessions", "offsetlake.failover", "offsetlake.cli", "offsetlake.local.spark")


def imported(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def called(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            function = node.func
            names.add(function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", ""))
    return names


@pytest.mark.parametrize("path", FEATURES, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_a_feature_module_is_handed_its_store_session_and_home(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    above = ABOVE_APPLY if path.parent.name == "apply" else ABOVE_FEATURES
    assert not {name for name in imported(tree) if name.startswith(above)}
    assert not called(tree) & ASKING


def test_the_check_sees_the_modules() -> None:
    assert {"run.py", "store.py"} <= {path.name for path in FEATURES if path.parent.name == "apply"}
    assert "run.py" in {path.name for path in FEATURES if path.parent.name == "mm2_reset"}
