"""Gold replication progress and data loss in Spark equal the pure reference (replication_progress.py).

One small frame per input covers every status: a partition that progresses (Connect offsets with a
periodic flush, a fresher sync), one that is reset by a tombstone and restarted by a sync, one never
replicated, and one that is stuck while the source grows (lag in seconds from the snapshots).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from offsetlake.contract.tables import (
    SILVER_CONNECT_OFFSETS,
    SILVER_GROUP_OFFSETS,
    SILVER_OFFSET_SYNCS,
    SOURCE_LOG_OFFSETS,
)
from offsetlake.mirror.policy import ReplicationPolicy
from offsetlake.mirror.progress import PositionObservation, data_loss, replicated_position
from offsetlake.pipeline.latest_group_offsets import latest_group_offsets
from offsetlake.pipeline.progress_spark import (
    failover_data_loss,
    latest_progress,
    position_observations,
    replication_progress_history,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

T0 = datetime(2026, 11, 21, 9, 0, tzinfo=UTC)


def _at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


# (topic, seconds, last replicated upstream offset or None for a tombstone)
CONNECT = [
    ("moving", 10, 9),
    ("moving", 20, 19),
    ("moving", 30, 29),
    ("reset", 10, 49),
    ("reset", 25, None),
    ("stuck", 5, 4),
    ("stuck", 35, 4),  # flushed again without progress
]
# (topic, seconds, upstream offset)
SYNCS = [("moving", 8, 5), ("moving", 33, 31), ("reset", 9, 40), ("reset", 40, 2), ("stuck", 6, 4)]
# (topic, seconds, log start, log end): one snapshot per "update"
SNAPSHOTS = [
    (topic, seconds, 0, end)
    for topic, ends in {
        "moving": (12, 25, 40, 45),
        "reset": (55, 60, 60, 60),
        "never": (7, 9, 9, 9),
        "stuck": (5, 20, 40, 60),
    }.items()
    for seconds, end in zip((15, 28, 38, 50), ends, strict=True)
]
GROUPS = [("app", "moving", 44), ("app", "reset", 60), ("app", "never", 3), ("late", "stuck", 2)]


def test_history_latest_and_data_loss_equal_the_pure_reference(spark: SparkSession) -> None:
    connect_rows = [
        (
            "MirrorSourceConnector",
            "{}",
            None,
            offset is None,
            "east",
            topic,
            0,
            offset,
            _at(t),
            "mm2-offsets",
            0,
            i,
            _at(t),
        )
        for i, (topic, t, offset) in enumerate(CONNECT)
    ]
    sync_rows = [
        ("east", topic, 0, upstream, 0, _at(t), "syncs", 0, i, _at(t))
        for i, (topic, t, upstream) in enumerate(SYNCS)
    ]
    log_rows = [(topic, 0, start, end, _at(t), "east", _at(t)) for topic, t, start, end in SNAPSHOTS]
    connect = spark.createDataFrame(connect_rows, SILVER_CONNECT_OFFSETS.schema_ddl)
    syncs = spark.createDataFrame(sync_rows, SILVER_OFFSET_SYNCS.schema_ddl)
    logs = spark.createDataFrame(log_rows, SOURCE_LOG_OFFSETS.schema_ddl)
    history = replication_progress_history(position_observations(connect, syncs), logs).cache()
    rows = {(row["topic"], row["snapshot_time"]): row for row in history.collect()}
    assert len(rows) == len(SNAPSHOTS)

    observations = {
        topic: [
            *(
                PositionObservation("connect_offset", _at(t), i, o)
                for i, (tp, t, o) in enumerate(CONNECT)
                if tp == topic
            ),
            *(
                PositionObservation("offset_sync", _at(t), i, u)
                for i, (tp, t, u) in enumerate(SYNCS)
                if tp == topic
            ),
        ]
        for topic in ("moving", "reset", "never", "stuck")
    }
    for topic, t, start, end in SNAPSHOTS:
        row = rows[(topic, _at(t).replace(tzinfo=None))]
        expected = replicated_position(observations[topic], _at(t))
        assert row["status"] == expected.status.value, (topic, t)
        assert row["position_method"] == expected.method, (topic, t)
        if expected.next_offset is None:
            assert row["upstream_offset"] is None and row["last_progress_at"] is None
            assert row["lag_records"] == (end - start if expected.status == "never_replicated" else None)
        else:
            assert row["upstream_offset"] == expected.next_offset - 1, (topic, t)
            assert row["lag_records"] == max(0, end - expected.next_offset), (topic, t)
            assert row["last_progress_at"] == expected.last_progress_at.replace(tzinfo=None), (topic, t)

    # Stuck at next offset 5 while the source grows: record 5 first showed at 28 s (log end 20).
    stuck = {t: rows[("stuck", _at(t).replace(tzinfo=None))] for t in (15, 28, 38, 50)}
    assert [stuck[t]["lag_records"] for t in (15, 28, 38, 50)] == [0, 15, 35, 55]
    assert [stuck[t]["lag_seconds"] for t in (15, 28, 38, 50)] == [0, 0, 10, 22]
    assert stuck[50]["last_progress_at"] == _at(5).replace(tzinfo=None)

    latest = {row["topic"]: row for row in latest_progress(history).collect()}
    assert {topic: row["snapshot_time"] for topic, row in latest.items()} == {
        topic: _at(50).replace(tzinfo=None) for topic in ("moving", "reset", "never", "stuck")
    }
    groups = spark.createDataFrame(
        # An older snapshot of every group, at other offsets: only the newest one counts.
        [(g, "Empty", topic, 0, committed, "", _at(49), "east", _at(49)) for g, topic, committed in GROUPS]
        + [
            (g, "Empty", topic, 0, committed + 7, "", _at(40), "east", _at(40))
            for g, topic, committed in GROUPS
        ],
        SILVER_GROUP_OFFSETS.schema_ddl,
    )
    loss = {
        (row["consumer_group"], row["topic"]): row
        for row in failover_data_loss(
            latest_group_offsets(groups), latest_progress(history), ReplicationPolicy(), "dr"
        ).collect()
    }
    for group, topic, committed in GROUPS:
        row, progress = loss[(group, topic)], latest[topic]
        assert row["target_topic"] == f"east.{topic}"
        if progress["status"] == "reset":
            assert (row["consumed_not_replicated"], row["unconsumed_lost"]) == (None, None)
            continue
        base = (
            progress["upstream_offset"] + 1
            if progress["status"] == "replicating"
            else progress["log_start_offset"]
        )
        expected_loss = data_loss(committed, base, progress["log_end_offset"])
        assert (row["consumed_not_replicated"], row["unconsumed_lost"]) == (
            expected_loss.consumed_not_replicated,
            expected_loss.unconsumed_lost,
        ), (group, topic)
    assert (loss[("app", "never")]["consumed_not_replicated"], loss[("app", "never")]["unconsumed_lost"]) == (
        3,
        6,
    )
