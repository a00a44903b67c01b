"""Committed consumer-group offset snapshots: the function, and the Spark source in batch and stream."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import pytest

from offsetlake.data_sources import offsetlake_group_offsets as spark_source
from offsetlake.data_sources import register_data_sources
from offsetlake.data_sources.offsetlake_group_offsets import (
    GROUP_OFFSETS_SCHEMA,
    GroupOffsetsBatchReader,
    GroupSnapshotOptions,
)
from offsetlake.kafka.group_offsets import GroupOffset, select_groups, snapshot_group_offsets
from tests.kafka_helpers import ClustersUnderTest, commit_offsets, create_topic

if TYPE_CHECKING:
    from pyspark.sql import DataFrameReader, SparkSession
    from pyspark.sql.streaming import DataStreamReader

ReaderT = TypeVar("ReaderT", "DataFrameReader", "DataStreamReader")


def test_group_filter_is_a_full_match_like_mm2() -> None:
    groups = ["orders", "orders-eu", "console-consumer-1", "connect-sink", "__internal", "xorders"]
    assert select_groups(groups, "orders.*", None) == ["orders", "orders-eu"]
    assert select_groups(groups, ".*", "console-consumer-.*|connect-.*|__.*") == [
        "orders",
        "orders-eu",
        "xorders",
    ]
    with pytest.raises(ValueError, match=r"groups\.exclude"):
        select_groups(groups, ".*", "(")


@pytest.fixture
def two_groups(source_bootstrap: str, unique_name: Callable[[str], str]) -> tuple[str, str, str, str]:
    """(prefix, kept group, excluded group, topic) with offsets committed for both groups."""
    prefix = unique_name("snap")
    kept, excluded, topic = f"{prefix}-billing", f"{prefix}-audit", f"{prefix}-orders"
    create_topic(source_bootstrap, topic, partitions=3)
    commit_offsets(source_bootstrap, kept, {(topic, 0): 5, (topic, 2): 9}, metadata="m")
    commit_offsets(source_bootstrap, excluded, {(topic, 1): 3})
    return prefix, kept, excluded, topic


@pytest.mark.kafka
def test_snapshot_has_exactly_the_included_groups_committed_offsets(
    source_bootstrap: str, two_groups: tuple[str, str, str, str]
) -> None:
    prefix, kept, _, topic = two_groups

    snapshot = snapshot_group_offsets(
        {"bootstrap.servers": source_bootstrap}, f"{prefix}-.*", f"{prefix}-audit", timeout_s=30
    )

    # Partition 1 has no committed offset for the kept group: it is left out, never invented.
    assert [(o.consumer_group, o.topic, o.partition, o.committed_offset) for o in snapshot] == [
        (kept, topic, 0, 5),
        (kept, topic, 2, 9),
    ]
    assert {o.group_state for o in snapshot} == {"EMPTY"}
    assert len({o.snapshot_time for o in snapshot}) == 1


@pytest.mark.kafka
def test_no_matching_group_gives_an_empty_snapshot(
    source_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    assert (
        snapshot_group_offsets({"bootstrap.servers": source_bootstrap}, unique_name("none") + ".*", None, 30)
        == []
    )


@pytest.mark.kafka
def test_the_snapshot_is_taken_when_planned_and_read_without_a_connection(
    source_bootstrap: str, two_groups: tuple[str, str, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """partitions() (the driver) asks the cluster; read() (an executor's Python worker, which on
    serverless may not reach the network) only decodes the rows the partition carries."""
    prefix, kept, _, topic = two_groups
    options = GroupSnapshotOptions.parse(
        {"kafka.bootstrap.servers": source_bootstrap, "groups.include": f"{prefix}-.*",
         "groups.exclude": f"{prefix}-audit"}
    )  # fmt: skip
    (partition,) = GroupOffsetsBatchReader(options).partitions()
    shipped = pickle.loads(pickle.dumps(partition))  # as Spark sends it to the executor

    def no_connection(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("read() opened a Kafka connection")

    monkeypatch.setattr(spark_source, "snapshot_group_offsets", no_connection)
    monkeypatch.setattr(spark_source.kafka_admin, "probe_cluster", no_connection)
    rows = [row for batch in GroupOffsetsBatchReader(options).read(shipped) for row in batch.to_pylist()]
    assert sorted((r["consumer_group"], r["topic"], r["partition"], r["committed_offset"]) for r in rows) == [
        (kept, topic, 0, 5),
        (kept, topic, 2, 9),
    ]


@pytest.mark.spark
@pytest.mark.kafka
def test_spark_source_batch_and_streaming_snapshots(
    spark: SparkSession,
    kafka_clusters: ClustersUnderTest,
    source_bootstrap: str,
    two_groups: tuple[str, str, str, str],
    tmp_path: Path,
) -> None:
    prefix, kept, _, topic = two_groups
    register_data_sources(spark)

    def source_options(reader: ReaderT) -> ReaderT:
        return (
            reader.format("offsetlake_group_offsets")
            .option("kafka.bootstrap.servers", source_bootstrap)
            .option("groups.include", f"{prefix}-.*")
            .option("groups.exclude", f"{prefix}-audit")
        )

    # Tansu quirk: committed-offset metadata reads back empty; Apache Kafka returns it.
    metadata = "" if kafka_clusters.is_tansu else "m"
    batch = source_options(spark.read).load()
    assert batch.schema == GROUP_OFFSETS_SCHEMA
    assert sorted(
        (r.consumer_group, r.partition, r.committed_offset, r.metadata) for r in batch.collect()
    ) == [
        (kept, 0, 5, metadata),
        (kept, 2, 9, metadata),
    ]

    sink, checkpoint = tmp_path / "sink", tmp_path / "checkpoint"

    def snapshot_now() -> list[GroupOffset]:
        query = (
            source_options(spark.readStream)
            .load()
            .writeStream.format("parquet")
            .option("path", str(sink))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)
        assert query.exception() is None
        return [GroupOffset(**row.asDict()) for row in spark.read.parquet(str(sink)).collect()]

    first = snapshot_now()
    commit_offsets(source_bootstrap, kept, {(topic, 0): 7})
    history = snapshot_now()

    # Each update appends one whole snapshot; the first stays as it was.
    snapshots = sorted({row.snapshot_time for row in history})
    assert len(snapshots) == 2
    assert {row.snapshot_time for row in first} == {snapshots[0]}
    offsets_at = {
        time: sorted((r.partition, r.committed_offset) for r in history if r.snapshot_time == time)
        for time in snapshots
    }
    assert offsets_at == {snapshots[0]: [(0, 5), (2, 9)], snapshots[1]: [(0, 7), (2, 9)]}
