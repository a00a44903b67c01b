"""The audit journal: audit rows a local run without Spark wrote, until an explicit fold appends them.

``apply_audit`` is a table of the local Derby metastore, which only Spark can create or append to,
and a local failover must not wait for a JVM. A run on the local gold store
(offsetlake.local.warehouse_gold) therefore writes each batch of audit rows (a run's plan, or its
results) as one Parquet file in the home's journal (``LocalHome.audit_journal_for(schema)``) named
``<run_id>.<stage>.parquet``: under a temporary name, fsynced, renamed, so a crash never leaves half
a file. ``(run_id, stage)`` is the batch's id; every row of the file carries it.

:func:`fold_journal` appends the journal's files to ``apply_audit`` through a Spark session and
removes them. Opening a session never does (offsetlake.sessions.get_spark writes no table): every
local command that reads through Spark folds first, as an explicit step (``offsetlake sql``,
``plan|apply --catalog``, ``mm2 reset``, the demo), so every Spark query sees every row. A fold is
all-or-nothing and idempotent (see :func:`fold_journal`).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pyarrow as pa
import pyarrow.parquet as pq

from offsetlake.apply import audit
from offsetlake.contract.tables import APPLY_AUDIT, APPLY_AUDIT_ADDED
from offsetlake.errors import ExternalError
from offsetlake.local.home import LocalHome

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

BATCH_ID: Final = ("run_id", "stage")
"""What names one journal file's batch; a fold appends a batch whole or not at all."""
AUDIT_SCHEMA: Final = APPLY_AUDIT.arrow_schema
"""apply_audit's columns as Arrow types: what a journal file holds."""


class AuditNotFoldedError(ExternalError):
    """Journal rows could not be appended to ``apply_audit``; they stay where they are."""


def journal_files(home: LocalHome, schema: str) -> list[Path]:
    """The journal files of ``schema``, oldest name first (a file being written has a hidden
    temporary name, and one set aside as unreadable another suffix: neither is listed)."""
    directory = home.audit_journal_for(schema)
    if not directory.is_dir():
        return []
    return sorted(path for path in directory.glob("*.parquet") if not path.name.startswith("."))


def journal_file_name(run_id: str, stage: str) -> str:
    """One file per audit batch: a run writes its plan once and its results once. Written again
    (the same batch), the file is replaced, never doubled."""
    return f"{run_id}.{stage}.parquet"


def write_journal(home: LocalHome, schema: str, records: Sequence[tuple[Any, ...]]) -> list[Path]:
    """Write audit ``records`` (APPLY_AUDIT's column order) as one Parquet file per (run_id, stage)
    they hold, each atomically: a temporary name, fsync, rename, fsync of the directory."""
    batches: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
    run_id_at, stage_at = (AUDIT_SCHEMA.get_field_index(name) for name in BATCH_ID)
    for record in records:
        batches.setdefault((record[run_id_at], record[stage_at]), []).append(record)
    directory = home.audit_journal_for(schema)
    written = []
    for (run_id, stage), batch in batches.items():
        directory.mkdir(parents=True, exist_ok=True)
        table = pa.Table.from_arrays(
            [
                pa.array(column, field.type)
                for column, field in zip(zip(*batch, strict=True), AUDIT_SCHEMA, strict=True)
            ],
            schema=AUDIT_SCHEMA,
        )
        written.append(write_atomically(table, directory / journal_file_name(run_id, stage)))
    return written


def write_atomically(table: pa.Table, path: Path) -> Path:
    """``table`` as the Parquet file ``path``, which either does not exist or is whole: written as a
    hidden temporary file (readers skip names starting with '.'), fsynced, renamed over ``path``,
    and the rename made durable by an fsync of the directory."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with temporary.open("wb") as file:
            pq.write_table(table, file)
            file.flush()
            os.fsync(file.fileno())
        temporary.replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    _fsync_directory(path.parent)
    return path


def journal_schemas(home: LocalHome) -> list[str]:
    """The schemas with journal files in ``home``."""
    root = home.audit_journal
    if not root.is_dir():
        return []
    return sorted(path.name for path in root.iterdir() if path.is_dir() and journal_files(home, path.name))


def fold_journal(spark: SparkSession, home: LocalHome) -> int:
    """Append every journal file of ``home`` to its schema's ``apply_audit`` through
    ``spark`` (creating the table when missing), then remove it; the number of files folded.

    All-or-nothing: a schema's files are appended in one Spark write of one Parquet file, which the
    commit moves into the table with a single rename, so a crash leaves all of their rows in the
    table or none. Idempotent: only batches (run_id, stage) the table does not hold yet are
    appended, and a file is removed only after its rows are in the table; a fold that died between
    its append and the removal leaves the files, and the next fold adds nothing and removes them.
    A file that cannot be read as audit rows is moved aside (``.unreadable``), never deleted, and
    named on stderr. A failure of Spark or of the removal is ``AuditNotFoldedError``, naming
    where the rows wait.
    """
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    folded = 0
    for schema in journal_schemas(home):
        files = [path for path in journal_files(home, schema) if _readable(path)]
        if not files:
            continue
        try:
            _append_missing(spark, schema, files)
            _remove(files)
        except (PySparkException, Py4JError, OSError) as error:
            raise AuditNotFoldedError(
                f"{len(files)} audit file(s) could not be folded into {audit.audit_table_name(schema)} "
                f"({_first_line(error)}); {journal_note(home)}"
            ) from error
        folded += len(files)
    return folded


def fold_before_queries(spark: SparkSession, home: LocalHome, schema: str) -> str | None:
    """Fold the journal and make sure ``schema``'s ``apply_audit`` exists, so a query sees
    every audited run (and an empty audit, never a missing table, where a run planned nothing).

    A fold that fails is not the query's failure: its reason, naming where the rows wait, is
    returned for the caller to print, else None.
    """
    from pyspark.errors import PySparkException

    try:
        fold_journal(spark, home)
        create_audit_table(spark, schema)
    except AuditNotFoldedError as error:
        return str(error)
    except PySparkException as error:
        return f"{audit.audit_table_name(schema)} could not be created ({_first_line(error)})"
    return None


def create_audit_table(spark: SparkSession, schema: str) -> None:
    """``<schema>.apply_audit``, empty, unless it exists: Parquet, which the local gold store reads, and
    by DDL, which writes no data. (Created by an append instead, Spark writes the data before it
    registers the table: a crash in between leaves files no table owns, and every later create
    there fails with LOCATION_ALREADY_EXISTS.)"""
    table = audit.audit_table_name(schema)
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS `{schema}`")
    spark.sql(f"CREATE TABLE IF NOT EXISTS {table} ({APPLY_AUDIT.spark_schema}) USING parquet")
    audit.add_missing_columns(spark, table)


def journal_note(home: LocalHome) -> str:
    """Where the audit rows of runs without Spark wait, in words for a report or an error line."""
    return (
        f"audit rows not yet in apply_audit wait in {home.audit_journal} (Parquet files, one per run "
        "and stage); the next local Spark session (offsetlake sql) folds them in"
    )


def _append_missing(spark: SparkSession, schema: str, files: Sequence[Path]) -> None:
    """The rows of ``files`` whose batch the table lacks, appended in one file (one commit)."""
    table = audit.audit_table_name(schema)
    create_audit_table(spark, schema)
    journal = spark.read.schema(audit.audit_schema()).parquet(*(str(path) for path in files))
    present = spark.table(table).select(*BATCH_ID).distinct()
    missing = journal.join(present, list(BATCH_ID), "left_anti").select(*AUDIT_SCHEMA.names)
    missing.coalesce(1).write.mode("append").saveAsTable(table)


def _remove(files: Sequence[Path]) -> None:
    """Remove folded files, durably (their rows are in the table by now)."""
    for path in files:
        path.unlink(missing_ok=True)
    for directory in {path.parent for path in files}:
        _fsync_directory(directory)


def _readable(path: Path) -> bool:
    """Whether ``path`` holds audit rows (every audit column); else it is set aside and named."""
    try:
        names = pq.read_schema(path).names
        # A file written before APPLY_AUDIT_ADDED lacks them.
        if all(name in names or name in APPLY_AUDIT_ADDED for name in AUDIT_SCHEMA.names):
            return True
        problem = "it lacks audit columns"
    except (OSError, pa.ArrowException) as error:
        problem = str(error)
    aside = path.with_name(path.name + ".unreadable")
    path.replace(aside)
    print(
        f"offsetlake: audit journal file {path} cannot be folded ({problem}); moved to {aside}",
        file=sys.stderr,
    )
    return False


def _fsync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]
