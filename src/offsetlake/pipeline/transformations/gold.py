"""Gold: offset_history and latest_offsets, the tables the failover apply job reads.

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
from offsetlake.pipeline.sources import pipeline_settings
from offsetlake.pipeline.tables import (
    LATEST_OFFSETS,
    OFFSET_HISTORY,
    SILVER_CHECKPOINTS,
    SILVER_GROUP_OFFSETS,
    SILVER_MAPPINGS,
    SILVER_OFFSET_SYNCS,
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
