"""Gold: offset_history and latest_offsets (what the failover apply job reads), and MM2's replication
progress (replication_progress_history, replication_progress) with the per-group failover data loss
(rules in offsetlake.pipeline.replication_progress).

Rules (freshness before precedence, disagreement) are in offsetlake.pipeline.history. Both are
materialized views recomputed from silver on each update. Cost note: their input is the decoded,
typed silver rows (no bytes, no decoding), but it is the whole silver history: offset syncs must be
complete for the as-of translation, and every group-offset snapshot is an observation. The
open-source pipeline engine has no incremental materialized-view refresh, so gold refresh cost
grows with silver size while bronze/silver cost grows with new records only.
"""

from __future__ import annotations

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession

from offsetlake.pipeline.history import (
    checkpoint_observations,
    latest_offsets,
    mapping_observations,
    offset_history,
    offset_sync_observations,
)
from offsetlake.pipeline.replication_progress import (
    failover_data_loss,
    latest_progress,
    position_observations,
    replication_progress_history,
)
from offsetlake.pipeline.sources import pipeline_settings
from offsetlake.pipeline.tables import (
    FAILOVER_DATA_LOSS,
    LATEST_OFFSETS,
    OFFSET_HISTORY,
    REPLICATION_PROGRESS,
    REPLICATION_PROGRESS_HISTORY,
    SILVER_CHECKPOINTS,
    SILVER_CONNECT_OFFSETS,
    SILVER_GROUP_OFFSETS,
    SILVER_MAPPINGS,
    SILVER_OFFSET_SYNCS,
    SOURCE_LOG_OFFSETS,
)

spark = SparkSession.builder.getOrCreate()
settings = pipeline_settings(spark)


@dp.temporary_view(name="translation_observations", comment="Every translated offset by every method.")
def translation_observations() -> DataFrame:
    group_offsets = spark.read.table(SILVER_GROUP_OFFSETS.name)
    observations = checkpoint_observations(spark.read.table(SILVER_CHECKPOINTS.name)).unionByName(
        offset_sync_observations(
            group_offsets, spark.read.table(SILVER_OFFSET_SYNCS.name), settings.policy, settings.target_alias
        )
    )
    if settings.mappings_topics:
        observations = observations.unionByName(
            mapping_observations(group_offsets, spark.read.table(SILVER_MAPPINGS.name))
        )
    return observations


@dp.materialized_view(
    name=OFFSET_HISTORY.name, comment=OFFSET_HISTORY.comment, schema=OFFSET_HISTORY.schema_ddl
)
def offset_history_view() -> DataFrame:
    return offset_history(spark.read.table("translation_observations"))


@dp.materialized_view(
    name=LATEST_OFFSETS.name, comment=LATEST_OFFSETS.comment, schema=LATEST_OFFSETS.schema_ddl
)
def latest_offsets_view() -> DataFrame:
    return latest_offsets(spark.read.table("translation_observations"), settings.method_precedence)


# Read through temporary views, as translation_observations is: measured locally, a materialized
# view that reads a streaming table directly saw that table as it was when the update started (a
# snapshot taken this update showed up one update late); through a view it sees this update's rows.
@dp.temporary_view(name="replication_position_events", comment="MM2's positions: Connect offsets, syncs.")
def replication_position_events() -> DataFrame:
    connect = spark.read.table(SILVER_CONNECT_OFFSETS.name) if settings.connect_offsets_topics else None
    return position_observations(connect, spark.read.table(SILVER_OFFSET_SYNCS.name))


@dp.temporary_view(name="source_log_snapshots", comment="Every source log-offset snapshot.")
def source_log_snapshots() -> DataFrame:
    return spark.read.table(SOURCE_LOG_OFFSETS.name)


@dp.temporary_view(name="source_group_snapshots", comment="Every source group-offset snapshot.")
def source_group_snapshots() -> DataFrame:
    return spark.read.table(SILVER_GROUP_OFFSETS.name)


def _progress_history() -> DataFrame:
    return replication_progress_history(
        spark.read.table("replication_position_events"), spark.read.table("source_log_snapshots")
    )


@dp.materialized_view(
    name=REPLICATION_PROGRESS_HISTORY.name,
    comment=REPLICATION_PROGRESS_HISTORY.comment,
    schema=REPLICATION_PROGRESS_HISTORY.schema_ddl,
)
def replication_progress_history_view() -> DataFrame:
    return _progress_history()


@dp.materialized_view(
    name=REPLICATION_PROGRESS.name,
    comment=REPLICATION_PROGRESS.comment,
    schema=REPLICATION_PROGRESS.schema_ddl,
)
def replication_progress_view() -> DataFrame:
    return latest_progress(_progress_history())


@dp.materialized_view(
    name=FAILOVER_DATA_LOSS.name, comment=FAILOVER_DATA_LOSS.comment, schema=FAILOVER_DATA_LOSS.schema_ddl
)
def failover_data_loss_view() -> DataFrame:
    return failover_data_loss(
        spark.read.table("source_group_snapshots"),
        latest_progress(_progress_history()),
        settings.policy,
        settings.target_alias,
    )
