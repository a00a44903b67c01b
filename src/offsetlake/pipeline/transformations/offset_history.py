"""offset_history: every distinct translation with its validity interval, from offset_versions.
Liquid-clustered by the apply job's keys on Databricks (``offsetlake.tables.clustering``)."""

from __future__ import annotations

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession

from offsetlake.contract.tables import OFFSET_HISTORY, OFFSET_VERSIONS
from offsetlake.pipeline.generated_code import every_record_conf
from offsetlake.pipeline.history import offset_history
from offsetlake.pipeline.kafka_readers import pipeline_settings

spark = SparkSession.builder.getOrCreate()
settings = pipeline_settings(spark)


@dp.materialized_view(
    name=OFFSET_HISTORY.name,
    comment=OFFSET_HISTORY.comment,
    schema=OFFSET_HISTORY.schema_ddl,
    cluster_by=settings.apply_cluster_by,
    spark_conf=every_record_conf(spark.conf.getAll),
)
def offset_history_view() -> DataFrame:
    return offset_history(spark.read.table(OFFSET_VERSIONS.name))
