"""The bundle's SQL alerts, evaluated on real Spark tables built from the product's own table specs.

An alert whose query returns no row takes its `empty_result_state` (TRIGGERED): an empty
`latest_offsets` or an `apply_audit` with no run must fire, never report 0 (OK).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import yaml
from pyspark.sql import SparkSession

from offsetlake.apply.audit import AUDIT_COLUMNS, AUDIT_TABLE
from offsetlake.pipeline.tables import LATEST_OFFSETS
from tests.bundle_resolver import REPO_ROOT

pytestmark = pytest.mark.spark

ALERTS = yaml.safe_load((REPO_ROOT / "resources" / "offsetlake.alert.yml").read_text())["resources"]["alerts"]
SCHEMA_PREFIX = (
    "${resources.schemas.offsetlake_schema.catalog_name}.${resources.schemas.offsetlake_schema.name}."
)
DATABASE = "alert_queries"


@pytest.fixture
def database(spark: SparkSession) -> Iterator[str]:
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {DATABASE}")
    yield DATABASE
    spark.sql(f"DROP DATABASE IF EXISTS {DATABASE} CASCADE")


def evaluate(spark: SparkSession, alert: str, database: str) -> tuple[list[Any], dict[str, Any]]:
    """The alert query's rows, with the bundle's catalog.schema replaced by the test database."""
    spec = ALERTS[alert]
    query = spec["query_text"].replace(SCHEMA_PREFIX, f"{database}.")
    assert SCHEMA_PREFIX not in query and f"{database}." in query
    return [row.asDict() for row in spark.sql(query).collect()], spec["evaluation"]


def latest_offsets(spark: SparkSession, database: str, observed: list[datetime]) -> None:
    columns = LATEST_OFFSETS.column_names
    rows = [{name: None for name in columns} | {"last_observed_at": at} for at in observed]
    frame = spark.createDataFrame(rows, LATEST_OFFSETS.schema_ddl)
    frame.write.mode("overwrite").saveAsTable(f"{database}.{LATEST_OFFSETS.name}")


def apply_audit(spark: SparkSession, database: str, recorded: list[datetime]) -> None:
    ddl = ", ".join(f"`{name}` {kind}" for name, kind in AUDIT_COLUMNS)
    rows = [{name: None for name, _ in AUDIT_COLUMNS} | {"recorded_at": at} for at in recorded]
    spark.createDataFrame(rows, ddl).write.mode("overwrite").saveAsTable(f"{database}.{AUDIT_TABLE}")


def fires(rows: list[dict[str, Any]], evaluation: dict[str, Any], threshold: float) -> bool:
    """AlertV2's rule as documented: no row -> empty_result_state; else source compared to threshold."""
    if not rows:
        return evaluation["empty_result_state"] == "TRIGGERED"
    assert evaluation["comparison_operator"] == "GREATER_THAN"
    (row,) = rows
    return row[evaluation["source"]["name"]] > threshold


@pytest.mark.parametrize(
    ("ages_seconds", "expected"),
    [([], True), ([30, 7200], True), ([30, 60], False)],
    ids=["empty", "one-partition-stale", "fresh"],
)
def test_stale_translation_alert(
    spark: SparkSession, database: str, ages_seconds: list[int], expected: bool
) -> None:
    now = datetime.now(UTC)
    latest_offsets(spark, database, [now - timedelta(seconds=age) for age in ages_seconds])
    rows, evaluation = evaluate(spark, "offsetlake_stale_translations", database)
    assert fires(rows, evaluation, threshold=3600) is expected, rows
    if ages_seconds:
        (row,) = rows
        assert max(ages_seconds) <= row["oldest_age_seconds"] <= max(ages_seconds) + 60


@pytest.mark.parametrize(
    ("ages_seconds", "expected"),
    [([], True), ([4000, 2000], True), ([4000, 100], False)],
    ids=["never-audited", "stalled", "recent-run"],
)
def test_sync_stalled_alert(
    spark: SparkSession, database: str, ages_seconds: list[int], expected: bool
) -> None:
    now = datetime.now(UTC)
    apply_audit(spark, database, [now - timedelta(seconds=age) for age in ages_seconds])
    rows, evaluation = evaluate(spark, "offsetlake_sync_stalled", database)
    assert fires(rows, evaluation, threshold=1800) is expected, rows
