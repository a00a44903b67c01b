"""The pending audit journal without Spark: which schemas wait, that a busy home's `offsetlake sql`
says where the rows are, and that a Databricks session folds nothing from a local home."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from pathlib import Path

import pytest

from offsetlake.apply import audit
from offsetlake.apply.pending_audit import (
    BATCH_ID,
    fold_pending_audit,
    pending_audit_dir,
    pending_files,
    pending_schemas,
    write_pending_audit,
)
from offsetlake.apply.planner import Action, PlanRow
from offsetlake.cli.context import Context
from offsetlake.cli.main import run_command
from offsetlake.jobs import session
from offsetlake.local import sql
from offsetlake.local.locks import HomeInUseError

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def plan(run_id: str) -> list[tuple[object, ...]]:
    row = PlanRow("east", "app", "orders", 0, 5, 5, 3, Action.APPLY, "r", T0, "checkpoint")
    return audit.plan_records([row], audit.RunInfo(run_id, audit.Mode.APPLY, T0, None))


def test_the_schemas_waiting_are_those_with_a_pending_file(tmp_path: Path) -> None:
    write_pending_audit(tmp_path, "Offsetlake", plan("run-a"))
    write_pending_audit(tmp_path, "other", plan("run-b"))
    (pending_file,) = pending_files(tmp_path, "other")
    pending_file.rename(pending_file.with_name(pending_file.name + ".unreadable"))  # set aside
    pending_audit_dir(tmp_path, "empty").mkdir()

    assert pending_schemas(tmp_path) == ["offsetlake"]
    assert pending_schemas(tmp_path / "no-home") == []
    # A file is one batch, named by its batch id.
    assert [path.name for path in pending_files(tmp_path, "offsetlake")] == ["run-a.plan.parquet"]
    assert BATCH_ID == ("run_id", "stage")


def test_nothing_pending_is_folded_without_touching_spark(tmp_path: Path) -> None:
    pending_audit_dir(tmp_path, "offsetlake").mkdir(parents=True)
    assert fold_pending_audit(None, tmp_path) == 0  # type: ignore[arg-type]  # no session needed


def test_on_databricks_a_session_folds_nothing_from_a_local_home(
    monkeypatch: pytest.MonkeyPatch, offsetlake_home: Path
) -> None:
    write_pending_audit(offsetlake_home, "offsetlake", plan("run-a"))
    monkeypatch.setenv(session.RUNTIME_ENV, "17.3")

    assert session.fold_local_audit(None) == 0  # type: ignore[arg-type]  # never asked
    assert len(pending_files(offsetlake_home, "offsetlake")) == 1


@pytest.mark.parametrize("pending", [True, False])
def test_a_busy_home_makes_offsetlake_sql_say_where_the_pending_audit_waits(
    monkeypatch: pytest.MonkeyPatch, offsetlake_home: Path, pending: bool
) -> None:
    if pending:
        write_pending_audit(offsetlake_home, "offsetlake", plan("run-a"))

    def busy(home: Path | None = None) -> None:
        raise HomeInUseError(f"local home {home} is in use by process 4242 (java)")

    monkeypatch.setattr(sql, "sql_session", busy)
    err = io.StringIO()

    assert run_command(["sql", "SELECT * FROM offsetlake.apply_audit"], Context(err=err)) == 1

    (line,) = err.getvalue().splitlines()
    assert line.startswith(f"offsetlake sql: error: local home {offsetlake_home} is in use by process 4242")
    where = f"audit rows not yet in apply_audit wait in {offsetlake_home / 'audit-pending'}"
    assert (where in line) is pending
