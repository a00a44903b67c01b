"""silver_group_offsets: the source groups' committed offsets per snapshot, typed already by the data
source (partitions without a commit never reach bronze); the input of syncs- and mapping-based
translation. Warn-only expectations on Databricks (offsetlake.pipeline.expectations)."""

from __future__ import annotations

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession

from offsetlake.contract.tables import BRONZE_GROUP_OFFSETS, SILVER_GROUP_OFFSETS
from offsetlake.pipeline.expectations import expect_all
from offsetlake.pipeline.kafka_readers import pipeline_settings

spark = SparkSession.builder.getOrCreate()
settings = pipeline_settings(spark)


@dp.table(
    name=SILVER_GROUP_OFFSETS.name,
    comment=SILVER_GROUP_OFFSETS.comment,
    schema=SILVER_GROUP_OFFSETS.schema_ddl,
    cluster_by=settings.apply_cluster_by,
)
@expect_all(dp, SILVER_GROUP_OFFSETS.name)
def silver_group_offsets() -> DataFrame:
    return spark.readStream.table(BRONZE_GROUP_OFFSETS.name).select(*SILVER_GROUP_OFFSETS.column_names)
