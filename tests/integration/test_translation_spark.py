"""Spark translation (pipeline/translation_spark.py) against the pure oracle and the replication truth.

Hypothesis builds random replications: upstream offsets with gaps (compaction, transaction
markers), a target that already held data (downstream starts above 0) and has its own gaps,
syncs for a random subset of records, sometimes a record synced twice (re-replicated later,
the later sync must win). Each example batches several partitions and many committed offsets
into ONE DataFrame, so an example costs one Spark job.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from offsetlake.mirror.policy import ReplicationPolicy
from offsetlake.mirror.translation import translate
from offsetlake.pipeline.translation_spark import (
    downstream_topic,
    translate_with_mappings,
    translate_with_offset_syncs,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


@dataclass(frozen=True)
class Replication:
    """Where each upstream record landed downstream, and the syncs MM2 wrote (in write order)."""

    landed: tuple[tuple[int, int], ...]
    syncs: tuple[tuple[int, int], ...]
    re_synced: bool
    committed: tuple[int, ...]


@st.composite
def replications(draw: st.DrawFn) -> Replication:
    upstream = draw(st.integers(0, 20))  # the first retained upstream offset
    downstream = draw(st.integers(0, 50))  # pre-existing data on the target
    landed = []
    for _ in range(draw(st.integers(1, 25))):
        landed.append((upstream, downstream))
        upstream += draw(st.sampled_from([1, 1, 1, 2, 3, 7]))  # gaps: compaction, transaction markers
        downstream += draw(st.sampled_from([1, 1, 1, 2]))  # target-side transaction markers
    synced = [pair for pair in landed if draw(st.booleans())]
    re_synced = bool(synced) and draw(st.booleans())
    if re_synced:  # a record copied again later: the newest copy is further downstream
        again = draw(st.sampled_from(synced))
        synced.append((again[0], downstream + draw(st.integers(0, 5))))
    last_upstream = landed[-1][0]
    committed = draw(st.lists(st.integers(0, last_upstream + 3), min_size=1, max_size=12))
    return Replication(tuple(landed), tuple(synced), re_synced, tuple(committed))


def _never_skips(replication: Replication, committed: int, translated: int) -> bool:
    """Consuming from ``translated`` re-reads but never skips the first record at or after U."""
    pending = [down for up, down in replication.landed if up >= committed]
    return translated <= (pending[0] if pending else replication.landed[-1][1] + 1)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(replications(), min_size=1, max_size=4))
def test_spark_translation_equals_the_oracle_and_never_skips(
    spark: SparkSession, cases: list[Replication]
) -> None:
    syncs = [
        ("src", "t", partition, upstream, downstream, order)
        for partition, case in enumerate(cases)
        for order, (upstream, downstream) in enumerate(case.syncs)
    ]
    committed = [
        ("src", f"g{index}", "t", partition, offset)
        for partition, case in enumerate(cases)
        for index, offset in enumerate(case.committed)
    ]
    sync_frame = spark.createDataFrame(
        syncs,
        "source_cluster STRING, topic STRING, partition INT, upstream_offset BIGINT, "
        "downstream_offset BIGINT, sync_order BIGINT",
    )
    committed_frame = spark.createDataFrame(
        committed,
        "source_cluster STRING, consumer_group STRING, topic STRING, partition INT, committed_offset BIGINT",
    )
    carry = ("source_cluster", "consumer_group", "topic", "partition", "committed_offset")
    rows = translate_with_offset_syncs(committed_frame, sync_frame, carry=carry).collect()
    by_lookup = {(row["partition"], row["consumer_group"]): row["downstream_offset"] for row in rows}
    assert len(by_lookup) == len(rows), "one row per committed offset at most"

    for partition, case in enumerate(cases):
        for index, offset in enumerate(case.committed):
            expected = translate(case.syncs, offset)
            actual = by_lookup.get((partition, f"g{index}"))
            assert actual == expected, (case, offset)
            if actual is None:
                continue
            exact = [down for up, down in case.syncs if up == offset]
            if exact:
                assert actual == exact[-1], "exact where a sync exists (the latest-written one)"
            if not case.re_synced:
                assert _never_skips(case, offset, actual), (case, offset, actual)


_MAPPING_SCHEMA = (
    "source_cluster STRING, source_topic STRING, source_partition INT, source_offset BIGINT, "
    "target_topic STRING, target_partition INT, target_offset BIGINT, mapping_timestamp TIMESTAMP, "
    "kafka_topic STRING, kafka_partition INT, kafka_offset BIGINT"
)
_COMMITTED_SCHEMA = (
    "source_cluster STRING, consumer_group STRING, topic STRING, partition INT, committed_offset BIGINT"
)
_CARRY = ("source_cluster", "consumer_group", "topic", "partition", "committed_offset")


def _at(seconds: int) -> datetime:
    return datetime(2026, 11, 24, tzinfo=UTC) + timedelta(seconds=seconds)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(replications(), min_size=1, max_size=4))
def test_mappings_follow_the_offset_sync_rule_and_never_skip(
    spark: SparkSession, cases: list[Replication]
) -> None:
    """Largest mapped source offset <= U (+1 when not exact), the latest mapping of a record by
    timestamp: a re-mapping is written to another mapping-topic partition at a LOWER Kafka offset,
    so ordering by Kafka offset alone would pick the stale one."""
    mappings = []
    for partition, case in enumerate(cases):
        for order, (upstream, downstream) in enumerate(case.syncs):
            remapped = order >= len(case.syncs) - 1 and case.re_synced
            mapping_partition, kafka_offset = (1, 0) if remapped else (0, 1000 + order)
            mappings.append(
                (
                    "src",
                    "t",
                    partition,
                    upstream,
                    "src.t",
                    partition,
                    downstream,
                    _at(order),
                    "__k2k_offset_mappings",
                    mapping_partition,
                    kafka_offset,
                )
            )
    committed = [
        ("src", f"g{index}", "t", partition, offset)
        for partition, case in enumerate(cases)
        for index, offset in enumerate(case.committed)
    ]
    rows = translate_with_mappings(
        spark.createDataFrame(committed, _COMMITTED_SCHEMA),
        spark.createDataFrame(mappings, _MAPPING_SCHEMA),
        _CARRY,
    ).collect()
    by_lookup = {(row["partition"], row["consumer_group"]): row["downstream_offset"] for row in rows}
    assert len(by_lookup) == len(rows), "one row per committed offset and routing"
    for partition, case in enumerate(cases):
        for index, offset in enumerate(case.committed):
            actual = by_lookup.get((partition, f"g{index}"))
            assert actual == translate(case.syncs, offset), (case, offset)
            if actual is not None and not case.re_synced:
                assert _never_skips(case, offset, actual), (case, offset, actual)


def test_one_record_routed_to_two_target_topics_stays_two_translations_and_says_so(
    spark: SparkSession,
) -> None:
    mappings = [
        ("east", "orders", 0, 40, "east.orders", 0, 140, _at(0), "__k2k_offset_mappings", 0, 0),
        ("east", "orders", 0, 41, "east.orders", 0, 141, _at(1), "__k2k_offset_mappings", 0, 1),
        ("east", "orders", 0, 41, "copy.orders", 0, 7, _at(1), "__k2k_offset_mappings", 3, 0),
        ("east", "orders", 1, 5, "east.orders", 1, 9, _at(1), "__k2k_offset_mappings", 1, 0),
    ]
    committed = [
        ("east", "app", "orders", 0, 41),
        ("east", "app", "orders", 1, 6),
        ("east", "late", "orders", 0, 44),
    ]
    rows = translate_with_mappings(
        spark.createDataFrame(committed, _COMMITTED_SCHEMA),
        spark.createDataFrame(mappings, _MAPPING_SCHEMA),
        _CARRY,
    ).collect()
    found = sorted(
        (
            r["consumer_group"],
            r["partition"],
            r["downstream_topic"],
            r["downstream_offset"],
            tuple(r["routed_to"]),
        )
        for r in rows
    )
    assert found == [
        ("app", 0, "copy.orders", 7, ("copy.orders", "east.orders")),
        ("app", 0, "east.orders", 141, ("copy.orders", "east.orders")),
        ("app", 1, "east.orders", 10, ("east.orders",)),  # 6 is past the last mapping (5): +1
        ("late", 0, "copy.orders", 8, ("copy.orders", "east.orders")),  # caught up: +1, per routing
        ("late", 0, "east.orders", 142, ("copy.orders", "east.orders")),
    ]


def test_mappings_of_one_source_cluster_never_translate_another_clusters_groups(spark: SparkSession) -> None:
    """Two sources share the topic name orders; each mapping topic is bound to its own alias."""
    mappings = [
        ("east", "orders", 0, 10, "east.orders", 0, 100, _at(0), "east-maps", 0, 0),
        ("west", "orders", 0, 10, "west.orders", 0, 500, _at(0), "west-maps", 0, 0),
    ]
    committed = [
        ("east", "app", "orders", 0, 10),
        ("west", "app", "orders", 0, 10),
        ("north", "app", "orders", 0, 10),
    ]
    rows = translate_with_mappings(
        spark.createDataFrame(committed, _COMMITTED_SCHEMA),
        spark.createDataFrame(mappings, _MAPPING_SCHEMA),
        _CARRY,
    ).collect()
    assert sorted((r["source_cluster"], r["downstream_topic"], r["downstream_offset"]) for r in rows) == [
        ("east", "east.orders", 100),
        ("west", "west.orders", 500),
    ]


@pytest.mark.parametrize(
    "policy",
    [ReplicationPolicy(), ReplicationPolicy(separator="__"), ReplicationPolicy(kind="identity")],
    ids=["default", "custom-separator", "identity"],
)
def test_downstream_topic_names_follow_the_replication_policy(
    spark: SparkSession, policy: ReplicationPolicy
) -> None:
    sep = policy.separator
    topics = ["orders", f"west{sep}orders", f"west{sep}east{sep}orders", f"other{sep}orders", "a.b-c_d"]
    frame = spark.createDataFrame([("east", topic) for topic in topics], "alias STRING, topic STRING")
    renamed = frame.select(
        "topic",
        downstream_topic(policy, frame["alias"], frame["topic"], target_alias="west").alias("downstream"),
    ).collect()
    assert {row["topic"]: row["downstream"] for row in renamed} == {
        topic: policy.downstream_topic("east", "west", topic) for topic in topics
    }
