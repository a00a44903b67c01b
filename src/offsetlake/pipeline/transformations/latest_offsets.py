"""latest_offsets: the current translated offset per group-partition, what the failover apply job
reads, from offset_versions under ``offsetlake.method.precedence``. Liquid-clustered by the apply
job's keys on Databricks (``offsetlake.tables.clustering``)."""

from __future__ import annotations

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession

from offsetlake.contract.tables import LATEST_OFFSETS, OFFSET_VERSIONS
from offsetlake.pipeline.generated_code import every_record_conf
from offsetlake.pipeline.history import latest_offsets
from offsetlake.pipeline.kafka_readers import pipeline_settings

spark = SparkSession.builder.getOrCreate()
settings = pipeline_settings(spark)


@dp.materialized_view(
    name=LATEST_OFFSETS.name,
    comment=LATEST_OFFSETS.comment,
    schema=LATEST_OFFSETS.schema_ddl,
    cluster_by=settings.apply_cluster_by,
    spark_conf=every_record_conf(spark.conf.getAll),
)
def latest_offsets_view() -> DataFrame:
    return latest_offsets(spark.read.table(OFFSET_VERSIONS.name), settings.method_precedence)
