"""The k2k_tracing_headers method in Spark on a real target broker: snapshots -> k2k_tracing_lookups rows."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest
from confluent_kafka import Producer

from offsetlake.k2k.routing import TOPIC_PLACEHOLDER, TracingRoute
from offsetlake.k2k.tracing import TracingHeaderNames
from offsetlake.pipeline.history import tracing_observations
from offsetlake.pipeline.tables import K2K_TRACING_LOOKUPS, SILVER_GROUP_OFFSETS
from offsetlake.pipeline.tracing_spark import tracing_lookups
from tests.kafka_helpers import create_topic

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

Traced = tuple[str, int, int] | None
"""(source topic, source partition, source offset) in a record's K2K headers; None: no headers."""


def produce_traced(bootstrap: str, topic: str, records: list[Traced]) -> list[int]:
    """One record per batch (Tansu's log end needs it); returns each record's target offset."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    offsets: list[int] = []
    for origin in records:
        headers = (
            None
            if origin is None
            else [
                ("k2k_topic", origin[0].encode()),
                ("k2k_partition", str(origin[1]).encode()),
                ("k2k_offset", str(origin[2]).encode()),
                ("k2k_pipeline", b"test"),
            ]
        )
        producer.produce(
            topic,
            value=b"r",
            partition=0,
            headers=headers,
            on_delivery=lambda error, message: offsets.append(message.offset()),
        )
        producer.flush(15)
    assert len(offsets) == len(records)
    return offsets


def test_snapshots_translate_from_target_data_alone_and_reasons_are_rows(
    spark: SparkSession, target_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    prefix = unique_name("east") + "."
    target = f"{prefix}orders"
    create_topic(target_bootstrap, target)
    # Two records that were on the target before replication, then orders[0] with gaps (3, 4, 7, 8
    # never replicated: filtered, transaction markers), orders[1] interleaved, one headerless record.
    layout: list[Traced] = [
        None,
        None,
        ("orders", 0, 0),
        ("orders", 0, 1),
        ("orders", 1, 0),
        ("orders", 0, 2),
        None,
        ("orders", 0, 5),
        ("orders", 0, 6),
        ("orders", 1, 1),
        ("orders", 0, 9),
    ]
    offsets = produce_traced(target_bootstrap, target, layout)
    at = {
        origin[2]: offset for origin, offset in zip(layout, offsets, strict=True) if origin and origin[1] == 0
    }
    snapshot = datetime(2026, 11, 24, 2, 0, tzinfo=UTC)
    snapshots = spark.createDataFrame(
        [
            (group, topic, 0, committed, "", snapshot, alias)
            for group, topic, committed, alias in (
                ("exact", "orders", 5, "east"),
                ("gap", "orders", 3, "east"),
                ("caught-up", "orders", 10, "east"),
                ("missing", "payments", 4, "east"),
                ("no-commit", "orders", -1, "east"),
                ("other-source", "orders", 5, "west"),
            )
        ],
        "consumer_group STRING, topic STRING, partition INT, committed_offset BIGINT, metadata STRING, "
        "snapshot_time TIMESTAMP, source_cluster STRING",
    )
    routes = (TracingRoute("east", f"{prefix}{TOPIC_PLACEHOLDER}"),)
    lookups = tracing_lookups(
        snapshots, routes, TracingHeaderNames(), {"bootstrap.servers": target_bootstrap}, timeout_s=10
    )
    rows = {row["consumer_group"]: row for row in lookups.collect()}

    assert set(rows) == {"exact", "gap", "caught-up", "missing"}, "no route, no commit: no lookup"
    assert (rows["exact"]["downstream_offset"], rows["exact"]["exact"], rows["exact"]["reason"]) == (
        at[5],
        True,
        None,
    )
    assert rows["gap"]["downstream_offset"] == at[2] + 1 and rows["gap"]["matched_source_offset"] == 2
    assert rows["caught-up"]["downstream_offset"] == at[9] + 1
    assert rows["missing"]["downstream_offset"] is None and rows["missing"]["reason"]
    assert rows["exact"]["topic"] == target and rows["exact"]["upstream_topic"] == "orders"
    assert all(
        row["probes"] >= 1 and row["lookup_seconds"] >= 0 for row in rows.values() if row["reason"] is None
    )

    observations = {row["consumer_group"]: row for row in tracing_observations(lookups).collect()}
    assert set(observations) == {"exact", "gap", "caught-up"}
    assert observations["gap"]["method"] == "k2k_tracing_headers"
    assert observations["gap"]["upstream_offset"] == 3


def test_the_search_adds_exactly_the_tables_remaining_columns() -> None:
    from offsetlake.pipeline.tracing_spark import RESULT_SCHEMA

    table = K2K_TRACING_LOOKUPS.column_names
    requested = ["source_cluster", "consumer_group", "topic", "partition", "upstream_topic",
                 "upstream_partition", "upstream_offset", "metadata", "snapshot_time"]  # fmt: skip
    assert sorted(table) == sorted(requested + RESULT_SCHEMA.fieldNames())
    assert {"source_cluster", "consumer_group", "topic", "partition", "committed_offset"} <= set(
        SILVER_GROUP_OFFSETS.column_names
    )
