"""One rule: the failover's live translation (apply/live_syncs.py) and the pipeline's offset_sync
observations (pipeline/history.offset_sync_observations) give the same rows for the same inputs.

Hypothesis writes offset syncs (upstream offsets that repeat with another downstream offset: the
latest written wins) and group snapshots (positions before, at and between the syncs, and no
commit); silver's history is part of the records and the rest comes from the syncs topic past
silver's position, as a failover reads them. Both sides must give the same downstream topic,
partition, offsets, metadata and observation time for every snapshot row a sync translates.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from offsetlake.apply.gold_rows import sync_histories
from offsetlake.apply.live_syncs import SyncIndex, translated_snapshot, with_new_syncs
from offsetlake.apply.placement import TopicRouting
from offsetlake.codecs.mm2 import OffsetSync
from offsetlake.contract.tables import SILVER_GROUP_OFFSETS, SILVER_OFFSET_SYNCS
from offsetlake.kafka.group_offsets import GroupOffset
from offsetlake.kafka.offset_sync_tail import SyncRecord
from offsetlake.mirror.policy import ReplicationPolicy
from offsetlake.pipeline import history

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

SNAPSHOT_TIME = datetime(2026, 11, 28, 9, 0, tzinfo=UTC)
SYNCS_TOPIC = "mm2-offset-syncs.dr.internal"
POLICY = ReplicationPolicy()
SYNC_SCHEMA = pa.schema([
    ("topic", pa.string()), ("partition", pa.int32()), ("upstream_offset", pa.int64()),
    ("downstream_offset", pa.int64()), ("kafka_topic", pa.string()), ("kafka_partition", pa.int32()),
    ("kafka_offset", pa.int64()),
])  # fmt: skip
"""silver_offset_syncs' columns the stores read (gold_rows.OFFSET_SYNC_COLUMNS)."""

syncs = st.lists(
    st.tuples(st.integers(0, 1), st.integers(0, 30), st.integers(0, 40)), min_size=1, max_size=12
)
snapshots = st.lists(
    st.tuples(st.sampled_from(("g1", "g2")), st.integers(0, 1), st.integers(-1, 35)), min_size=1, max_size=8
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(syncs, snapshots, st.data())
def test_the_live_translation_equals_the_pipelines_offset_sync_observations(
    spark: SparkSession,
    written: list[tuple[int, int, int]],
    committed: list[tuple[str, int, int]],
    data: st.DataObject,
) -> None:
    """``written``: (partition, upstream, downstream) in the order MM2 wrote them to the syncs topic;
    ``committed``: (group, partition, position), one per group-partition."""
    by_key = {(group, partition): position for group, partition, position in committed}
    ingested = data.draw(st.integers(0, len(written)), label="records silver holds")
    records = [
        SyncRecord("east", SYNCS_TOPIC, 0, offset, OffsetSync("orders", partition, upstream, downstream))
        for offset, (partition, upstream, downstream) in enumerate(written)
    ]
    snapshot = [
        GroupOffset(group, "EMPTY", "orders", partition, position, "m", SNAPSHOT_TIME)
        for (group, partition), position in sorted(by_key.items())
    ]

    silver = sync_histories(pa.Table.from_pylist([_sync_row(r) for r in records[:ingested]], SYNC_SCHEMA))
    history_now, _ = with_new_syncs(silver, records, {(SYNCS_TOPIC, 0): ingested})
    live = translated_snapshot("east", snapshot, SyncIndex(history_now), TopicRouting(POLICY, "dr"), {})

    assert sorted(_comparable_live(live)) == sorted(_pipeline(spark, records, snapshot))


def _sync_row(record: SyncRecord) -> dict[str, Any]:
    sync = record.sync
    assert sync is not None
    values = (sync.topic, sync.partition, sync.upstream_offset, sync.downstream_offset, record.topic,
              record.partition, record.offset)  # fmt: skip
    return dict(zip(SYNC_SCHEMA.names, values, strict=True))


def _pipeline(
    spark: SparkSession, records: list[SyncRecord], snapshot: list[GroupOffset]
) -> list[tuple[Any, ...]]:
    """offset_sync_observations over every record (what silver holds after the next update)."""
    sync_rows = [
        ("east", *tuple(_sync_row(record).values())[:4], SNAPSHOT_TIME, record.topic, record.partition,
         record.offset, SNAPSHOT_TIME)
        for record in records
    ]  # fmt: skip
    group_rows = [
        (row.consumer_group, row.group_state, row.topic, row.partition, row.committed_offset, row.metadata,
         row.snapshot_time, "east", SNAPSHOT_TIME)
        for row in snapshot
    ]  # fmt: skip
    observed = history.offset_sync_observations(
        spark.createDataFrame(group_rows, SILVER_GROUP_OFFSETS.schema_ddl),
        spark.createDataFrame(sync_rows, SILVER_OFFSET_SYNCS.schema_ddl),
        POLICY,
        "dr",
    ).collect()
    return [
        (r["source_cluster"], r["consumer_group"], r["topic"], r["partition"], r["upstream_offset"],
         r["downstream_offset"], r["metadata"], _utc(r["observed_at"]))
        for r in observed
    ]  # fmt: skip


def _comparable_live(rows: list[Any]) -> list[tuple[Any, ...]]:
    return [
        (r.source_cluster, r.consumer_group, r.topic, r.partition, r.upstream_offset, r.downstream_offset,
         r.metadata, r.observed_at)
        for r in rows
    ]  # fmt: skip


def _utc(value: datetime) -> datetime:
    """Collected timestamps are naive in the session time zone (UTC in tests)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value
