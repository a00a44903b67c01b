"""The audit journal without Spark: which schemas wait, that a busy home's `offsetlake sql` says where
the rows are, that opening a session folds nothing (the local commands fold as a step of their own),
and that a Databricks session folds nothing from a local home."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from offsetlake import sessions
from offsetlake.apply import audit
from offsetlake.apply.planner import Action, PlanRow
from offsetlake.cli import stores
from offsetlake.cli.context import Context
from offsetlake.cli.main import run_command
from offsetlake.local import spark as local_spark
from offsetlake.local import sql
from offsetlake.local.audit_journal import (
    BATCH_ID,
    fold_journal,
    journal_files,
    journal_schemas,
    write_journal,
)
from offsetlake.local.home import LocalHome
from offsetlake.local.locks import HomeInUseError

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def plan(run_id: str) -> list[tuple[object, ...]]:
    row = PlanRow("east", "app", "orders", 0, 5, 5, 3, Action.APPLY, "r", T0, "checkpoint")
    return audit.plan_records([row], audit.RunInfo(run_id, audit.Mode.APPLY, T0, None))


def test_the_schemas_waiting_are_those_with_a_pending_file(tmp_path: Path) -> None:
    write_journal(LocalHome(tmp_path), "Offsetlake", plan("run-a"))
    write_journal(LocalHome(tmp_path), "other", plan("run-b"))
    (pending_file,) = journal_files(LocalHome(tmp_path), "other")
    pending_file.rename(pending_file.with_name(pending_file.name + ".unreadable"))  # set aside
    LocalHome(tmp_path).audit_journal_for("empty").mkdir()

    assert journal_schemas(LocalHome(tmp_path)) == ["offsetlake"]
    assert journal_schemas(LocalHome(tmp_path / "no-home")) == []
    # A file is one batch, named by its batch id.
    assert [path.name for path in journal_files(LocalHome(tmp_path), "offsetlake")] == ["run-a.plan.parquet"]
    assert BATCH_ID == ("run_id", "stage")


def test_nothing_pending_is_folded_without_touching_spark(tmp_path: Path) -> None:
    LocalHome(tmp_path).audit_journal_for("offsetlake").mkdir(parents=True)
    assert fold_journal(None, LocalHome(tmp_path)) == 0  # type: ignore[arg-type]  # no session needed


def test_on_databricks_a_session_folds_nothing_from_a_local_home(
    monkeypatch: pytest.MonkeyPatch, offsetlake_home: Path
) -> None:
    write_journal(LocalHome(offsetlake_home), "offsetlake", plan("run-a"))
    monkeypatch.setenv(sessions.RUNTIME_ENV, "17.3")
    session = Recording()
    monkeypatch.setattr(stores, "get_spark", lambda **_: session)

    assert stores.command_home(Context()) is None  # nothing local on Databricks
    assert stores.spark_for_audit(stores.command_home(Context())) is session
    assert session.calls == []  # never asked
    assert len(journal_files(LocalHome(offsetlake_home), "offsetlake")) == 1


class Recording:
    """Stands in for a local SparkSession and every object it hands out: records each method called."""

    def __init__(self, calls: list[str] | None = None) -> None:
        self.calls = [] if calls is None else calls

    def __getattr__(self, name: str) -> Recording:
        self.calls.append(name)
        return Recording(self.calls)

    def __call__(self, *args: object, **kwargs: object) -> Recording:
        return self

    def __iter__(self) -> Iterator[str]:
        """An empty collection (a table's columns, say)."""
        return iter(())


def test_opening_a_local_session_writes_no_table_and_the_explicit_step_folds_the_journal(
    monkeypatch: pytest.MonkeyPatch, offsetlake_home: Path
) -> None:
    """Issue 35: a getter never writes a table; the local commands fold the journal as a step of theirs."""
    home = LocalHome(offsetlake_home)
    write_journal(home, "offsetlake", plan("run-a"))
    monkeypatch.delenv(sessions.RUNTIME_ENV, raising=False)
    monkeypatch.delitem(sys.modules, sessions.RUNTIME_MODULE, raising=False)
    session = Recording()
    monkeypatch.setattr(local_spark, "get_local_spark", lambda *args, **kwargs: session)
    monkeypatch.setattr(audit, "audit_schema", lambda: "schema")  # StructType.fromDDL needs a JVM

    assert sessions.get_spark() is session
    assert session.calls == []  # apply_audit neither created nor appended to
    assert len(journal_files(home, "offsetlake")) == 1

    assert stores.spark_for_audit(stores.command_home(Context())) is session
    assert "saveAsTable" in session.calls  # the journal's rows appended to apply_audit
    assert journal_files(home, "offsetlake") == []


@pytest.mark.parametrize("pending", [True, False])
def test_a_busy_home_makes_offsetlake_sql_say_where_the_pending_audit_waits(
    monkeypatch: pytest.MonkeyPatch, offsetlake_home: Path, pending: bool
) -> None:
    if pending:
        write_journal(LocalHome(offsetlake_home), "offsetlake", plan("run-a"))

    def busy(home: Path | None = None) -> None:
        raise HomeInUseError(f"local home {home} is in use by process 4242 (java)")

    monkeypatch.setattr(sql, "sql_session", busy)
    err = io.StringIO()

    assert run_command(["sql", "SELECT * FROM offsetlake.apply_audit"], Context(err=err)) == 1

    (line,) = err.getvalue().splitlines()
    assert line.startswith(f"offsetlake sql: error: local home {offsetlake_home} is in use by process 4242")
    where = f"audit rows not yet in apply_audit wait in {offsetlake_home / 'audit-pending'}"
    assert (where in line) is pending
