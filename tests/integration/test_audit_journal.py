"""The audit a run without Spark leaves pending is where its report says: ``offsetlake sql`` folds it
into ``apply_audit`` before any query, and a fold is all-or-nothing and idempotent (one commit of
one file; a fold that died before removing its files adds nothing twice when run again)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from offsetlake.apply.store import SparkGoldStore
from offsetlake.contract.tables import APPLY_AUDIT, APPLY_AUDIT_ADDED
from offsetlake.local import audit_journal
from offsetlake.local.audit_journal import (
    AuditNotFoldedError,
    fold_before_queries,
    fold_journal,
    journal_files,
)
from offsetlake.local.home import HOME_ENV, LocalHome
from offsetlake.local.warehouse_gold import LocalGoldStore
from tests.integration.test_gold_stores import at, audit_records, schema_name, warehouse_of

pytestmark = pytest.mark.spark

COUNTS = "SELECT run_id, stage, count(*) AS n FROM offsetlake.apply_audit GROUP BY 1, 2 ORDER BY 1, 2"
# `offsetlake sql` in a process whose fold dies after its append, before it removes the files.
SQL_WITH_REMOVAL_FAILING = """
import sys
from offsetlake.local import audit_journal
from offsetlake.cli.main import main

def removal_dies(files):
    raise OSError("No space left on device")

audit_journal._remove = removal_dies
sys.exit(main(sys.argv[1:]))
"""


def test_a_fold_is_one_commit_and_a_fold_that_died_before_removing_adds_nothing_twice(
    spark: SparkSession, unique_name: Callable[[str], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    schema = schema_name(unique_name, "fold")
    store = LocalGoldStore(LocalHome(tmp_path), schema, warehouse=warehouse_of(spark))
    runs = [f"run-{index:02}" for index in range(12)]
    for index, run_id in enumerate(runs):
        store.append_audit(audit_records(run_id, at(index + 1), at(index)))
    waiting = journal_files(LocalHome(tmp_path), schema)
    assert len(waiting) == 2 * len(runs)
    table_dir = warehouse_of(spark) / f"{schema}.db" / "apply_audit"

    def removal_dies(files: Sequence[Path]) -> None:
        raise OSError("No space left on device")

    monkeypatch.setattr(audit_journal, "_remove", removal_dies)
    unfolded = r"24 audit file\(s\) could not be folded.*No space left"
    with pytest.raises(AuditNotFoldedError, match=unfolded) as e:
        fold_journal(spark, LocalHome(tmp_path))
    assert str(tmp_path / "audit-pending") in str(e.value)
    # Every row is in the table, written by one commit of one file (a single rename: all or none).
    assert len([path for path in table_dir.iterdir() if path.name.startswith("part-")]) == 1
    assert journal_files(LocalHome(tmp_path), schema) == waiting

    monkeypatch.undo()
    assert fold_journal(spark, LocalHome(tmp_path)) == len(waiting)

    assert journal_files(LocalHome(tmp_path), schema) == []
    rows = spark.sql(f"SELECT run_id, stage, consumer_group, partition FROM `{schema}`.apply_audit").collect()
    assert len(rows) == 6 * len(runs)
    assert Counter(tuple(row) for row in rows).most_common(1)[0][1] == 1  # each row exactly once
    assert {row["run_id"] for row in rows} == set(runs)
    assert fold_journal(spark, LocalHome(tmp_path)) == 0
    assert SparkGoldStore(spark, schema).last_applied() == store.last_applied() != {}


def test_queries_find_an_audit_table_and_are_told_when_it_cannot_be_made(
    spark: SparkSession, unique_name: Callable[[str], str], tmp_path: Path
) -> None:
    """No run audited yet: an empty apply_audit, not TABLE_OR_VIEW_NOT_FOUND. Files no table owns
    where it would live (an append that died creating it): the reason, for the queries' output."""
    schema = schema_name(unique_name, "empty_audit")
    assert fold_before_queries(spark, LocalHome(tmp_path), schema) is None
    assert spark.sql(f"SELECT count(*) FROM `{schema}`.apply_audit").first()[0] == 0

    orphaned = schema_name(unique_name, "orphaned_audit")
    location = warehouse_of(spark) / f"{orphaned}.db" / "apply_audit"
    location.mkdir(parents=True)
    (location / "part-00000.parquet").write_bytes(b"PAR1")
    reason = fold_before_queries(spark, LocalHome(tmp_path), orphaned)
    assert reason is not None
    assert reason.startswith(f"`{orphaned}`.`apply_audit` could not be created ([LOCATION_ALREADY_EXISTS]")


def test_an_audit_table_from_before_the_direction_column_gains_it_and_keeps_its_rows(
    spark: SparkSession, unique_name: Callable[[str], str], tmp_path: Path
) -> None:
    """apply_audit created without ``direction`` (issue 48 added it): the fold adds the column (its
    older rows NULL) and appends the new rows; a journal file written before it is folded too."""
    schema = schema_name(unique_name, "old_audit")
    kept = tuple(column for column in APPLY_AUDIT.columns if column[0] not in APPLY_AUDIT_ADDED)
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS `{schema}`")
    columns = replace(APPLY_AUDIT, columns=kept).spark_schema
    spark.sql(f"CREATE TABLE `{schema}`.apply_audit ({columns}) USING parquet")
    spark.sql(f"INSERT INTO `{schema}`.apply_audit (run_id, mode, stage) VALUES ('run-old', 'apply', 'plan')")
    home = LocalHome(tmp_path)
    LocalGoldStore(home, schema, warehouse=warehouse_of(spark)).append_audit(
        audit_records("run-new", at(2), at(1))
    )
    (written,) = [path for path in journal_files(home, schema) if ".plan." in path.name]
    pq.write_table(pq.read_table(written).drop_columns(["direction"]), written)  # from before the column

    assert fold_journal(spark, home) == 2

    rows = spark.sql(f"SELECT run_id, direction FROM `{schema}`.apply_audit").collect()
    assert {(row["run_id"], row["direction"]) for row in rows} == {
        ("run-old", None),
        ("run-new", None),
        ("run-new", "failover"),
    }


def _sql(home: Path, *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *command, "sql", "--json", COUNTS],
        env={**os.environ, HOME_ENV: str(home)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _counts(completed: subprocess.CompletedProcess[str]) -> list[list[object]]:
    assert completed.returncode == 0, completed.stderr[-3000:]
    (result,) = json.loads(completed.stdout)
    assert result["columns"] == ["run_id", "stage", "n"]
    return [list(row) for row in result["rows"]]


def test_offsetlake_sql_sees_the_audit_a_run_without_spark_left_pending(tmp_path: Path) -> None:
    """A local failover's audit (the Arrow store's pending files) through `offsetlake sql`: once,
    also after a fold that died before removing its files, which the output then names."""
    home = tmp_path / "home"
    store = LocalGoldStore(LocalHome(home))
    store.append_audit(audit_records("run-1", at(10), at(9)))
    store.append_audit(audit_records("run-2", at(20), at(19)))
    expected = [["run-1", "plan", 3], ["run-1", "result", 3], ["run-2", "plan", 3], ["run-2", "result", 3]]

    interrupted = _sql(home, "-c", SQL_WITH_REMOVAL_FAILING)
    assert _counts(interrupted) == expected
    assert "folded into `offsetlake`.`apply_audit` (No space left on device)" in interrupted.stderr
    assert f"wait in {home / 'audit-pending'}" in interrupted.stderr
    assert len(journal_files(LocalHome(home), "offsetlake")) == 4

    folded = _sql(home, "-m", "offsetlake.cli")
    assert _counts(folded) == expected
    assert "could not be folded" not in folded.stderr
    assert journal_files(LocalHome(home), "offsetlake") == []
    assert LocalGoldStore(LocalHome(home)).last_applied() == store.last_applied() != {}
