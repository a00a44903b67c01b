"""Gold replication progress and failover data loss as DataFrame functions (Spark side of
``offsetlake.mirror.progress``, the pure reference whose rules these implement).

All three are window passes over per-partition event streams, linear in their inputs (no
snapshot x observation joins, which would grow quadratically with history):

- *position*: Connect offsets, offset syncs and log-offset snapshots in one time-ordered stream
  per source partition (observations before a snapshot taken at the same instant); running
  ``last`` of the newest Connect offset and newest sync gives the position at each snapshot, and
  the newest row where it changed gives ``last_progress_at``;
- *lag in seconds*: a second stream per partition ordered by OFFSET: the offsets each snapshot
  first showed ([previous log end, log end) appeared at that snapshot) interleaved with the first
  unreplicated offset of each snapshot; running ``last`` finds when that record first showed up;
- *data loss*: the newest snapshot of each group (latest_group_offsets) joined to the newest
  progress row.
"""

from __future__ import annotations

from typing import Final

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as sf

from offsetlake.contract.tables import (
    FAILOVER_DATA_LOSS,
    GROUP_PARTITION_KEY,
    PARTITION_KEY,
    REPLICATION_PROGRESS_HISTORY,
)
from offsetlake.mirror.policy import ReplicationPolicy
from offsetlake.mirror.progress import INT64_MAX, ReplicationStatus
from offsetlake.pipeline.frames import add_columns
from offsetlake.pipeline.translation_spark import downstream_topic

CONNECT: Final = "connect_offset"
SYNC: Final = "offset_sync"
_SNAPSHOT: Final = "snapshot"


def position_observations(
    silver_connect_offsets: DataFrame | None, silver_offset_syncs: DataFrame
) -> DataFrame:
    """MirrorSourceConnector offsets (resets as NULL; None when not ingested) and offset syncs."""
    syncs = silver_offset_syncs.select(
        *PARTITION_KEY,
        sf.lit(SYNC).alias("kind"),
        sf.col("sync_timestamp").alias("observed_at"),
        sf.col("kafka_offset").alias("observation_order"),
        "upstream_offset",
    )
    if silver_connect_offsets is None:
        return syncs
    connect = silver_connect_offsets.where(sf.col("source_cluster").isNotNull()).select(
        *PARTITION_KEY,
        sf.lit(CONNECT).alias("kind"),
        sf.col("offset_timestamp").alias("observed_at"),
        sf.col("kafka_offset").alias("observation_order"),
        "upstream_offset",
    )
    return connect.unionByName(syncs)


def _next_after(offset: Column) -> Column:
    """``offset + 1`` saturating at INT64 max, as ``replication_progress.next_after`` (ANSI mode
    would fail the whole update on the overflow; MM2 never writes such an offset, a fixture does)."""
    return sf.when(offset < sf.lit(INT64_MAX), offset + 1).otherwise(offset)


def _no_snapshot_columns(frame: DataFrame) -> DataFrame:
    return add_columns(
        frame,
        {
            "log_start_offset": sf.lit(None).cast("bigint"),
            "log_end_offset": sf.lit(None).cast("bigint"),
            "_is_snapshot": sf.lit(False),
        },
    )


def _positions_at_snapshots(observations: DataFrame, log_offsets: DataFrame) -> DataFrame:
    snapshots = log_offsets.select(
        *PARTITION_KEY,
        sf.lit(_SNAPSHOT).alias("kind"),
        sf.col("snapshot_time").alias("observed_at"),
        sf.lit(0).cast("bigint").alias("observation_order"),
        sf.lit(None).cast("bigint").alias("upstream_offset"),
        "log_start_offset",
        "log_end_offset",
        sf.lit(True).alias("_is_snapshot"),
    )
    events = _no_snapshot_columns(observations).unionByName(snapshots)
    ordered = Window.partitionBy(*PARTITION_KEY).orderBy("observed_at", "_is_snapshot", "observation_order")
    running = ordered.rowsBetween(Window.unboundedPreceding, Window.currentRow)

    def newest(kind: str) -> Column:
        observed = sf.struct(sf.col("observed_at").alias("at"), sf.col("upstream_offset").alias("offset"))
        return sf.last(sf.when(sf.col("kind") == kind, observed), ignorenulls=True).over(running)

    with_newest = add_columns(events, {"_connect": newest(CONNECT), "_sync": newest(SYNC)})
    connect, sync = sf.col("_connect"), sf.col("_sync")
    sync_is_fresher = sync.isNotNull() & (connect.isNull() | (sync["at"] > connect["at"]))
    connect_next = _next_after(connect["offset"])
    sync_next = sf.when(sync_is_fresher, _next_after(sync["offset"]))
    next_offset = sf.greatest(connect_next, sync_next)  # NULLs are skipped
    status = (
        sf.when(next_offset.isNotNull(), sf.lit(ReplicationStatus.REPLICATING.value))
        .when(connect.isNotNull(), sf.lit(ReplicationStatus.RESET.value))
        .otherwise(sf.lit(ReplicationStatus.NEVER_REPLICATED.value))
    )
    method = sf.when(
        next_offset.isNotNull(),
        sf.when(connect_next.isNotNull() & (connect_next >= sync_next), sf.lit(CONNECT))
        .when(sync_next.isNotNull(), sf.lit(SYNC))
        .otherwise(sf.lit(CONNECT)),
    )
    positioned = add_columns(with_newest, {"_next": next_offset, "status": status, "position_method": method})
    previous_status = sf.coalesce(
        sf.lag("status").over(ordered), sf.lit(ReplicationStatus.NEVER_REPLICATED.value)
    )
    changed = (sf.col("status") != previous_status) | ~sf.col("_next").eqNullSafe(
        sf.lag("_next").over(ordered)
    )
    progress_at = sf.last(sf.when(changed, sf.col("observed_at")), ignorenulls=True).over(running)
    return add_columns(positioned, {"_progress_at": progress_at}).where("_is_snapshot")


def _lag_records() -> Column:
    status, log_end = sf.col("status"), sf.col("log_end_offset")
    return (
        sf.when(
            status == ReplicationStatus.REPLICATING.value, sf.greatest(log_end - sf.col("_next"), sf.lit(0))
        )
        .when(status == ReplicationStatus.NEVER_REPLICATED.value, log_end - sf.col("log_start_offset"))
        .cast("bigint")
    )


def _first_seen_of_next_offset(snapshots: DataFrame, log_offsets: DataFrame) -> DataFrame:
    """(partition, snapshot_time) -> when the first unreplicated record first showed in a snapshot."""
    by_time = Window.partitionBy(*PARTITION_KEY).orderBy("snapshot_time")
    appeared = add_columns(
        log_offsets.select(*PARTITION_KEY, "snapshot_time", "log_end_offset"),
        {"_from": sf.coalesce(sf.lag("log_end_offset").over(by_time), sf.lit(-1).cast("bigint"))},
    ).where(sf.col("log_end_offset") > sf.col("_from"))
    intervals = appeared.select(
        *PARTITION_KEY,
        sf.col("_from").alias("_at_offset"),
        sf.lit(0).alias("_is_query"),
        sf.col("snapshot_time").alias("_appeared_at"),
        sf.lit(None).cast("timestamp").alias("snapshot_time"),
    )
    queries = snapshots.where(sf.col("lag_records") > 0).select(
        *PARTITION_KEY,
        sf.col("_next").alias("_at_offset"),
        sf.lit(1).alias("_is_query"),
        sf.lit(None).cast("timestamp").alias("_appeared_at"),
        "snapshot_time",
    )
    by_offset = (
        Window.partitionBy(*PARTITION_KEY)
        .orderBy("_at_offset", "_is_query")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    found = add_columns(
        intervals.unionByName(queries),
        {"_first_seen": sf.last("_appeared_at", ignorenulls=True).over(by_offset)},
    )
    return found.where(sf.col("_is_query") == 1).select(*PARTITION_KEY, "snapshot_time", "_first_seen")


def replication_progress_history(observations: DataFrame, log_offsets: DataFrame) -> DataFrame:
    """One row per log-offset snapshot: MM2's position as of then, the head, the lag."""
    positions = _positions_at_snapshots(observations, log_offsets)
    snapshots = add_columns(
        positions.withColumnRenamed("observed_at", "snapshot_time"), {"lag_records": _lag_records()}
    )
    first_seen = _first_seen_of_next_offset(snapshots, log_offsets)
    waited = sf.unix_seconds(sf.col("snapshot_time")) - sf.unix_seconds(sf.col("_first_seen"))
    joined = snapshots.join(first_seen, [*PARTITION_KEY, "snapshot_time"], "left")
    lag_seconds = sf.when(sf.col("lag_records") == 0, sf.lit(0)).when(waited >= 0, waited)
    replicating = sf.col("status") == ReplicationStatus.REPLICATING.value
    return joined.select(
        *PARTITION_KEY,
        "status",
        (sf.col("_next") - 1).alias("upstream_offset"),
        "position_method",
        "log_start_offset",
        "log_end_offset",
        "lag_records",
        lag_seconds.alias("lag_seconds"),
        sf.when(replicating, sf.col("_progress_at")).alias("last_progress_at"),
        "snapshot_time",
    ).select(*_typed(REPLICATION_PROGRESS_HISTORY.columns))


def latest_progress(history: DataFrame) -> DataFrame:
    """The newest snapshot's row per source partition."""
    newest_first = Window.partitionBy(*PARTITION_KEY).orderBy(sf.col("snapshot_time").desc())
    ranked = add_columns(history, {"_rank": sf.row_number().over(newest_first)})
    return ranked.where(sf.col("_rank") == 1).select(*REPLICATION_PROGRESS_HISTORY.column_names)


def failover_data_loss(
    latest_group_offsets: DataFrame, progress: DataFrame, policy: ReplicationPolicy, target_alias: str
) -> DataFrame:
    """Per group-partition (``latest_group_offsets``: its newest snapshot, one row per key):
    consumed-but-unreplicated and unconsumed-and-unreplicated records."""
    key = GROUP_PARTITION_KEY
    groups = latest_group_offsets.select(*key, "committed_offset", "snapshot_time")
    joined = groups.join(
        progress.select(
            *PARTITION_KEY,
            "status",
            "upstream_offset",
            "log_start_offset",
            "log_end_offset",
            sf.col("snapshot_time").alias("progress_at"),
        ),
        list(PARTITION_KEY),
        "left",
    )
    status = sf.col("status")
    replicated_through = sf.when(
        status == ReplicationStatus.REPLICATING.value, _next_after(sf.col("upstream_offset"))
    ).when(status == ReplicationStatus.NEVER_REPLICATED.value, sf.col("log_start_offset"))
    log_end = sf.col("log_end_offset")
    committed = sf.least(sf.col("committed_offset"), log_end)
    known = replicated_through.isNotNull() & log_end.isNotNull()
    return joined.select(
        *key,
        downstream_topic(policy, sf.col("source_cluster"), sf.col("topic"), target_alias).alias(
            "target_topic"
        ),
        "committed_offset",
        "status",
        replicated_through.alias("replicated_through"),
        "log_end_offset",
        # greatest() skips NULLs: guard so an unknown position stays NULL instead of becoming 0.
        sf.when(known, sf.greatest(committed - replicated_through, sf.lit(0))).alias(
            "consumed_not_replicated"
        ),
        sf.when(known, sf.greatest(log_end - sf.greatest(committed, replicated_through), sf.lit(0))).alias(
            "unconsumed_lost"
        ),
        sf.col("snapshot_time").alias("committed_at"),
        "progress_at",
    ).select(*_typed(FAILOVER_DATA_LOSS.columns))


def _typed(columns: tuple[tuple[str, str, str], ...]) -> list[Column]:
    return [sf.col(name).cast(kind).alias(name) for name, kind, _ in columns]
