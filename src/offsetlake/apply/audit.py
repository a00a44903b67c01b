"""The ``apply_audit`` table: every plan row and every result, queryable beside the gold tables.

A run appends its plan rows (stage ``plan``) before altering anything and, for every plan row, a
result (stage ``result``) afterwards, also when it stopped early or was interrupted. If a run dies
in between anyway (SIGKILL), its plan is still visible, and the rerun finds the target already at
the planned offsets and converges to ``noop``. The verified results are also the memory of what
was applied: a later run refuses translations older than those.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from offsetlake.apply.executor import Outcome, PartitionResult
from offsetlake.apply.gold import narrowed
from offsetlake.apply.planner import Action, GroupPartition, PlanRow, Selection
from offsetlake.contract.gold import LastApplied, from_micros, table_name
from offsetlake.contract.tables import APPLY_AUDIT, APPLY_AUDIT_ADDED

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

AUDIT_TABLE = APPLY_AUDIT.name
DRY_RUN_ACTION = "dry_run"


class Mode(StrEnum):
    DRY_RUN = "dry_run"
    APPLY = "apply"
    FAILOVER = "failover"
    """An apply the failover made: the groups it placed are held from every later sync."""
    RESUME = "resume"
    """An apply an operator made to hand the groups it selects back to the sync (``--resume-sync``)."""


COMMITTING_MODES = (Mode.APPLY, Mode.FAILOVER, Mode.RESUME)
"""The modes whose verified results are commits on the target (the memory of what was applied)."""


class Stage(StrEnum):
    PLAN = "plan"
    RESULT = "result"


class Direction(StrEnum):
    """Which way a run moves groups: onto the cluster a flow replicates to (``failover``: every
    plan, apply and failover), or back to the one it replicates from (``failback``)."""

    FAILOVER = "failover"
    FAILBACK = "failback"


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    mode: Mode
    started_at: datetime
    as_of: datetime | None
    direction: Direction = Direction.FAILOVER


def audit_table_name(schema: str, catalog: str | None = None) -> str:
    return table_name(AUDIT_TABLE, schema, catalog)


def plan_records(plan: Sequence[PlanRow], run: RunInfo) -> list[tuple[Any, ...]]:
    """Audit rows for a plan; a dry run records ``dry_run`` as the action and the verdict beside it."""
    recorded_at = datetime.now(UTC)
    action_override = DRY_RUN_ACTION if run.mode is Mode.DRY_RUN else None
    return [
        _record(
            run,
            stage=Stage.PLAN,
            row=row,
            action=action_override or row.action.value,
            result=None,
            recorded_at=recorded_at,
        )
        for row in plan
    ]


def result_records(
    plan: Sequence[PlanRow], results: Sequence[PartitionResult], run: RunInfo
) -> list[tuple[Any, ...]]:
    """One result row per plan row: the executor's outcome for an altering row; for any other row
    the outcome is its action (``noop``, ``skip_stale`` ...), which is all that happened to it."""
    by_key = {result.row.key: result for result in results}
    recorded_at = datetime.now(UTC)
    return [
        _record(
            run,
            stage=Stage.RESULT,
            row=row,
            action=row.action.value,
            result=by_key.get(row.key),
            recorded_at=by_key[row.key].finished_at if row.key in by_key else recorded_at,
        )
        for row in plan
    ]


def append_audit(spark: SparkSession, table: str, records: Iterable[tuple[Any, ...]]) -> int:
    """Append rows (creating the table in the session's default format on first use)."""
    records = list(records)
    if records:
        add_missing_columns(spark, table)
        spark.createDataFrame(records, audit_schema()).write.mode("append").saveAsTable(table)
    return len(records)


def add_missing_columns(spark: SparkSession, table: str) -> None:
    """An existing audit table created before APPLY_AUDIT_ADDED gains them (NULL in its older rows)."""
    if not spark.catalog.tableExists(table.replace("`", "")):
        return
    present = set(spark.table(table).columns)
    missing = [
        f"`{name}` {kind}"
        for name, kind, _ in APPLY_AUDIT.columns
        if name in APPLY_AUDIT_ADDED and name not in present
    ]
    if missing:
        spark.sql(f"ALTER TABLE {table} ADD COLUMNS ({', '.join(missing)})")


def read_last_applied(
    spark: SparkSession, table: str, selection: Selection | None = None
) -> dict[GroupPartition, LastApplied]:
    """Per group-partition, the translation most recently applied and verified, and when; the
    audit grows with every run, so rows ``selection`` rules out stay in storage (gold.narrowed).

    The most recent, not the newest: after a deliberate restore (--as-of --allow-rewind), later
    runs compare against the restored translation.
    """
    from pyspark.sql import functions as sf

    if not spark.catalog.tableExists(table.replace("`", "")):
        return {}
    rows = (
        narrowed(spark.table(table), selection)
        .where(sf.col("mode").isin([mode.value for mode in COMMITTING_MODES]))
        .where(f"stage = '{Stage.RESULT}' AND verified")
        .groupBy("consumer_group", "topic", "partition")
        .agg(
            sf.expr("max_by(unix_micros(source_timestamp), recorded_at)").alias("applied_micros"),
            sf.expr("unix_micros(max(recorded_at))").alias("committed_micros"),
            sf.expr("max_by(read_back_offset, recorded_at)").alias("read_back_offset"),
        )
        .collect()
    )
    return {
        (row["consumer_group"], row["topic"], row["partition"]): LastApplied(
            from_micros(row["applied_micros"]), from_micros(row["committed_micros"]), row["read_back_offset"]
        )
        for row in rows
        if row["applied_micros"] is not None
    }


HOLD_COLUMNS = ("consumer_group", "mode", "stage", "verified", "outcome")
"""What the hold rule reads of the audit's failover and resume rows, with the newest recorded_at of each."""
HOLD_MODES = (Mode.FAILOVER, Mode.RESUME)


def failover_holds(
    newest: Iterable[tuple[str, str, str, bool | None, str | None, datetime | None]],
    selection: Selection | None,
) -> dict[str, datetime]:
    """Group -> when a failover last placed it, for the selected groups no operator resumed since:
    every apply but a failover's leaves them alone (a redeploy, a manual run, a missed pause cannot
    undo a failover). ``newest``: HOLD_COLUMNS and the newest recorded_at, per distinct HOLD_COLUMNS
    of the rows in HOLD_MODES. A failover counts where it placed a partition (verified, or already
    there); a resume by any of its rows."""
    failed_over: dict[str, datetime] = {}
    resumed: dict[str, datetime] = {}
    for group, mode, stage, verified, outcome, recorded_at in newest:
        if recorded_at is None or (selection is not None and not selection.selects_group(group)):
            continue
        if mode == Mode.RESUME:
            resumed[group] = max(recorded_at, resumed.get(group, recorded_at))
        elif mode == Mode.FAILOVER and stage == Stage.RESULT and (verified or outcome == Action.NOOP):
            failed_over[group] = max(recorded_at, failed_over.get(group, recorded_at))
    return {group: at for group, at in failed_over.items() if group not in resumed or resumed[group] < at}


def read_failover_holds(
    spark: SparkSession, table: str, selection: Selection | None = None
) -> dict[str, datetime]:
    """:func:`failover_holds` over the audit table (none when it does not exist yet)."""
    from pyspark.sql import functions as sf

    if not spark.catalog.tableExists(table.replace("`", "")):
        return {}
    rows = (
        spark.table(table)
        .where(sf.col("mode").isin([mode.value for mode in HOLD_MODES]))
        .groupBy(*HOLD_COLUMNS)
        .agg(sf.expr("unix_micros(max(recorded_at))").alias("micros"))
        .collect()
    )
    newest = [
        (
            *(row[column] for column in HOLD_COLUMNS),
            None if row["micros"] is None else from_micros(row["micros"]),
        )
        for row in rows
    ]
    return failover_holds(newest, selection)  # type: ignore[arg-type]


def _record(
    run: RunInfo,
    *,
    stage: Stage,
    row: PlanRow,
    action: str,
    result: PartitionResult | None,
    recorded_at: datetime,
) -> tuple[Any, ...]:
    """One audit row, in APPLY_AUDIT's column order."""
    return (
        run.run_id,
        run.mode.value,
        stage.value,
        row.source_cluster,
        row.consumer_group,
        row.topic,
        row.partition,
        row.current_offset,
        row.translated_offset,
        row.planned_offset,
        result.applied_offset if result else None,
        result.read_back_offset if result else None,
        result.outcome is Outcome.APPLIED if result else None,
        action,
        row.action.value,
        result.outcome.value if result else (row.action.value if stage is Stage.RESULT else None),
        row.reason,
        result.error if result else None,
        row.records_reread,
        row.records_skipped,
        row.source_timestamp,
        run.as_of,
        run.started_at,
        recorded_at,
        run.direction.value,
    )


def audit_schema() -> StructType:
    """apply_audit's columns as a Spark schema (the contract's APPLY_AUDIT)."""
    from pyspark.sql.types import StructType

    return StructType.fromDDL(APPLY_AUDIT.spark_schema)
