"""One home type: every function of the product that takes the local home takes a ``LocalHome``.

A home passed as a ``Path`` here and a ``LocalHome`` there was re-wrapped (``LocalHome(path)``),
unwrapped (``.root``) and resolved again on the way down, up to three times in one failover. The
scan holds the type; the command tests hold the resolution: once per command (cli/context.py).
"""

from __future__ import annotations

import ast
import io
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

import offsetlake
from offsetlake.apply.run import ApplyRequest, ApplyResult, ApplyStatus
from offsetlake.apply.store import GoldStore
from offsetlake.cli import failover as cli_failover
from offsetlake.cli import stores
from offsetlake.cli.context import Context
from offsetlake.cli.main import run_command
from offsetlake.failover import run as failover_run
from offsetlake.local import pipeline_update
from offsetlake.local.home import LocalHome
from tests.unit.test_phase_times import ClosableEmptyGold

SRC = Path(offsetlake.__file__).parent
HOME_PY = SRC / "local" / "home.py"
HOME_NAMES = frozenset({"home", "home_root", "home_dir", "home_path", "layout"})
RESOLVED_IN = {
    # the command's home, resolved once (every command handler takes it from its Context)
    SRC / "cli" / "context.py",
    # callers outside a command (the development harness, notebooks, tests) name no home
    SRC / "local" / "spark.py",
    SRC / "local" / "clusters.py",
}


def _modules() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(SRC.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"))


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(SRC.parent)}:{getattr(node, 'lineno', 0)}"


def test_no_parameter_or_field_holding_a_home_is_a_path() -> None:
    found = []
    for path, module in _modules():
        for node in ast.walk(module):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
                named = [(argument.arg, argument.annotation) for argument in arguments]
            elif isinstance(node, ast.ClassDef):
                named = [
                    (statement.target.id, statement.annotation)
                    for statement in node.body
                    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
                ]
            else:
                continue
            for name, annotation in named:
                text = ast.unparse(annotation) if annotation is not None else ""
                if name in HOME_NAMES and "LocalHome" not in text:
                    found.append(f"{_where(path, node)} {name}: {text or 'unannotated'}")
    assert found == [], "a home is a LocalHome (offsetlake.local.home), never a Path"


def test_a_home_is_never_rewrapped_unwrapped_or_resolved_again_on_the_way_down() -> None:
    found = []
    for path, module in _modules():
        if path == HOME_PY:
            continue
        for node in ast.walk(module):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "LocalHome":
                found.append(f"{_where(path, node)} LocalHome(...): re-wrapped")
            elif isinstance(node, ast.Call) and ast.unparse(node.func).endswith("LocalHome.resolve"):
                if path not in RESOLVED_IN:
                    found.append(f"{_where(path, node)} LocalHome.resolve(): resolved again")
            elif isinstance(node, ast.Call) and ast.unparse(node.func) == "local_home":
                found.append(f"{_where(path, node)} local_home(): a home as a Path")
            elif isinstance(node, ast.Attribute) and node.attr == "root":
                found.append(
                    f"{_where(path, node)} {ast.unparse(node)}: unwrapped (ask LocalHome for the path)"
                )
    assert found == []


@pytest.fixture
def resolutions(offsetlake_home: Path, monkeypatch: pytest.MonkeyPatch) -> list[LocalHome]:
    """Every home ``LocalHome.resolve`` gives from now on."""
    resolved: list[LocalHome] = []
    resolve = LocalHome.resolve.__func__  # type: ignore[attr-defined]

    def counted(cls: type[LocalHome], root: Path | None = None) -> LocalHome:
        resolved.append(resolve(cls, root))
        return resolved[-1]

    monkeypatch.setattr(LocalHome, "resolve", classmethod(counted))
    return resolved


def test_a_failover_resolves_its_home_once_for_the_stand_aside_the_refresh_and_the_apply(
    resolutions: list[LocalHome], offsetlake_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The refresh's engine (``--refresh always``) is a stand-in that completes at once (as in
    test_failover_refresh.py); no cluster is probed; the apply is faked at ``run_apply``."""
    engine = offsetlake_home / "engine.py"
    engine.write_text("print('Run is COMPLETED', flush=True)\n")
    monkeypatch.setattr(pipeline_update, "spark_pipelines_command", lambda *_: [sys.executable, str(engine)])
    monkeypatch.setattr(pipeline_update, "target_backlog", lambda *_args, **_kwargs: None)
    monkeypatch.setattr(cli_failover, "endpoints", lambda _clusters: ())
    stored: list[LocalHome | None] = []

    def gold_store_for(request: ApplyRequest, home: LocalHome | None) -> GoldStore:
        stored.append(home)
        return ClosableEmptyGold()  # type: ignore[return-value]

    def fake_apply(apply: ApplyRequest, **_: object) -> ApplyResult:
        return ApplyResult(apply, "run", ApplyStatus.OK, "target", "audit", datetime.now(UTC))

    monkeypatch.setattr(stores, "gold_store_for", gold_store_for)
    monkeypatch.setattr(failover_run, "run_apply", fake_apply)
    out, err = io.StringIO(), io.StringIO()

    code = run_command(
        ["failover", "--refresh", "always", "--target", "localhost:1", "--source", "east=localhost:2"],
        Context(out=out, err=err),
    )

    assert code == 0, err.getvalue()
    assert "refresh: completed" in out.getvalue()
    assert [home.root for home in resolutions] == [offsetlake_home.resolve()]
    assert stored == resolutions


def test_a_plan_resolves_its_home_once(resolutions: list[LocalHome], offsetlake_home: Path) -> None:
    """An empty home: the plan reads gold, finds no translation and ends before the target."""
    err = io.StringIO()
    assert run_command(["plan", "--target", "localhost:1"], Context(out=io.StringIO(), err=err)) == 0
    assert "no translation in gold" in err.getvalue()
    assert [home.root for home in resolutions] == [offsetlake_home.resolve()]
