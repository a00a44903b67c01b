"""k2k_mapping_conflicts (when ``offsetlake.mappings.topics`` is set): the newest snapshots whose
mapping translation rests on a source record mapped to two target topics (the apply refuses those
by default)."""

from __future__ import annotations

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession

from offsetlake.contract.tables import K2K_MAPPING_CONFLICTS, LATEST_GROUP_OFFSETS, SILVER_MAPPINGS
from offsetlake.pipeline.history import mapping_conflicts
from offsetlake.pipeline.kafka_readers import pipeline_settings

spark = SparkSession.builder.getOrCreate()
settings = pipeline_settings(spark)

if settings.mappings_topics:

    @dp.materialized_view(
        name=K2K_MAPPING_CONFLICTS.name,
        comment=K2K_MAPPING_CONFLICTS.comment,
        schema=K2K_MAPPING_CONFLICTS.schema_ddl,
    )
    def k2k_mapping_conflicts() -> DataFrame:
        return mapping_conflicts(
            spark.read.table(LATEST_GROUP_OFFSETS.name), spark.read.table(SILVER_MAPPINGS.name)
        )
