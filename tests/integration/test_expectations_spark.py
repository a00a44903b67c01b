"""Every silver expectation is a Spark SQL boolean over the table's real columns: rows like the
ones silver holds pass all of them, and a crafted bad row fails its expectation with false (never
NULL: the reference asks for true or false per record).

Evaluated with the local Spark against a DataFrame of the silver table's schema (tables.py), the
same expression Databricks evaluates for ``dp.expect_all``.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import pytest

from offsetlake.contract.tables import (
    SILVER_CHECKPOINTS,
    SILVER_CONNECT_OFFSETS,
    SILVER_GROUP_OFFSETS,
    SILVER_MAPPINGS,
    SILVER_OFFSET_SYNCS,
    TableSpec,
)
from offsetlake.pipeline.expectations import SILVER_EXPECTATIONS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

AT = datetime(2026, 11, 21, 9, 14, 50)
_COORDINATES_BAD = [{"kafka_topic": None}, {"kafka_partition": -1}, {"kafka_offset": None}]
_KAFKA = {"kafka_topic": "t", "kafka_partition": 0, "kafka_offset": 7, "ingested_at": AT}


def _present(column: str) -> list[dict[str, Any]]:
    return [{column: ""}, {column: None}]


def _non_negative(column: str) -> list[dict[str, Any]]:
    return [{column: -1}, {column: None}]


# table -> (rows silver holds, {expectation: rows that must fail it, as overrides of the first row})
CASES: dict[TableSpec, tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]] = {
    SILVER_CHECKPOINTS: (
        [
            {
                "source_cluster": "east",
                "consumer_group": "billing",
                "topic": "east.orders",
                "partition": 0,
                "upstream_offset": 49,
                "downstream_offset": 46,
                "metadata": "",
                "checkpoint_timestamp": AT,
                **_KAFKA,
            },
            # Offset 0 and a NULL commit metadata are real checkpoints.
            {
                "source_cluster": "east",
                "consumer_group": "g",
                "topic": "east.orders",
                "partition": 2,
                "upstream_offset": 0,
                "downstream_offset": 0,
                "metadata": None,
                "checkpoint_timestamp": AT,
                **_KAFKA,
            },
        ],
        {
            "source_cluster_not_empty": _present("source_cluster"),
            "consumer_group_not_empty": _present("consumer_group"),
            "topic_not_empty": _present("topic"),
            "partition_non_negative": _non_negative("partition"),
            "upstream_offset_non_negative": _non_negative("upstream_offset"),
            "downstream_offset_non_negative": _non_negative("downstream_offset"),
            "checkpoint_timestamp_known": [{"checkpoint_timestamp": None}],
            "kafka_coordinates_known": _COORDINATES_BAD,
            "ingested_at_known": [{"ingested_at": None}],
        },
    ),
    SILVER_OFFSET_SYNCS: (
        [
            {
                "source_cluster": "east",
                "topic": "orders",
                "partition": 0,
                "upstream_offset": 20,
                "downstream_offset": 16,
                "sync_timestamp": AT,
                **_KAFKA,
            }
        ],
        {
            "source_cluster_not_empty": _present("source_cluster"),
            "topic_not_empty": _present("topic"),
            "partition_non_negative": _non_negative("partition"),
            "upstream_offset_non_negative": _non_negative("upstream_offset"),
            "downstream_offset_non_negative": _non_negative("downstream_offset"),
            "sync_timestamp_known": [{"sync_timestamp": None}],
            "kafka_coordinates_known": _COORDINATES_BAD,
            "ingested_at_known": [{"ingested_at": None}],
        },
    ),
    SILVER_MAPPINGS: (
        [
            {
                "source_cluster": "east",
                "source_topic": "payments",
                "source_partition": 1,
                "source_offset": 10,
                "target_topic": "east.payments",
                "target_partition": 1,
                "target_offset": 12,
                "mapping_timestamp": AT,
                **_KAFKA,
            }
        ],
        {
            "source_cluster_not_empty": _present("source_cluster"),
            "source_topic_not_empty": _present("source_topic"),
            "source_partition_non_negative": _non_negative("source_partition"),
            "source_offset_non_negative": _non_negative("source_offset"),
            "target_topic_not_empty": _present("target_topic"),
            "target_partition_non_negative": _non_negative("target_partition"),
            "target_offset_non_negative": _non_negative("target_offset"),
            "kafka_coordinates_known": _COORDINATES_BAD,
            "ingested_at_known": [{"ingested_at": None}],
        },
    ),
    SILVER_CONNECT_OFFSETS: (
        [
            # MirrorSourceConnector's position of east/orders[0].
            {
                "connector": "mm2-source",
                "source_partition": '{"cluster":"east","partition":0,"topic":"orders"}',
                "source_offset": '{"offset":37}',
                "tombstone": False,
                "source_cluster": "east",
                "topic": "orders",
                "partition": 0,
                "upstream_offset": 37,
                "offset_timestamp": AT,
                **_KAFKA,
            },
            # Its reset: a tombstone, no stored offset, no upstream position.
            {
                "connector": "mm2-source",
                "source_partition": '{"cluster":"east","partition":0,"topic":"orders"}',
                "source_offset": None,
                "tombstone": True,
                "source_cluster": "east",
                "topic": "orders",
                "partition": 0,
                "upstream_offset": None,
                "offset_timestamp": AT,
                **_KAFKA,
            },
            # Another connector's offset: no MirrorSourceConnector fields.
            {
                "connector": "jdbc-source",
                "source_partition": '{"table":"accounts"}',
                "source_offset": '{"id":5}',
                "tombstone": False,
                "source_cluster": None,
                "topic": None,
                "partition": None,
                "upstream_offset": None,
                "offset_timestamp": None,
                **_KAFKA,
            },
        ],
        {
            "connector_not_empty": _present("connector"),
            "source_partition_known": [{"source_partition": None}],
            "tombstone_iff_no_source_offset": [
                {"tombstone": True},
                {"tombstone": False, "source_offset": None},
                {"tombstone": None},
            ],
            "mirror_source_partition_complete": [
                {"source_cluster": None},
                {"topic": None},
                {"partition": None},
            ],
            "partition_non_negative": [{"partition": -1}],
            "upstream_offset_non_negative": [{"upstream_offset": -1}],
            "kafka_coordinates_known": _COORDINATES_BAD,
            "ingested_at_known": [{"ingested_at": None}],
        },
    ),
    SILVER_GROUP_OFFSETS: (
        [
            {
                "consumer_group": "billing",
                "group_state": "EMPTY",
                "topic": "orders",
                "partition": 0,
                "committed_offset": 49,
                "metadata": "",
                "snapshot_time": AT,
                "source_cluster": "east",
                "ingested_at": AT,
            }
        ],
        {
            "source_cluster_not_empty": _present("source_cluster"),
            "consumer_group_not_empty": _present("consumer_group"),
            "topic_not_empty": _present("topic"),
            "partition_non_negative": _non_negative("partition"),
            "committed_offset_non_negative": _non_negative("committed_offset"),
            "snapshot_time_known": [{"snapshot_time": None}],
            "ingested_at_known": [{"ingested_at": None}],
        },
    ),
}


def test_every_declared_expectation_has_a_failing_case() -> None:
    assert {table.name for table in CASES} == set(SILVER_EXPECTATIONS)
    for table, (_, failing) in CASES.items():
        assert set(failing) == set(SILVER_EXPECTATIONS[table.name]), table.name


@pytest.mark.parametrize("table", list(CASES), ids=lambda table: table.name)
def test_silver_rows_pass_and_each_crafted_bad_row_fails_its_expectation(
    spark: SparkSession, table: TableSpec
) -> None:
    valid_rows, failing = CASES[table]
    expectations = SILVER_EXPECTATIONS[table.name]
    labelled = [(f"valid {index}", row) for index, row in enumerate(valid_rows)]
    labelled += [
        (f"{name} {index}", {**valid_rows[0], **override})
        for name, overrides in failing.items()
        for index, override in enumerate(overrides)
    ]
    schema = ", ".join(f"`{name}` {kind}" for name, kind, _ in table.columns)
    frame = spark.createDataFrame(
        [tuple(row[name] for name in table.column_names) for _, row in labelled], schema
    )
    # selectExpr parses and analyzes each constraint against the table's columns (an unknown
    # column or a non-boolean expression fails here), then evaluates it per row.
    results = frame.selectExpr(*[f"({constraint}) AS `{name}`" for name, constraint in expectations.items()])
    assert all(field.dataType.typeName() == "boolean" for field in results.schema.fields)
    evaluated = [row.asDict() for row in results.collect()]

    for (label, _), outcome in zip(labelled, evaluated, strict=True):
        if label.startswith("valid"):
            assert outcome == dict.fromkeys(expectations, True), label
        else:
            name = label.rsplit(" ", 1)[0]
            assert outcome[name] is False, (label, outcome[name])
            assert None not in outcome.values(), (label, outcome)
