"""The floors docs/architecture.md states ("Imports run downward only"), held by import-linter's
contracts in pyproject.toml ([tool.importlinter]). Every import counts, those inside a function or
under TYPE_CHECKING too: a function-level import is how a loop hides from a reader of the file's head."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGE = REPO_ROOT / "src" / "offsetlake"
LINT = (
    "import sys\n"
    "from importlinter.cli import lint_imports\n"
    "sys.exit(lint_imports(no_cache=True, no_logo=True))\n"
)


def lint(python_path: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on pyproject.toml's contracts, with ``offsetlake`` found under ``python_path``."""
    return subprocess.run(
        [sys.executable, "-c", LINT],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(python_path)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_stated_floors_hold() -> None:
    completed = lint(REPO_ROOT / "src")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "0 broken" in completed.stdout


@pytest.mark.parametrize(
    ("module", "added", "broken"),
    [
        (
            "kafka/admin.py",
            "\n\ndef _upward() -> None:\n    from offsetlake.cli import render  # noqa: F401\n",
            "offsetlake.kafka.admin -> offsetlake.cli.render",
        ),
        (
            "mirror/clusters.py",
            "\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
            "    from offsetlake.contract import settings\n",
            "offsetlake.mirror.clusters -> offsetlake.contract.settings",
        ),
        (
            "apply/planner.py",
            "\n\ndef _loop() -> None:\n    from offsetlake.apply import run  # noqa: F401\n",
            "No cycles are allowed in offsetlake.apply",
        ),
        ("floor/__init__.py", '"""A new top-level package, on no floor."""\n', "offsetlake.floor"),
    ],
    ids=["upward-in-a-function", "upward-under-type-checking", "loop-in-a-function", "undeclared-package"],
)
def test_a_new_upward_import_loop_or_package_breaks_the_floors(
    tmp_path: Path, module: str, added: str, broken: str
) -> None:
    """The same contracts on a copy of the package with one import (or package) added."""
    copy = tmp_path / "offsetlake"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    path = copy / module
    path.parent.mkdir(exist_ok=True)
    with path.open("a", encoding="utf-8") as file:
        file.write(added)
    completed = lint(tmp_path)
    assert completed.returncode == 1, completed.stdout + completed.stderr
    assert broken in completed.stdout


def test_the_contract_is_the_order_the_architecture_states() -> None:
    """docs/architecture.md's sentence and the layers contract name the same floors, in one order."""
    contracts = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "importlinter"
    ]
    (floors,) = [contract for contract in contracts["contracts"] if contract["type"] == "layers"]
    declared = [set(re.split(r"\s*[:|]\s*", layer)) for layer in reversed(floors["layers"])]
    packages = {path.stem for path in PACKAGE.iterdir() if path.name != "__init__.py"}
    text = " ".join((REPO_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").split())
    sentence = re.search(r"Imports run downward only: (.*?) on top", text)
    assert sentence is not None
    stated = [set(re.findall(r"[a-z_0-9]+", floor)) & packages for floor in sentence.group(1).split(";")]
    assert stated == declared
