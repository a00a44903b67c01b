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

from offsetlake.contract.tables import APPLY_AUDIT, LATEST_OFFSETS
from tests.bundle_resolver import REPO_ROOT, load_configuration

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
    rows = [dict.fromkeys(APPLY_AUDIT.column_names) | {"recorded_at": at} for at in recorded]
    frame = spark.createDataFrame(rows, APPLY_AUDIT.spark_schema)
    frame.write.mode("overwrite").saveAsTable(f"{database}.{APPLY_AUDIT.name}")


def fires(rows: list[dict[str, Any]], evaluation: dict[str, Any], threshold: float) -> bool:
    """AlertV2's rule as documented: no row -> empty_result_state; else source compared to threshold."""
    if not rows:
        return evaluation["empty_result_state"] == "TRIGGERED"
    assert evaluation["comparison_operator"] == "GREATER_THAN"
    (row,) = rows
    return row[evaluation["source"]["name"]] > threshold


def threshold(variable: str) -> float:
    """The alert's threshold as deployed by default (databricks.yml), checked to be what it names."""
    return float(load_configuration()["variables"][variable]["default"])


ALERT_CASES = {
    # alert: (table writer, threshold variable, the age it reports, {case: (row ages in s, fires)})
    "offsetlake_stale_translations": (
        latest_offsets,
        "stale_after_seconds",
        max,  # the oldest translation
        {"empty": ([], True), "one-partition-stale": ([30, 7200], True), "fresh": ([30, 60], False)},
    ),
    "offsetlake_sync_stalled": (
        apply_audit,
        "sync_stalled_after_seconds",
        min,  # since the newest audited run
        {"never-audited": ([], True), "stalled": ([4000, 2000], True), "recent-run": ([4000, 100], False)},
    ),
}


@pytest.mark.parametrize(
    ("alert", "case"),
    [(alert, case) for alert, (*_, cases) in ALERT_CASES.items() for case in cases],
)
def test_alert_fires_on_stale_or_missing_rows(
    spark: SparkSession, database: str, alert: str, case: str
) -> None:
    write, variable, reported, cases = ALERT_CASES[alert]
    ages_seconds, expected = cases[case]
    assert f"${{var.{variable}}}" == ALERTS[alert]["evaluation"]["threshold"]["value"]["double_value"]
    now = datetime.now(UTC)
    write(spark, database, [now - timedelta(seconds=age) for age in ages_seconds])
    rows, evaluation = evaluate(spark, alert, database)
    assert fires(rows, evaluation, threshold(variable)) is expected, rows
    if ages_seconds:
        ((age,),) = (row.values() for row in rows)
        assert reported(ages_seconds) <= age <= reported(ages_seconds) + 60
