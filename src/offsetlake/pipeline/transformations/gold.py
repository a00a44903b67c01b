"""Gold: translation_observations -> offset_versions -> offset_history and latest_offsets (what the
failover apply job reads), and MM2's replication progress (replication_progress_history,
replication_progress) with the per-group failover data loss (rules in
offsetlake.pipeline.progress_spark).

K2K (when configured): k2k_tracing_lookups (bronze: each snapshot searched on the target on K2K's
record-tracing headers, on the driver) feeds the k2k_tracing_headers method;
k2k_mapping_conflicts flags the newest snapshots whose mapping translation rests on a source record
mapped to two target topics (the apply refuses those by default).

Cost: translation_observations is a streaming table, so a refresh translates only the new
checkpoints and group-offset snapshots (plus one pass over the offset syncs and mappings, the
static side of the join). offset_versions is AUTO CDC on Databricks (``offsetlake.gold.incremental``
``auto_cdc``): only the new observations are applied. Locally (``recompute``) it is a
materialized view over every observation, the one gold step whose cost still grows with history
there (the open-source engine cannot MERGE into Parquet). offset_history and latest_offsets read
the versions alone; the translation rules are in offsetlake.pipeline.history. failover_data_loss
reads latest_group_offsets (the newest snapshot per group-partition), kept the same way. The
replication-progress views are still recomputed from their inputs, which grow with source
partitions x refreshes (log-offset snapshots), not with groups.

The tables the apply job reads (offset_history, latest_offsets, failover_data_loss) are
liquid-clustered by its keys on Databricks (``offsetlake.tables.clustering`` ``liquid``, see
settings.py); ``cluster_by`` is None locally.
"""

from __future__ import annotations

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession

from offsetlake.pipeline.history import (
    checkpoint_observations,
    latest_offsets,
    mapping_conflicts,
    mapping_observations,
    offset_history,
    offset_sync_observations,
    offset_versions,
    tracing_observations,
    versions_by_auto_cdc,
)
from offsetlake.pipeline.kafka_readers import pipeline_settings
from offsetlake.pipeline.latest_group_offsets import latest_group_offsets, latest_group_offsets_by_auto_cdc
from offsetlake.pipeline.progress_spark import (
    failover_data_loss,
    latest_progress,
    position_observations,
    replication_progress_history,
)
from offsetlake.pipeline.tables import (
    FAILOVER_DATA_LOSS,
    K2K_MAPPING_CONFLICTS,
    K2K_TRACING_LOOKUPS,
    LATEST_GROUP_OFFSETS,
    LATEST_OFFSETS,
    OFFSET_HISTORY,
    OFFSET_VERSIONS,
    REPLICATION_PROGRESS,
    REPLICATION_PROGRESS_HISTORY,
    SILVER_CHECKPOINTS,
    SILVER_CONNECT_OFFSETS,
    SILVER_GROUP_OFFSETS,
    SILVER_MAPPINGS,
    SILVER_OFFSET_SYNCS,
    SOURCE_LOG_OFFSETS,
    TRANSLATION_OBSERVATIONS,
)

spark = SparkSession.builder.getOrCreate()
settings = pipeline_settings(spark)


# The static sides of the translation joins, read through temporary views: measured locally, a
# query that reads a streaming table directly saw it as it was when the update started, so a
# sync ingested in the same update as a snapshot would have been missed.
@dp.temporary_view(name="known_offset_syncs", comment="Every offset sync ingested so far.")
def known_offset_syncs() -> DataFrame:
    return spark.read.table(SILVER_OFFSET_SYNCS.name)


if settings.mappings_topics:

    @dp.temporary_view(name="known_mappings", comment="Every record-level offset mapping ingested so far.")
    def known_mappings() -> DataFrame:
        return spark.read.table(SILVER_MAPPINGS.name)


@dp.table(
    name=TRANSLATION_OBSERVATIONS.name,
    comment=TRANSLATION_OBSERVATIONS.comment,
    schema=TRANSLATION_OBSERVATIONS.schema_ddl,
)
def translation_observations() -> DataFrame:
    group_offsets = spark.readStream.table(SILVER_GROUP_OFFSETS.name)
    observations = checkpoint_observations(spark.readStream.table(SILVER_CHECKPOINTS.name)).unionByName(
        offset_sync_observations(
            group_offsets, spark.read.table("known_offset_syncs"), settings.policy, settings.target_alias
        )
    )
    if settings.mappings_topics:
        observations = observations.unionByName(
            mapping_observations(group_offsets, spark.read.table("known_mappings"))
        )
    if settings.k2k_tracing_routes:
        observations = observations.unionByName(
            tracing_observations(spark.readStream.table(K2K_TRACING_LOOKUPS.name))
        )
    return observations


if settings.mappings_topics:

    @dp.materialized_view(
        name=K2K_MAPPING_CONFLICTS.name,
        comment=K2K_MAPPING_CONFLICTS.comment,
        schema=K2K_MAPPING_CONFLICTS.schema_ddl,
    )
    def k2k_mapping_conflicts() -> DataFrame:
        return mapping_conflicts(spark.read.table("newest_group_offsets"), spark.read.table("known_mappings"))


if settings.gold_incremental == "auto_cdc":
    versions_by_auto_cdc(
        dp,
        source=TRANSLATION_OBSERVATIONS.name,
        target=OFFSET_VERSIONS.name,
        comment=OFFSET_VERSIONS.comment,
    )
    latest_group_offsets_by_auto_cdc(dp, source=SILVER_GROUP_OFFSETS.name)
else:

    @dp.temporary_view(name="all_observations", comment="Every translation observation so far.")
    def all_observations() -> DataFrame:
        return spark.read.table(TRANSLATION_OBSERVATIONS.name)

    @dp.materialized_view(
        name=OFFSET_VERSIONS.name, comment=OFFSET_VERSIONS.comment, schema=OFFSET_VERSIONS.schema_ddl
    )
    def offset_versions_view() -> DataFrame:
        return offset_versions(spark.read.table("all_observations"))

    @dp.temporary_view(name="all_group_offsets", comment="Every source group-offset snapshot so far.")
    def all_group_offsets() -> DataFrame:
        return spark.read.table(SILVER_GROUP_OFFSETS.name)

    @dp.materialized_view(
        name=LATEST_GROUP_OFFSETS.name,
        comment=LATEST_GROUP_OFFSETS.comment,
        schema=LATEST_GROUP_OFFSETS.schema_ddl,
    )
    def latest_group_offsets_view() -> DataFrame:
        return latest_group_offsets(spark.read.table("all_group_offsets"))


@dp.temporary_view(name="current_versions", comment="offset_versions as this update left it.")
def current_versions() -> DataFrame:
    return spark.read.table(OFFSET_VERSIONS.name)


@dp.materialized_view(
    name=OFFSET_HISTORY.name,
    comment=OFFSET_HISTORY.comment,
    schema=OFFSET_HISTORY.schema_ddl,
    cluster_by=settings.apply_cluster_by,
)
def offset_history_view() -> DataFrame:
    return offset_history(spark.read.table("current_versions"))


@dp.materialized_view(
    name=LATEST_OFFSETS.name,
    comment=LATEST_OFFSETS.comment,
    schema=LATEST_OFFSETS.schema_ddl,
    cluster_by=settings.apply_cluster_by,
)
def latest_offsets_view() -> DataFrame:
    return latest_offsets(spark.read.table("current_versions"), settings.method_precedence)


# Read through temporary views, as the translation joins' static sides are: measured locally, a
# materialized view that reads a streaming table directly saw that table as it was when the update
# started (a snapshot taken this update showed up one update late); through a view it sees this
# update's rows.
@dp.temporary_view(name="replication_position_events", comment="MM2's positions: Connect offsets, syncs.")
def replication_position_events() -> DataFrame:
    connect = spark.read.table(SILVER_CONNECT_OFFSETS.name) if settings.connect_offsets_topics else None
    return position_observations(connect, spark.read.table(SILVER_OFFSET_SYNCS.name))


@dp.temporary_view(name="source_log_snapshots", comment="Every source log-offset snapshot.")
def source_log_snapshots() -> DataFrame:
    return spark.read.table(SOURCE_LOG_OFFSETS.name)


@dp.temporary_view(name="newest_group_offsets", comment="latest_group_offsets as this update left it.")
def newest_group_offsets() -> DataFrame:
    return spark.read.table(LATEST_GROUP_OFFSETS.name)


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
    name=FAILOVER_DATA_LOSS.name,
    comment=FAILOVER_DATA_LOSS.comment,
    schema=FAILOVER_DATA_LOSS.schema_ddl,
    cluster_by=settings.apply_cluster_by,
)
def failover_data_loss_view() -> DataFrame:
    return failover_data_loss(
        spark.read.table("newest_group_offsets"),
        latest_progress(_progress_history()),
        settings.policy,
        settings.target_alias,
    )
