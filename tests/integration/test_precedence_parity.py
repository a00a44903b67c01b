"""One rule, two forms: ``mirror.precedence.choose`` and its Spark twin ``choose_translation`` agree.

The failover's merge picks with ``choose``; gold's latest_offsets and ``--as-of`` reads with
``choose_translation``. Hypothesis draws group-partitions each translated by several methods
(checkpoint, offset_sync, mapping, k2k_tracing_headers), with upstream offsets that repeat and
differ and observation times that tie, step back or are missing, under any precedence; both forms
must pick the same method and offsets and the same ``_disagree``. One DataFrame per example (a
batch of keys), so the Spark cost is per batch, not per key.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from offsetlake.mirror.precedence import METHODS, Candidate, choose
from offsetlake.pipeline.precedence_spark import choose_translation

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

EPOCH = datetime(2026, 11, 1, tzinfo=UTC)
SCHEMA = (
    "source_cluster STRING, consumer_group STRING, topic STRING, partition INT, method STRING, "
    "upstream_offset BIGINT, downstream_offset BIGINT, observed_at TIMESTAMP"
)

Key = tuple[str, str, str, int]


@st.composite
def candidates_of_one_key(draw: st.DrawFn) -> list[Candidate]:
    """At most one candidate per method (as gold holds them), at least two methods mostly."""
    methods = draw(st.lists(st.sampled_from(METHODS), min_size=1, max_size=len(METHODS), unique=True))
    return [
        Candidate(
            method=method,
            upstream_offset=draw(st.none() | st.integers(10, 12)),  # few values: shared, and not
            downstream_offset=draw(st.integers(5, 8)),
            freshness=draw(st.none() | st.integers(0, 3).map(lambda s: EPOCH + timedelta(seconds=s))),
        )
        for method in methods
    ]


@st.composite
def batches(draw: st.DrawFn) -> tuple[dict[Key, list[Candidate]], tuple[str, ...]]:
    """Several group-partitions at once, and a precedence of every method in any order."""
    count = draw(st.integers(1, 8))
    keys = [("east", f"g{index % 3}", "orders", index) for index in range(count)]
    batch = {key: draw(candidates_of_one_key()) for key in keys}
    return batch, tuple(draw(st.permutations(METHODS)))


def _spark_choice(
    spark: SparkSession, batch: dict[Key, list[Candidate]], precedence: tuple[str, ...]
) -> dict[Key, tuple[Any, ...]]:
    rows = [
        (*key, c.method, c.upstream_offset, c.downstream_offset, c.freshness)
        for key, candidates in batch.items()
        for c in candidates
    ]
    chosen = choose_translation(spark.createDataFrame(rows, SCHEMA), precedence, freshness="observed_at")
    return {
        (row.source_cluster, row.consumer_group, row.topic, row.partition): (
            row.method,
            row.upstream_offset,
            row.downstream_offset,
            row._disagree,
        )
        for row in chosen.collect()
    }


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches())
def test_choose_and_choose_translation_pick_the_same_translation_of_every_key(
    spark: SparkSession, drawn: tuple[dict[Key, list[Candidate]], tuple[str, ...]]
) -> None:
    batch, precedence = drawn
    expected = {}
    for key, candidates in batch.items():
        winner, disagree = choose(candidates, precedence)
        expected[key] = (winner.method, winner.upstream_offset, winner.downstream_offset, disagree)
    assert _spark_choice(spark, batch, precedence) == expected
