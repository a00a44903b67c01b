"""One order: the failover's merge (apply/tail_merge.py) and a pipeline update agree on latest_offsets.

Hypothesis writes checkpoint records to two checkpoints topics (one per source alias), with
timestamps that repeat and step back (MM2's worker clocks) and offsets that move back (group
resets on the source). Gold is what the pipeline's gold functions make of a prefix of them (what a
refresh consumed before it was cut short); the tail is every record, from each topic's log start.
merge_tail(gold, tail) must equal latest_offsets over every record, row for row: offsets, method,
metadata, source_timestamp and last_observed_at.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from offsetlake.apply.tail_merge import merge_tail
from offsetlake.codecs.mm2 import Checkpoint
from offsetlake.contract.gold import GoldOffset
from offsetlake.contract.tables import SILVER_CHECKPOINTS
from offsetlake.kafka.checkpoint_tail import TailRecord
from offsetlake.mirror.precedence import METHODS
from offsetlake.pipeline import history

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

EPOCH = datetime(2026, 11, 1, tzinfo=UTC)
ALIASES = ("east", "west")


@st.composite
def checkpoint_logs(draw: st.DrawFn) -> tuple[list[TailRecord], int]:
    """Records in the order MM2 wrote them (each topic's offsets count up), and how many of them gold
    consumed."""
    records: list[TailRecord] = []
    next_offset = dict.fromkeys(ALIASES, 0)
    at = 100
    for _ in range(draw(st.integers(1, 14))):
        alias = draw(st.sampled_from(ALIASES))
        at += draw(st.integers(-3, 2))  # a repeated or earlier stamp: another worker's clock
        upstream = draw(st.integers(10, 13))  # small: translations repeat, move back, return
        checkpoint = Checkpoint(
            draw(st.sampled_from(("g1", "g2"))),
            f"{alias}.orders",
            draw(st.integers(0, 1)),
            upstream,
            upstream + draw(st.integers(0, 1)),
            draw(st.sampled_from(("", "m"))),
        )
        topic = f"{alias}.checkpoints.internal"
        stamp = EPOCH + timedelta(seconds=at)
        records.append(TailRecord(alias, topic, 0, next_offset[alias], stamp, checkpoint))
        next_offset[alias] += 1
    return records, draw(st.integers(0, len(records)))


def _latest(spark: SparkSession, records: list[TailRecord]) -> list[GoldOffset]:
    """latest_offsets as a pipeline update computes it from these checkpoint records."""
    rows = []
    for record in records:
        checkpoint = record.checkpoint
        assert checkpoint is not None
        rows.append(
            (
                record.source_cluster,
                checkpoint.group,
                checkpoint.topic,
                checkpoint.partition,
                checkpoint.upstream_offset,
                checkpoint.downstream_offset,
                checkpoint.metadata,
                record.timestamp,
                record.topic,
                record.partition,
                record.offset,
                EPOCH,
            )
        )
    silver = spark.createDataFrame(rows, SILVER_CHECKPOINTS.schema_ddl)
    versions = history.offset_versions(history.checkpoint_observations(silver))
    return [_gold_offset(row.asDict()) for row in history.latest_offsets(versions, METHODS).collect()]


def _gold_offset(row: dict[str, Any]) -> GoldOffset:
    return GoldOffset(
        source_cluster=row["source_cluster"],
        consumer_group=row["consumer_group"],
        topic=row["topic"],
        partition=row["partition"],
        downstream_offset=row["downstream_offset"],
        source_timestamp=_utc(row["source_timestamp"]),
        method=row["method"],
        observed_at=_utc(row["last_observed_at"]),
        metadata=row["metadata"],
        upstream_offset=row["upstream_offset"],
    )


def _utc(value: datetime) -> datetime:
    """Collected timestamps are naive in the session time zone (UTC in tests)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def _comparable(offsets: list[GoldOffset] | tuple[GoldOffset, ...]) -> list[tuple[Any, ...]]:
    return sorted(
        (
            o.source_cluster,
            o.consumer_group,
            o.topic,
            o.partition,
            o.upstream_offset,
            o.downstream_offset,
            o.method,
            o.metadata,
            o.source_timestamp,
            o.observed_at,
        )
        for o in offsets
    )


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(checkpoint_logs())
def test_the_failover_merge_equals_a_pipeline_update_over_every_record(
    spark: SparkSession, log: tuple[list[TailRecord], int]
) -> None:
    records, consumed = log
    gold = _latest(spark, records[:consumed]) if consumed else []
    merged = merge_tail(gold, records, METHODS)
    assert _comparable(merged.offsets) == _comparable(_latest(spark, records))
