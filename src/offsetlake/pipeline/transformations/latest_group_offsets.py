"""latest_group_offsets: the newest snapshot of each source group-partition's committed offset (SCD
type 1 over silver_group_offsets), what failover_data_loss and k2k_mapping_conflicts read. AUTO CDC
on Databricks, a materialized view locally, like offset_versions."""

from __future__ import annotations

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession

from offsetlake.contract.tables import LATEST_GROUP_OFFSETS, SILVER_GROUP_OFFSETS
from offsetlake.pipeline.kafka_readers import pipeline_settings
from offsetlake.pipeline.latest_group_offsets import latest_group_offsets, latest_group_offsets_by_auto_cdc

spark = SparkSession.builder.getOrCreate()
settings = pipeline_settings(spark)

if settings.gold_incremental == "auto_cdc":
    latest_group_offsets_by_auto_cdc(dp, source=SILVER_GROUP_OFFSETS.name)
else:

    @dp.materialized_view(
        name=LATEST_GROUP_OFFSETS.name,
        comment=LATEST_GROUP_OFFSETS.comment,
        schema=LATEST_GROUP_OFFSETS.schema_ddl,
    )
    def latest_group_offsets_view() -> DataFrame:
        return latest_group_offsets(spark.read.table(SILVER_GROUP_OFFSETS.name))
