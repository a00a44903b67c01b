"""The operator's queries on the pipeline event log (sql/event_log/*.sql), run on a local ``event_log``.

On Databricks the bundle publishes the pipeline's event log as ``event_log`` in the pipeline's
catalog and schema. Here a temporary view of that name holds events with the documented columns
(https://docs.databricks.com/aws/dlt/monitor-event-log-schema): ``origin`` and ``error`` structs,
``details`` a JSON string, shaped like the documentation's examples
(https://docs.databricks.com/en/ldp/monitor-event-logs): an update in which one flow failed twice
and another failed once and then completed, a later successful update with data-quality metrics,
and an update still running. The queries' only clock, ``current_timestamp()``, is pinned, so every
row is asserted exactly.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = pytest.mark.spark

EVENT_LOG_SQL = Path(__file__).resolve().parents[2] / "sql" / "event_log"
NOW = "2026-11-21 10:05:00"
PIPELINE_ID = "abcdef12-abcd-3456-7890-abcd1234ef56"
FAILED = "1234abcd-0000-0000-0000-000000000001"
"""The update in which flows failed."""
OK = "1234abcd-0000-0000-0000-000000000002"
"""The update after it, which completed."""
RUNNING = "1234abcd-0000-0000-0000-000000000003"
"""The newest update, still running."""
SCHEMA = (
    "id STRING, sequence STRUCT<control_plane_seq_no: BIGINT>, "
    "origin STRUCT<cloud: STRING, region: STRING, org_id: BIGINT, pipeline_id: STRING, "
    "pipeline_type: STRING, pipeline_name: STRING, update_id: STRING, flow_id: STRING, "
    "flow_name: STRING, batch_id: BIGINT, request_id: STRING>, "
    "timestamp STRING, message STRING, level STRING, maturity_level STRING, "
    "error STRUCT<fatal: BOOLEAN, exceptions: ARRAY<STRUCT<class_name: STRING, message: STRING>>>, "
    "details STRING, event_type STRING"
)
STREAM_FAILED = "org.apache.spark.sql.streaming.StreamingQueryException"
FIRST_ERROR = "[STREAM_FAILED] Query [id = 1] terminated with exception: broker unreachable"
SECOND_ERROR = "[STREAM_FAILED] Query [id = 2] terminated with exception: broker unreachable"


def _event(
    sequence: int,
    update_id: str | None,
    timestamp: str,
    event_type: str,
    details: dict[str, Any],
    *,
    message: str,
    flow: str | None = None,
    level: str = "INFO",
    error: tuple[bool, list[tuple[str, str]]] | None = None,
) -> tuple[Any, ...]:
    origin = (
        "AWS",
        "us-west-2",
        1234567890123456,
        PIPELINE_ID,
        "WORKSPACE",
        "offsetlake",
        update_id,
        f"flow-{flow}" if flow else None,
        flow,
        None,
        None,
    )
    error_struct = None if error is None else (error[0], [tuple(exception) for exception in error[1]])
    return (
        f"event-{sequence:03d}",
        (sequence,),
        origin,
        timestamp,
        message,
        level,
        "STABLE",
        error_struct,
        json.dumps(details),
        event_type,
    )


def _update(sequence: int, update_id: str, timestamp: str, state: str) -> tuple[Any, ...]:
    level = "ERROR" if state == "FAILED" else "INFO"
    error = (True, [(STREAM_FAILED, SECOND_ERROR)]) if state == "FAILED" else None
    return _event(
        sequence,
        update_id,
        timestamp,
        "update_progress",
        {"update_progress": {"state": state}},
        message=f"Update {update_id[:6]} is {state}.",
        level=level,
        error=error,
    )


def _flow(
    sequence: int,
    update_id: str,
    timestamp: str,
    flow: str,
    status: str,
    *,
    expectations: list[tuple[str, int, int]] | None = None,
    error: tuple[bool, list[tuple[str, str]]] | None = None,
) -> tuple[Any, ...]:
    progress: dict[str, Any] = {"status": status}
    if status in {"RUNNING", "COMPLETED"}:
        progress["metrics"] = {"num_output_rows": 10}
    if expectations is not None:
        progress["data_quality"] = {
            "dropped_records": 0,
            "expectations": [
                {"name": name, "dataset": flow, "passed_records": passed, "failed_records": failed}
                for name, passed, failed in expectations
            ],
        }
    return _event(
        sequence,
        update_id,
        timestamp,
        "flow_progress",
        {"flow_progress": progress},
        message=f"Flow '{flow}' has {status}." if status == "FAILED" else f"Flow '{flow}' is {status}.",
        flow=flow,
        level="ERROR" if status == "FAILED" else "INFO",
        error=error,
    )


def _created(sequence: int, update_id: str, timestamp: str) -> tuple[Any, ...]:
    return _event(
        sequence,
        update_id,
        timestamp,
        "create_update",
        {"create_update": {"cause": "JOB_TASK", "full_refresh": False}},
        message=f"Update {update_id[:6]} started by JOB_TASK.",
    )


EVENTS = [
    _event(
        1,
        None,
        "2026-11-21 07:59:58",
        "user_action",
        {"user_action": {"action": "START", "user_name": "ops@example.com"}},
        message="User ops@example.com started an update.",
    ),
    # An update in which translation_observations failed, was retried and failed again (the
    # update failed), and latest_offsets failed once without an exception and then completed.
    _created(2, FAILED, "2026-11-21 08:00:00"),
    _update(3, FAILED, "2026-11-21 08:00:05", "WAITING_FOR_RESOURCES"),
    _update(4, FAILED, "2026-11-21 08:01:00", "RUNNING"),
    _flow(5, FAILED, "2026-11-21 08:01:10", "silver_checkpoints", "STARTING"),
    _flow(
        6,
        FAILED,
        "2026-11-21 08:01:20",
        "silver_checkpoints",
        "RUNNING",
        expectations=[("consumer_group_not_empty", 10, 0), ("downstream_offset_non_negative", 10, 0)],
    ),
    _flow(7, FAILED, "2026-11-21 08:01:30", "silver_checkpoints", "COMPLETED"),
    _flow(8, FAILED, "2026-11-21 08:01:40", "translation_observations", "STARTING"),
    _flow(
        9,
        FAILED,
        "2026-11-21 08:01:50",
        "translation_observations",
        "FAILED",
        error=(False, [(STREAM_FAILED, FIRST_ERROR)]),
    ),
    _flow(10, FAILED, "2026-11-21 08:01:55", "latest_offsets", "FAILED", error=(False, [])),
    _flow(11, FAILED, "2026-11-21 08:02:00", "translation_observations", "RUNNING"),
    _flow(12, FAILED, "2026-11-21 08:02:05", "latest_offsets", "COMPLETED"),
    _flow(
        13,
        FAILED,
        "2026-11-21 08:02:10",
        "translation_observations",
        "FAILED",
        error=(True, [(STREAM_FAILED, SECOND_ERROR), ("java.net.ConnectException", "refused")]),
    ),
    _update(14, FAILED, "2026-11-21 08:02:15", "FAILED"),
    # A later update that completed, with expectation metrics (one expectation failed 2 records).
    _created(15, OK, "2026-11-21 09:00:00"),
    _update(16, OK, "2026-11-21 09:00:30", "RUNNING"),
    _flow(
        17,
        OK,
        "2026-11-21 09:00:40",
        "silver_checkpoints",
        "COMPLETED",
        expectations=[("consumer_group_not_empty", 7, 0), ("downstream_offset_non_negative", 5, 2)],
    ),
    _flow(
        18,
        OK,
        "2026-11-21 09:00:50",
        "silver_offset_syncs",
        "COMPLETED",
        expectations=[("partition_non_negative", 3, 0)],
    ),
    _event(
        19,
        OK,
        "2026-11-21 09:00:55",
        "flow_definition",
        {
            "flow_definition": {
                "output_dataset": "silver_checkpoints",
                "input_datasets": ["decoded_checkpoints"],
            }
        },
        message="Flow 'silver_checkpoints' is defined as APPEND.",
        flow="silver_checkpoints",
    ),
    _update(20, OK, "2026-11-21 09:01:00", "COMPLETED"),
    # The newest update, still running.
    _created(21, RUNNING, "2026-11-21 10:00:00"),
    _update(22, RUNNING, "2026-11-21 10:00:20", "RUNNING"),
    _flow(23, RUNNING, "2026-11-21 10:00:30", "silver_checkpoints", "RUNNING"),
]


@pytest.fixture(scope="module")
def event_log(spark: SparkSession) -> Iterator[None]:
    frame = spark.createDataFrame(EVENTS, SCHEMA).selectExpr(
        "id",
        "sequence",
        "origin",
        "CAST(timestamp AS TIMESTAMP) AS timestamp",
        "message",
        "level",
        "maturity_level",
        "error",
        "details",
        "event_type",
    )
    frame.createOrReplaceTempView("event_log")
    yield
    spark.catalog.dropTempView("event_log")


def _run(spark: SparkSession, name: str) -> list[tuple[Any, ...]]:
    query = (EVENT_LOG_SQL / f"{name}.sql").read_text(encoding="utf-8")
    assert "FROM event_log" in query
    pinned = query.replace("current_timestamp()", f"TIMESTAMP'{NOW}'")
    return _as_text(spark.sql(pinned))


def _as_text(frame: DataFrame) -> list[tuple[Any, ...]]:
    """Rows with timestamps as UTC text (the session time zone), whatever the machine's zone."""
    from pyspark.sql import functions as sf
    from pyspark.sql.types import TimestampType

    columns = [
        sf.date_format(field.name, "yyyy-MM-dd HH:mm:ss").alias(field.name)
        if isinstance(field.dataType, TimestampType)
        else sf.col(field.name)
        for field in frame.schema.fields
    ]
    return [tuple(row) for row in frame.select(*columns).collect()]


def test_the_event_log_queries_are_the_ones_tested_here() -> None:
    assert sorted(path.stem for path in EVENT_LOG_SQL.glob("*.sql")) == [
        "pipeline_expectations",
        "pipeline_flow_failures",
        "pipeline_update_freshness",
    ]


def test_flow_failures_newest_first_with_error_and_how_the_flow_ended(
    spark: SparkSession, event_log: None
) -> None:
    assert spark.sql((EVENT_LOG_SQL / "pipeline_flow_failures.sql").read_text(encoding="utf-8")).columns == [
        "update_id",
        "flow_name",
        "failed_at",
        "error_class",
        "error_message",
        "final_status",
    ]
    assert _run(spark, "pipeline_flow_failures") == [
        (FAILED, "translation_observations", "2026-11-21 08:02:10", STREAM_FAILED, SECOND_ERROR, "FAILED"),
        # No exception in the event: its message, and the retry that completed.
        (
            FAILED,
            "latest_offsets",
            "2026-11-21 08:01:55",
            None,
            "Flow 'latest_offsets' has FAILED.",
            "COMPLETED",
        ),
        (FAILED, "translation_observations", "2026-11-21 08:01:50", STREAM_FAILED, FIRST_ERROR, "FAILED"),
    ]


def test_update_freshness_per_update_and_the_last_successful_updates_age(
    spark: SparkSession, event_log: None
) -> None:
    query = (EVENT_LOG_SQL / "pipeline_update_freshness.sql").read_text(encoding="utf-8")
    assert query.count("current_timestamp()") == 3
    assert spark.sql(query).columns == [
        "update_id",
        "started_at",
        "ended_at",
        "state",
        "duration_seconds",
        "ended_seconds_ago",
        "last_success_at",
        "last_success_age_seconds",
    ]
    last_success = ("2026-11-21 09:01:00", 3840)
    assert _run(spark, "pipeline_update_freshness") == [
        # Running: its duration so far, not ended.
        (RUNNING, "2026-11-21 10:00:00", None, "RUNNING", 300, None, *last_success),
        (OK, "2026-11-21 09:00:00", "2026-11-21 09:01:00", "COMPLETED", 60, 3840, *last_success),
        (FAILED, "2026-11-21 08:00:00", "2026-11-21 08:02:15", "FAILED", 135, 7365, *last_success),
    ]


def test_expectations_passed_and_failed_per_silver_table_and_expectation(
    spark: SparkSession, event_log: None
) -> None:
    # dataset, expectation, passed, failed, passed / failed in the newest update reporting them, last failure
    assert _run(spark, "pipeline_expectations") == [
        ("silver_checkpoints", "downstream_offset_non_negative", 15, 2, 5, 2, "2026-11-21 09:00:40"),
        ("silver_checkpoints", "consumer_group_not_empty", 17, 0, 7, 0, None),
        ("silver_offset_syncs", "partition_non_negative", 3, 0, 3, 0, None),
    ]
