"""translation_observations: every translated offset by every method, appended as it is observed.

Gold runs translation_observations -> offset_versions -> offset_history and latest_offsets (what
the failover apply job reads), beside MM2's replication progress (replication_progress_history,
replication_progress) and the per-group failover data loss (rules in
offsetlake.pipeline.progress_spark). K2K (when configured): k2k_tracing_lookups (bronze) feeds the
k2k_tracing_headers method; k2k_mapping_conflicts flags what the apply refuses.

Cost: this is a streaming table, so a refresh translates only the new checkpoints and group-offset
snapshots (plus one pass over the offset syncs and mappings, the static side of the join).
"""

from __future__ import annotations

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession

from offsetlake.contract.tables import (
    K2K_TRACING_LOOKUPS,
    SILVER_CHECKPOINTS,
    SILVER_GROUP_OFFSETS,
    SILVER_MAPPINGS,
    SILVER_OFFSET_SYNCS,
    TRANSLATION_OBSERVATIONS,
)
from offsetlake.pipeline.history import (
    checkpoint_observations,
    mapping_observations,
    offset_sync_observations,
    tracing_observations,
)
from offsetlake.pipeline.kafka_readers import pipeline_settings

spark = SparkSession.builder.getOrCreate()
settings = pipeline_settings(spark)


# The static sides of the translation joins, read through temporary views: measured locally, a
# query that reads a streaming table directly saw it as it was when the update started, so a
# sync ingested in the same update as a snapshot would have been missed. (A streaming flow is
# started as soon as its streaming inputs are done, not after the tables it reads in batch:
# measured with spark-pipelines 4.2. A materialized view waits for every table it reads, so the
# gold views read their tables directly.)
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
