"""The offsetlake_k2k_tracing data source on real brokers: snapshots searched on K2K's tracing headers,
on the driver, into k2k_tracing_lookups rows (and the k2k_tracing_headers method's observations)."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from offsetlake.contract.tables import K2K_TRACING_LOOKUPS
from offsetlake.data_sources import offsetlake_k2k_tracing as tracing_source
from offsetlake.data_sources import register_data_sources
from offsetlake.data_sources.offsetlake_group_offsets import GroupOffsetsBatchReader
from offsetlake.data_sources.offsetlake_k2k_tracing import (
    TracingSnapshotOptions,
)
from offsetlake.kafka.offset_ranges import OffsetOptionError
from offsetlake.pipeline.history import tracing_observations
from tests.kafka_helpers import Traced, commit_offsets, create_topic, produce_traced

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.kafka]

# Two records that were on the target before replication, then orders[0] with gaps (3, 4, 7, 8 never
# replicated: filtered, transaction markers), another source topic's partition 0 interleaved (a
# static route), one headerless record.
LAYOUT: list[Traced] = [
    None,
    None,
    ("orders", 0, 0),
    ("orders", 0, 1),
    ("audit", 0, 0),
    ("orders", 0, 2),
    None,
    ("orders", 0, 5),
    ("orders", 0, 6),
    ("audit", 0, 1),
    ("orders", 0, 9),
]


@pytest.fixture
def traced_pair(
    source_bootstrap: str, target_bootstrap: str, unique_name: Callable[[str], str]
) -> tuple[dict[str, str], dict[int, int]]:
    """Source groups committed on ``orders``/``payments``; K2K-traced ``<prefix>orders`` on the target.
    Returns the source's options and, per source offset of orders[0], its target offset."""
    prefix = unique_name("k2k") + "."
    orders, payments = "orders", "payments"
    for topic in (orders, payments):
        create_topic(source_bootstrap, f"{prefix}{topic}", partitions=1)
    target = f"{prefix}{prefix}orders"
    create_topic(target_bootstrap, target)
    offsets = produce_traced(
        target_bootstrap,
        target,
        [None if origin is None else (f"{prefix}{origin[0]}", origin[1], origin[2]) for origin in LAYOUT],
    )
    groups = {"exact": (orders, 5), "gap": (orders, 3), "caught-up": (orders, 10), "missing": (payments, 4)}
    for group, (topic, committed) in groups.items():
        commit_offsets(source_bootstrap, f"{prefix}{group}", {(f"{prefix}{topic}", 0): committed})
    options = {
        "kafka.bootstrap.servers": source_bootstrap,
        "target.kafka.bootstrap.servers": target_bootstrap,
        "groups.include": f"{prefix}.*",
        "alias": "east",
        "route": prefix + "{topic}",
        "timeoutMs": "10000",
    }
    at = {
        origin[2]: offset
        for origin, offset in zip(LAYOUT, offsets, strict=True)
        if origin and origin[:2] == ("orders", 0)
    }
    return options, at


def _by_group(rows: list[dict[str, object]]) -> dict[str, dict[str, object]]:
    return {str(row["consumer_group"]).rsplit(".", 1)[-1]: row for row in rows}


def test_searches_run_when_planned_and_read_opens_no_connection(
    traced_pair: tuple[dict[str, str], dict[int, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """partitions() (the driver) snapshots the source and searches the target; read() (an executor's
    Python worker, with no network on serverless) only decodes what the partition carries."""
    options, at = traced_pair
    reader = GroupOffsetsBatchReader(TracingSnapshotOptions.parse(options))
    (partition,) = reader.partitions()
    shipped = pickle.loads(pickle.dumps(partition))  # as Spark sends it to the executor

    def no_connection(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("read() opened a Kafka connection")

    monkeypatch.setattr(tracing_source, "snapshot_group_offsets", no_connection)
    monkeypatch.setattr(tracing_source, "look_up_snapshot", no_connection)
    rows = _by_group([row for batch in reader.read(shipped) for row in batch.to_pylist()])

    assert set(rows) == {"exact", "gap", "caught-up", "missing"}
    exact = rows["exact"]
    assert (exact["downstream_offset"], exact["exact"], exact["reason"]) == (at[5], True, None)
    assert (rows["gap"]["downstream_offset"], rows["gap"]["matched_source_offset"]) == (at[2] + 1, 2)
    assert rows["caught-up"]["downstream_offset"] == at[9] + 1, "past the last replicated record: its next"
    assert rows["missing"]["downstream_offset"] is None and rows["missing"]["reason"]
    assert {row["source_cluster"] for row in rows.values()} == {"east"}


@pytest.mark.spark
def test_spark_reads_lookup_rows_that_become_observations(
    spark: SparkSession, traced_pair: tuple[dict[str, str], dict[int, int]]
) -> None:
    from pyspark.sql.pandas.types import from_arrow_schema
    from pyspark.sql.types import StructType

    options, at = traced_pair
    register_data_sources(spark, k2k_tracing=True)
    lookups = spark.read.format("offsetlake_k2k_tracing").options(**options).load()
    assert lookups.schema == StructType.fromDDL(K2K_TRACING_LOOKUPS.spark_schema)
    assert lookups.schema == from_arrow_schema(K2K_TRACING_LOOKUPS.arrow_schema)  # one schema, two forms
    assert lookups.columns == K2K_TRACING_LOOKUPS.column_names
    rows = _by_group([row.asDict() for row in lookups.collect()])
    assert rows["exact"]["topic"] == options["route"].replace("{topic}", "") + rows["exact"]["upstream_topic"]
    assert all(row["probes"] >= 1 for row in rows.values() if row["reason"] is None)

    observations = _by_group([row.asDict() for row in tracing_observations(lookups).collect()])
    assert set(observations) == {"exact", "gap", "caught-up"}, "a lookup with no translation observes nothing"
    assert observations["gap"]["method"] == "k2k_tracing_headers"
    assert (observations["gap"]["upstream_offset"], observations["gap"]["downstream_offset"]) == (
        3,
        at[2] + 1,
    )


def test_options_name_what_is_missing() -> None:
    with pytest.raises(OffsetOptionError, match=r"target\.kafka\.bootstrap\.servers"):
        TracingSnapshotOptions.parse({"kafka.bootstrap.servers": "x:1", "alias": "east", "route": "{topic}"})
    with pytest.raises(OffsetOptionError, match="alias and route"):
        TracingSnapshotOptions.parse(
            {"kafka.bootstrap.servers": "x:1", "target.kafka.bootstrap.servers": "y:1"}
        )
