"""Reading gold for the apply job: one translation per group-partition, also for --as-of restores."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pyspark.sql import SparkSession

from offsetlake.apply import gold
from offsetlake.apply.plan_columns import build_plan
from offsetlake.apply.planner import (
    Action,
    Guards,
    LogBounds,
    Selection,
    TargetGroup,
    TargetState,
    select_offsets,
)
from offsetlake.contract.gold import GoldTableError
from offsetlake.contract.tables import LATEST_OFFSETS, OFFSET_HISTORY

pytestmark = pytest.mark.spark

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def latest(group: str, topic: str, partition: int, offset: int | None, observed: datetime) -> tuple[Any, ...]:
    """A ``latest_offsets`` row as the pipeline writes it (contract/tables.py)."""
    return ("east", group, topic, partition, offset, 10, "checkpoint", "", observed, observed, None, False,
            observed)  # fmt: skip


def write_latest(spark: SparkSession, schema: str, rows: list[tuple[Any, ...]]) -> None:
    spark.createDataFrame(rows, LATEST_OFFSETS.schema_ddl).write.saveAsTable(
        f"`{schema}`.{LATEST_OFFSETS.name}"
    )


def test_as_of_picks_one_method_per_partition(spark: SparkSession, unique_name: Callable[[str], str]) -> None:
    schema = unique_name("gold").replace("-", "_").replace(".", "_")
    spark.sql(f"CREATE SCHEMA `{schema}`")
    rows = [
        # p0: both methods translate upstream 500; precedence (offset_sync before checkpoint) wins.
        ("east", "app", "east.orders", 0, 480, 500, "checkpoint", "", at(1), at(1), None),
        ("east", "app", "east.orders", 0, 477, 500, "offset_sync", "", at(2), at(2), None),
        # p1: the checkpoint is stale (upstream 300); the fresher offset_sync row (upstream 350) wins
        # even though an older checkpoint row is still current.
        ("east", "app", "east.orders", 1, 290, 300, "checkpoint", "", at(1), at(1), None),
        ("east", "app", "east.orders", 1, 341, 350, "offset_sync", "", at(3), at(3), None),
        # p2: superseded before T, so its later row is the one current at T.
        ("east", "app", "east.orders", 2, 10, 20, "checkpoint", "", at(0), at(0), at(2)),
        ("east", "app", "east.orders", 2, 15, 25, "checkpoint", "", at(2), at(2), None),
        # p3: only valid after T: nothing to restore.
        ("east", "app", "east.orders", 3, 99, 100, "checkpoint", "", at(9), at(9), None),
    ]
    spark.createDataFrame(rows, OFFSET_HISTORY.schema_ddl).write.saveAsTable(
        f"`{schema}`.{OFFSET_HISTORY.name}"
    )

    chosen = gold.read_offsets_as_of(spark, at(5), schema)

    assert sorted((o.partition, o.downstream_offset, o.method) for o in chosen) == [
        (0, 477, "offset_sync"),
        (1, 341, "offset_sync"),
        (2, 15, "checkpoint"),
    ]
    reversed_precedence = gold.read_offsets_as_of(
        spark, at(5), schema, precedence=("checkpoint", "offset_sync", "mapping")
    )
    assert {(o.partition, o.method) for o in reversed_precedence} == {
        (0, "checkpoint"),
        (1, "offset_sync"),
        (2, "checkpoint"),
    }

    # One row per partition, so the planner sees no false conflict between methods.
    target = TargetState(
        groups={"app": TargetGroup("Empty")},
        log_bounds={("east.orders", p): LogBounds(0, 1000) for p in range(3)},
        partition_counts={"east.orders": 4},
    )
    plan = build_plan(chosen, target, Guards(reference_time=at(5), max_age=None))
    assert [row.action for row in plan] == [Action.APPLY] * 3


@pytest.mark.parametrize(
    "case",
    [
        # Literal names: an IN on the scan, so storage skips what no name matches.
        (Selection(groups="orders-app|billing"), "In(consumer_group", {"orders-app", "billing"}),
        # A literal prefix: a StartsWith on the scan.
        (
            Selection(groups="orders-.*"),
            "StringStartsWith(consumer_group,orders-)",
            {"orders-app", "orders-app-canary"},
        ),
        # Topics narrow the same way.
        (Selection(topics="invoices"), "EqualTo(topic,invoices)", {"billing"}),
    ],
)
def test_the_selection_reaches_the_scan(
    spark: SparkSession,
    unique_name: Callable[[str], str],
    capsys: pytest.CaptureFixture[str],
    case: tuple[Selection, str, set[str]],
) -> None:
    selection, pushed, read = case
    schema = unique_name("gold").replace("-", "_").replace(".", "_")
    spark.sql(f"CREATE SCHEMA `{schema}`")
    rows = [
        latest(group, topic, 0, 10, at(1))
        for group, topic in [
            ("orders-app", "orders"),
            ("orders-app-canary", "orders"),
            ("billing", "invoices"),
            ("reporting", "orders"),
        ]
    ]
    write_latest(spark, schema, rows)

    offsets = gold.read_latest_offsets(spark, schema, selection=selection)

    assert {offset.consumer_group for offset in offsets} == read
    gold.narrowed(spark.table(f"`{schema}`.latest_offsets"), selection).explain()
    scan = next(line for line in capsys.readouterr().out.splitlines() if "FileScan parquet" in line)
    assert pushed in scan


def test_a_regex_that_is_not_literal_reads_everything_and_still_selects(
    spark: SparkSession, unique_name: Callable[[str], str]
) -> None:
    schema = unique_name("gold").replace("-", "_").replace(".", "_")
    spark.sql(f"CREATE SCHEMA `{schema}`")
    write_latest(spark, schema, [latest(group, "orders", 0, 10, at(1)) for group in ("app-1", "app-22")])
    selection = Selection(groups=r"app-\d")

    offsets = gold.read_latest_offsets(spark, schema, selection=selection)

    assert len(offsets) == 2
    assert [offset.consumer_group for offset in select_offsets(offsets, selection)] == ["app-1"]


def test_a_gold_row_without_an_offset_is_a_clear_error(
    spark: SparkSession, unique_name: Callable[[str], str]
) -> None:
    schema = unique_name("gold").replace("-", "_").replace(".", "_")
    spark.sql(f"CREATE SCHEMA `{schema}`")
    write_latest(
        spark, schema, [latest("app", "orders", 0, 10, at(1)), latest("app", "orders", 1, None, at(1))]
    )

    with pytest.raises(GoldTableError, match=r"has a row with NULL downstream_offset: .*'partition': 1"):
        gold.read_latest_offsets(spark, schema)


def test_a_latest_offsets_without_the_contracts_columns_is_a_clear_error(
    spark: SparkSession, unique_name: Callable[[str], str]
) -> None:
    """No fallback for a table the pipeline never writes (here: no last_observed_at)."""
    schema = unique_name("gold").replace("-", "_").replace(".", "_")
    spark.sql(f"CREATE SCHEMA `{schema}`")
    columns = [column for column in LATEST_OFFSETS.columns if column[0] != "last_observed_at"]
    ddl = ", ".join(f"`{name}` {kind}" for name, kind, _ in columns)
    row = latest("app", "orders", 0, 10, at(1))[:-1]
    spark.createDataFrame([row], ddl).write.saveAsTable(f"`{schema}`.{LATEST_OFFSETS.name}")

    with pytest.raises(GoldTableError, match=r"cannot read gold table .*last_observed_at"):
        gold.read_latest_offsets(spark, schema)
