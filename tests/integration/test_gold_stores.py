"""The two gold stores agree: gold tables written by Spark, read by SparkGoldStore (Databricks, and a
local run that names a catalog) and by LocalGoldStore (a local run: pyarrow, no JVM); every method,
value for value, with Spark's timestamps written as INT96 (its default) and as TIMESTAMP_MICROS.
The audit an Arrow run leaves pending is folded into apply_audit through Spark, once."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from offsetlake.apply import audit
from offsetlake.apply.executor import Outcome, PartitionResult
from offsetlake.apply.planner import Action, PlanRow, Selection
from offsetlake.apply.store import GoldStore, SparkGoldStore
from offsetlake.contract.gold import GoldOffset, GoldTableError, LastApplied
from offsetlake.contract.tables import (
    APPLY_AUDIT,
    BRONZE_CHECKPOINTS,
    CLUSTER_HEALTH,
    FAILOVER_DATA_LOSS,
    K2K_MAPPING_CONFLICTS,
    LATEST_OFFSETS,
    OFFSET_HISTORY,
    SILVER_OFFSET_SYNCS,
    TableSpec,
)
from offsetlake.local.audit_journal import fold_journal, journal_files
from offsetlake.local.home import HOME_ENV, LocalHome
from offsetlake.local.warehouse_gold import LocalGoldStore

pytestmark = pytest.mark.spark

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
SELECTIONS = (
    Selection(),
    Selection(groups="app|billing"),
    Selection(groups="app-.*"),
    Selection(topics="east.orders"),
    Selection(groups="app.*", exclude_groups="app-canary", topics="east\\..*"),
    Selection(groups=r"app-\d"),
)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def latest_rows() -> list[tuple[Any, ...]]:
    """latest_offsets (contract/tables.py order), with NULL method/metadata/upstream and odd instants."""
    rows = [
        ("east", "app", "east.orders", 0, 480, 500, "checkpoint", "", at(1), at(1), None, False, at(3)),
        ("east", "app", "east.orders", 1, 12, None, None, None, at(2), at(2), None, False, at(2.5)),
        ("west", "app", "east.orders", 1, 13, 14, "offset_sync", "m", at(2), at(2), None, True, None),
        ("east", "app-1", "east.orders", 0, 7, 9, "mapping", "x" * 40, at(-1e6), at(0), None, False, at(4)),
        ("east", "app-canary", "east.payments", 2, 0, 0, "checkpoint", "", at(5), at(5), None, False, at(5)),
        ("east", "billing", "invoices", 0, 99, 100, "checkpoint", "\u00e9", at(0.001), at(0), None, False,
         at(0.000001)),
    ]  # fmt: skip
    rows += [
        ("east", f"app-{index}", "east.orders", index % 3, index, index + 1, "checkpoint", "", at(index),
         at(index), None, False, at(index + 0.5))
        for index in range(2, 40)
    ]  # fmt: skip
    return rows


def history_rows() -> list[tuple[Any, ...]]:
    """offset_history: the cases of test_apply_gold's as-of test, and more methods per key."""
    return [
        ("east", "app", "east.orders", 0, 480, 500, "checkpoint", "", at(1), at(1), None),
        ("east", "app", "east.orders", 0, 477, 500, "offset_sync", "", at(2), at(2), None),
        ("east", "app", "east.orders", 1, 290, 300, "checkpoint", "", at(1), at(1), None),
        ("east", "app", "east.orders", 1, 341, 350, "offset_sync", "", at(3), at(3), None),
        ("east", "app", "east.orders", 2, 10, 20, "checkpoint", "", at(0), at(0), at(2)),
        ("east", "app", "east.orders", 2, 15, 25, "checkpoint", "", at(2), at(2), None),
        ("east", "app", "east.orders", 3, 99, 100, "checkpoint", "", at(9), at(9), None),
        # Three methods on one upstream offset that disagree; and a NULL upstream offset.
        ("east", "app", "east.orders", 4, 40, 50, "checkpoint", "a", at(1), at(1), None),
        ("east", "app", "east.orders", 4, 41, 50, "offset_sync", "b", at(1), at(1), None),
        ("east", "app", "east.orders", 4, 42, 50, "mapping", "c", at(0), at(0), None),
        ("east", "app", "east.orders", 5, 1, None, "checkpoint", None, at(1), at(1), None),
        ("west", "app", "east.orders", 5, 2, 3, "checkpoint", "", at(1), at(1), None),
        ("east", "billing", "invoices", 0, 5, 6, "offset_sync", "", at(4), at(4), at(4.5)),
        ("east", "app-7", "east.orders", 0, 7, 8, "mapping", "", at(0), at(0), None),
    ]


def health_rows() -> list[tuple[Any, ...]]:
    return [
        ("east", "source", "e:9092", True, None, at(0), 0.1),
        ("east", "source", "e:9092", False, "timed out", at(2), 5.0),
        ("west", "source", "w:9092", True, None, at(1), 0.1),
        ("west", "source", "w:9092", True, None, at(3), 0.2),
        ("tgt", "target", "t:9092", False, "refused", at(1), 0.0),
        ("tgt", "target", "t:9092", None, "odd", at(0), 0.0),
    ]


def data_loss_rows() -> list[tuple[Any, ...]]:
    return [
        ("east", "app", "orders", 0, "east.orders", 10, "replicating", 8, 12, 2, 2, at(1), at(2)),
        ("east", "app", "orders", 1, "east.orders", 5, "reset", None, 9, None, 4, at(1), at(3)),
        ("east", "app", "orders", 2, "east.orders", 5, None, None, None, None, None, at(1), None),
        ("west", "app", "orders", 0, "west.orders", 3, "replicating", 3, 3, 0, 0, at(1), at(1)),
        ("east", "billing", "invoices", 0, "east.invoices", None, None, None, None, None, None, None, None),
        ("east", "app-1", "orders", 0, "east.orders", 1, "never_replicated", 0, 4, 1, 3, at(0), at(0)),
    ]


def conflict_rows() -> list[tuple[Any, ...]]:
    """k2k_mapping_conflicts: one source record routed to two target topics, one row per routing."""
    both = ["copy.orders", "east.orders"]
    return [
        ("east", "app", "east.orders", 0, "orders", 0, 41, 41, both, 141, at(1)),
        ("east", "app", "copy.orders", 0, "orders", 0, 41, 41, both, 7, at(1)),
        ("east", "billing", "east.orders", 3, "orders", 3, 9, 8, both, 20, at(2)),
        ("west", "billing", "east.orders", 3, "orders", 3, 9, 7, both, 19, at(2)),  # a second source
    ]


def checkpoint_rows() -> list[tuple[Any, ...]]:
    rows = []
    for topic, partition, offsets in (
        ("east.checkpoints.internal", 0, (0, 1, 2, 41)),
        ("east.checkpoints.internal", 1, (7,)),
        ("west.checkpoints.internal", 0, (3, None)),
        (None, 0, (99,)),
    ):
        rows += [(None, b"v", topic, partition, offset, at(0), 0, [], "east", at(1)) for offset in offsets]
    return rows


def offset_sync_rows() -> list[tuple[Any, ...]]:
    """silver_offset_syncs of two sources, each in its syncs topic's partitions (kafka_* coordinates),
    with a NULL coordinate of each kind."""
    rows = []
    for source, syncs_topic, partition, offsets in (
        ("east", "mm2-offset-syncs.tgt.internal", 0, (0, 5, 41, 3)),
        ("east", "mm2-offset-syncs.tgt.internal", 1, (7,)),
        ("east", "mm2-offset-syncs.tgt.internal", 2, (None,)),
        ("east", "east.syncs", 0, (2, None)),
        ("east", "mm2-offset-syncs.tgt.internal", None, (99,)),
        ("west", "mm2-offset-syncs.tgt.internal", 0, (10, 12)),
        ("west", None, 0, (99,)),
        (None, "mm2-offset-syncs.tgt.internal", 3, (99,)),
    ):
        rows += [
            (source, "orders", 0, offset or 0, offset or 0, at(0), syncs_topic, partition, offset, at(1))
            for offset in offsets
        ]
    return rows


def audit_records(run_id: str, recorded: datetime, started: datetime) -> list[tuple[Any, ...]]:
    """A run's plan and result rows as the apply job builds them (audit.plan_records/result_records)."""

    def row(group: str, partition: int, source: datetime, action: Action = Action.APPLY) -> PlanRow:
        return PlanRow("east", group, "east.orders", partition, 5, 5, 3, action, "r", source, "checkpoint")

    plan = [row("app", 0, at(1)), row("app", 1, at(2)), row("app-1", 0, at(3), Action.SKIP_STALE)]
    info = audit.RunInfo(run_id, audit.Mode.APPLY, started, None)
    results = [
        PartitionResult(plan[0], Outcome.APPLIED, 5, 5, None, recorded),
        PartitionResult(plan[1], Outcome.VERIFY_FAILED, 5, 4, "read back 4", recorded),
    ]
    return audit.plan_records(plan, info) + audit.result_records(plan, results, info)


@pytest.fixture(params=["INT96", "TIMESTAMP_MICROS"])
def timestamps(spark: SparkSession, request: pytest.FixtureRequest) -> Iterator[str]:
    """How this test's Spark writes TIMESTAMP columns to Parquet."""
    previous = spark.conf.get("spark.sql.parquet.outputTimestampType")
    spark.conf.set("spark.sql.parquet.outputTimestampType", request.param)
    yield request.param
    spark.conf.set("spark.sql.parquet.outputTimestampType", previous)


def warehouse_of(spark: SparkSession) -> Path:
    warehouse = spark.conf.get("spark.sql.warehouse.dir")
    assert warehouse
    return Path(warehouse.removeprefix("file:"))


def stores(spark: SparkSession, schema: str, home: Path) -> tuple[SparkGoldStore, LocalGoldStore]:
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS `{schema}`")
    return SparkGoldStore(spark, schema), LocalGoldStore(
        LocalHome(home), schema, warehouse=warehouse_of(spark)
    )


def write(spark: SparkSession, schema: str, spec: TableSpec, rows: list[tuple[Any, ...]]) -> None:
    spark.createDataFrame(rows, spec.schema_ddl).write.mode("overwrite").saveAsTable(
        f"`{schema}`.{spec.name}"
    )


def schema_name(unique_name: Callable[[str], str], prefix: str) -> str:
    return unique_name(prefix).replace("-", "_").replace(".", "_")


def assert_utc(moment: datetime | None) -> None:
    assert moment is None or moment.utcoffset() == timedelta(0), moment


def assert_same_offsets(spark_offsets: list[GoldOffset], arrow_offsets: list[GoldOffset]) -> None:
    def key(offset: GoldOffset) -> tuple[Any, ...]:
        return (offset.source_cluster, offset.key)

    assert sorted(arrow_offsets, key=key) == sorted(spark_offsets, key=key)
    for offset in arrow_offsets:
        assert_utc(offset.source_timestamp)
        assert_utc(offset.observed_at)


def test_both_stores_read_gold_alike(
    spark: SparkSession, unique_name: Callable[[str], str], tmp_path: Path, timestamps: str
) -> None:
    schema = schema_name(unique_name, "stores")
    spark_store, arrow_store = stores(spark, schema, tmp_path)
    write(spark, schema, LATEST_OFFSETS, latest_rows())
    write(spark, schema, OFFSET_HISTORY, history_rows())
    write(spark, schema, CLUSTER_HEALTH, health_rows())
    write(spark, schema, FAILOVER_DATA_LOSS, data_loss_rows())
    write(spark, schema, BRONZE_CHECKPOINTS, checkpoint_rows())
    write(spark, schema, K2K_MAPPING_CONFLICTS, conflict_rows())
    write(spark, schema, SILVER_OFFSET_SYNCS, offset_sync_rows())
    stored = pq.read_schema(next((arrow_store.schema_dir / LATEST_OFFSETS.name).glob("part-*.parquet")))
    expected_type = "timestamp[ns]" if timestamps == "INT96" else "timestamp[us, tz=UTC]"
    assert str(stored.field("source_timestamp").type) == expected_type

    for selection in SELECTIONS:
        assert_same_offsets(spark_store.latest_offsets(selection), arrow_store.latest_offsets(selection))
        assert arrow_store.failover_data_loss(selection) == spark_store.failover_data_loss(selection)
        assert arrow_store.mapping_conflicts(selection) == spark_store.mapping_conflicts(selection)
    conflicts = arrow_store.mapping_conflicts()
    assert set(conflicts) == {
        ("app", "east.orders", 0),
        ("app", "copy.orders", 0),
        ("billing", "east.orders", 3),
    }
    assert conflicts[("billing", "east.orders", 3)] == (
        "K2K mapped source record orders[3]@7 to 2 target topics (copy.orders, east.orders); "
        "K2K mapped source record orders[3]@8 to 2 target topics (copy.orders, east.orders)"
    )
    assert conflicts[("app", "copy.orders", 0)] == (
        "K2K mapped source record orders[0]@41 to 2 target topics (copy.orders, east.orders)"
    )
    latest = arrow_store.latest_offsets()
    assert len(latest) == len(latest_rows())
    upstream = {(o.source_cluster, o.key): o.upstream_offset for o in latest}
    assert upstream[("east", ("app", "east.orders", 0))] == 500
    assert upstream[("east", ("app", "east.orders", 1))] is None

    for minutes in (-1, 0, 1, 1.5, 2, 3, 4.25, 4.5, 5, 9, 100):
        for precedence in (
            ("mapping", "offset_sync", "checkpoint"),
            ("checkpoint", "offset_sync", "mapping"),
        ):
            for selection in (None, Selection(groups="app"), Selection(topics="invoices")):
                assert_same_offsets(
                    spark_store.offsets_as_of(at(minutes), precedence=precedence, selection=selection),
                    arrow_store.offsets_as_of(at(minutes), precedence=precedence, selection=selection),
                )
        assert arrow_store.count_translations(at(minutes)) == spark_store.count_translations(at(minutes))
    assert arrow_store.count_translations() == spark_store.count_translations() == len(latest_rows())

    health = arrow_store.cluster_health()
    assert health == spark_store.cluster_health()
    assert [h.cluster for h in health] == ["east", "tgt", "west"]
    for check in health:
        assert_utc(check.checked_at)
        assert_utc(check.last_reachable_at)
    loss = arrow_store.failover_data_loss(Selection())
    assert [(g.source_cluster, g.consumer_group, g.partitions_unknown) for g in loss] == [
        ("east", "app", 2), ("west", "app", 0), ("east", "app-1", 0), ("east", "billing", 1),
    ]  # fmt: skip

    positions = arrow_store.checkpoint_positions()
    assert positions == spark_store.checkpoint_positions()
    assert positions == {("east.checkpoints.internal", 0): 42, ("east.checkpoints.internal", 1): 8,
                         ("west.checkpoints.internal", 0): 4}  # fmt: skip

    ingested = {source: arrow_store.offset_sync_positions(source) for source in ("east", "west", "north")}
    assert ingested == {source: spark_store.offset_sync_positions(source) for source in ingested}
    assert ingested == {
        "east": {("mm2-offset-syncs.tgt.internal", 0): 42, ("mm2-offset-syncs.tgt.internal", 1): 8,
                 ("east.syncs", 0): 3},
        "west": {("mm2-offset-syncs.tgt.internal", 0): 13},
        "north": {},
    }  # fmt: skip


def test_a_schema_the_pipeline_never_wrote_reads_as_empty_in_both(
    spark: SparkSession, unique_name: Callable[[str], str], tmp_path: Path
) -> None:
    for store in stores(spark, schema_name(unique_name, "empty"), tmp_path):
        assert store.latest_offsets() == []
        assert store.offsets_as_of(at(0)) == []
        assert store.count_translations() == 0
        assert store.count_translations(at(0)) == 0
        assert store.cluster_health() == []
        assert store.failover_data_loss(Selection()) == []
        assert store.last_applied() == {}
        assert store.checkpoint_positions() == {}
        assert store.offset_sync_positions("east") == {}
        assert store.mapping_conflicts() == {}


def test_bad_gold_is_the_same_clear_error_in_both(
    spark: SparkSession, unique_name: Callable[[str], str], tmp_path: Path
) -> None:
    schema = schema_name(unique_name, "bad")
    spark_store, arrow_store = stores(spark, schema, tmp_path)
    null_offset = ("east", "app", "orders", 1, None, 3, "checkpoint", "", at(1), at(1), None, False, at(1))
    write(spark, schema, LATEST_OFFSETS, [null_offset])
    errors = []
    for store in (spark_store, arrow_store):
        with pytest.raises(
            GoldTableError, match=r"has a row with NULL downstream_offset: .*'partition': 1"
        ) as e:
            store.latest_offsets()
        errors.append(str(e.value))
    assert errors[0] == errors[1]

    # No fallback for a table the pipeline never writes (here: no last_observed_at).
    columns = [column for column in LATEST_OFFSETS.columns if column[0] != "last_observed_at"]
    ddl = ", ".join(f"`{name}` {kind}" for name, kind, _ in columns)
    spark.createDataFrame([null_offset[:-1]], ddl).write.mode("overwrite").saveAsTable(
        f"`{schema}`.{LATEST_OFFSETS.name}"
    )
    for store in (spark_store, arrow_store):
        with pytest.raises(GoldTableError, match=r"cannot read gold table .*last_observed_at"):
            store.latest_offsets()


def test_the_audit_pending_in_arrow_is_read_alike_and_folded_once(
    spark: SparkSession, unique_name: Callable[[str], str], tmp_path: Path, timestamps: str
) -> None:
    schema = schema_name(unique_name, "audit")
    spark_store, arrow_store = stores(spark, schema, tmp_path)
    # Run 1 through Spark (the table exists), runs 2 and 3 through Arrow (pending files).
    first = audit_records("run-1", at(10), at(9))
    assert spark_store.append_audit(first) == len(first)
    assert spark_columns(spark, schema) == AUDIT_COLUMNS  # the Spark path's table: the contract's spec
    second = audit_records("run-2", at(20), at(19))
    assert arrow_store.append_audit(second) == len(second)
    assert [path.name for path in journal_files(LocalHome(tmp_path), schema)] == [
        "run-2.plan.parquet",
        "run-2.result.parquet",
    ]

    applied = arrow_store.last_applied()
    assert applied == {("app", "east.orders", 0): LastApplied(at(1), at(20), 5)}
    assert spark_store.last_applied() == {("app", "east.orders", 0): LastApplied(at(1), at(10), 5)}

    assert fold_journal(spark, LocalHome(tmp_path)) == 2
    assert journal_files(LocalHome(tmp_path), schema) == []
    assert spark_store.last_applied() == arrow_store.last_applied() == applied
    assert arrow_store.last_applied(Selection(groups="billing")) == spark_store.last_applied(
        Selection(groups="billing")
    ) == {}  # fmt: skip
    counted = spark.sql(f"SELECT run_id, count(*) AS n FROM `{schema}`.apply_audit GROUP BY run_id").collect()
    assert {row["run_id"]: row["n"] for row in counted} == {"run-1": 6, "run-2": 6}

    # A fold that died after its append, before removing the file: the next one only removes it.
    third = audit_records("run-3", at(30), at(29))
    arrow_store.append_audit(third)
    kept = {path: path.read_bytes() for path in journal_files(LocalHome(tmp_path), schema)}
    assert fold_journal(spark, LocalHome(tmp_path)) == 2
    for path, content in kept.items():
        path.write_bytes(content)
    assert fold_journal(spark, LocalHome(tmp_path)) == 2
    assert fold_journal(spark, LocalHome(tmp_path)) == 0
    rows = spark.sql(f"SELECT * FROM `{schema}`.apply_audit WHERE run_id = 'run-3'").collect()
    assert len(rows) == len(third)
    assert spark_store.last_applied() == arrow_store.last_applied()
    assert arrow_store.last_applied()[("app", "east.orders", 0)] == LastApplied(at(1), at(30), 5)
    # Timestamps survive the fold as instants.
    assert {row["run_started_at"].replace(tzinfo=UTC) for row in rows} == {at(29)}


def test_a_schema_that_never_had_an_audit_table_gets_one_when_folded(
    spark: SparkSession, unique_name: Callable[[str], str], tmp_path: Path
) -> None:
    schema = schema_name(unique_name, "new_audit")
    arrow_store = LocalGoldStore(LocalHome(tmp_path), schema, warehouse=warehouse_of(spark))
    records = audit_records("run-1", at(10), at(9))
    arrow_store.append_audit(records)
    assert LocalHome(tmp_path).audit_journal_for(schema).is_dir()

    assert fold_journal(spark, LocalHome(tmp_path)) == 2

    assert spark.sql(f"SELECT count(*) FROM `{schema}`.apply_audit").first()[0] == len(records)
    assert spark_columns(spark, schema) == AUDIT_COLUMNS  # the fold's table: the contract's spec
    assert SparkGoldStore(spark, schema).last_applied() == arrow_store.last_applied() != {}


AUDIT_COLUMNS = [(name, kind.lower()) for name, kind, _ in APPLY_AUDIT.columns]


def spark_columns(spark: SparkSession, schema: str) -> list[tuple[str, str]]:
    """apply_audit's columns as Spark reads the table: names and types, in table order."""
    table = spark.table(f"`{schema}`.apply_audit")
    return [(field.name, field.dataType.simpleString()) for field in table.schema]


# A local Spark session on a real home (Hive metastore in Derby), as every local command takes it.
QUERY_THROUGH_THE_SESSION = """
import json, sys
from offsetlake.cli.stores import spark_for_audit
from offsetlake.local.home import LocalHome
from offsetlake.local.spark import stop_local_spark

spark = spark_for_audit(LocalHome.resolve())
rows = spark.sql("SELECT run_id, stage, count(*) FROM offsetlake.apply_audit GROUP BY 1, 2 ORDER BY 1, 2")
print(json.dumps([list(row) for row in rows.collect()]))
stop_local_spark()
"""


def test_a_local_spark_session_sees_the_rows_a_run_without_spark_audited(tmp_path: Path) -> None:
    """A local command's explicit step (cli/stores.spark_for_audit) folds the journal into the
    session it opens before reading apply_audit."""
    home = tmp_path / "home"
    store: GoldStore = LocalGoldStore(LocalHome(home))
    store.append_audit(audit_records("run-1", at(10), at(9)))
    store.append_audit(audit_records("run-2", at(20), at(19)))

    completed = subprocess.run(
        [sys.executable, "-c", QUERY_THROUGH_THE_SESSION],
        env={**os.environ, HOME_ENV: str(home)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )

    assert completed.returncode == 0, completed.stderr[-3000:]
    counts = completed.stdout.strip().splitlines()[-1]
    assert (
        counts
        == '[["run-1", "plan", 3], ["run-1", "result", 3], ["run-2", "plan", 3], ["run-2", "result", 3]]'
    )
    assert list((home / "audit-pending" / "offsetlake").iterdir()) == []
    assert LocalGoldStore(LocalHome(home)).last_applied() == {
        ("app", "east.orders", 0): LastApplied(at(1), at(20), 5)
    }


def stream_into(spark: SparkSession, schema: str, spec: TableSpec, batches: list[list[tuple[Any, ...]]],
                work: Path) -> Path:  # fmt: skip
    """``spec``'s table written as the pipeline writes a streaming table, by Spark's file sink: one
    committed micro-batch per element of ``batches``; the table's directory."""
    source, checkpoint = work / f"{spec.name}-source", work / f"{spec.name}-checkpoint"
    columns = spark.createDataFrame([], spec.schema_ddl).schema
    for rows in batches:
        spark.createDataFrame(rows, columns).write.mode("append").parquet(str(source))
        query = (
            spark.readStream.schema(columns)
            .parquet(str(source))
            .writeStream.format("parquet")
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .toTable(f"`{schema}`.{spec.name}")
        )
        query.awaitTermination()
    directory = warehouse_of(spark) / f"{schema.lower()}.db" / spec.name
    assert len(list((directory / "_spark_metadata").iterdir())) >= len(batches)
    return directory


def leave_orphan(spark: SparkSession, spec: TableSpec, rows: list[tuple[Any, ...]], directory: Path) -> None:
    """What a micro-batch killed before its commit leaves: its part file in the table's directory,
    not in the sink log."""
    staging = directory.parent / f"{spec.name}-killed-batch"
    spark.createDataFrame(rows, spec.schema_ddl).coalesce(1).write.parquet(str(staging))
    part = next(staging.glob("part-*.parquet"))
    part.rename(directory / part.name)


def test_an_orphan_part_file_of_a_streaming_table_is_read_by_neither_store(
    spark: SparkSession, unique_name: Callable[[str], str], tmp_path: Path
) -> None:
    schema = schema_name(unique_name, "streaming")
    spark_store, arrow_store = stores(spark, schema, tmp_path)
    checkpoints, health = checkpoint_rows(), health_rows()
    bronze = stream_into(spark, schema, BRONZE_CHECKPOINTS, [checkpoints[:4], checkpoints[4:]], tmp_path)
    checks = stream_into(spark, schema, CLUSTER_HEALTH, [health[:3], health[3:]], tmp_path)
    killed = (None, b"v", "east.checkpoints.internal", 0, 104, at(9), 0, [], "east", at(9))
    leave_orphan(spark, BRONZE_CHECKPOINTS, [killed], bronze)
    leave_orphan(spark, CLUSTER_HEALTH, [("east", "source", "e:9092", True, None, at(60), 0.1)], checks)
    syncs = offset_sync_rows()
    silver = stream_into(spark, schema, SILVER_OFFSET_SYNCS, [syncs[:3], syncs[3:]], tmp_path)
    killed_sync = ("east", "orders", 0, 9, 9, at(9), "mm2-offset-syncs.tgt.internal", 0, 104, at(9))
    leave_orphan(spark, SILVER_OFFSET_SYNCS, [killed_sync], silver)
    for spec in (BRONZE_CHECKPOINTS, CLUSTER_HEALTH, SILVER_OFFSET_SYNCS):
        spark.catalog.refreshTable(f"{schema}.{spec.name}")  # Spark lists the table anew

    positions = arrow_store.checkpoint_positions()
    assert positions == spark_store.checkpoint_positions()
    assert positions == {("east.checkpoints.internal", 0): 42, ("east.checkpoints.internal", 1): 8,
                         ("west.checkpoints.internal", 0): 4}  # fmt: skip
    ingested = arrow_store.offset_sync_positions("east")
    assert ingested == spark_store.offset_sync_positions("east")
    assert ingested == {("mm2-offset-syncs.tgt.internal", 0): 42, ("mm2-offset-syncs.tgt.internal", 1): 8,
                        ("east.syncs", 0): 3}  # fmt: skip
    newest = arrow_store.cluster_health()
    assert newest == spark_store.cluster_health()
    assert {check.cluster: check.checked_at for check in newest} == {
        "east": at(2),
        "tgt": at(1),
        "west": at(3),
    }
    arrow_store.close()
