"""failover_data_loss: what failing over now would cost each group on each source partition, from
the newest group snapshots and the newest replication progress. Liquid-clustered by the apply job's
keys on Databricks (``offsetlake.tables.clustering``)."""

from __future__ import annotations

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession

from offsetlake.contract.tables import FAILOVER_DATA_LOSS, LATEST_GROUP_OFFSETS, SOURCE_LOG_OFFSETS
from offsetlake.pipeline.kafka_readers import pipeline_settings
from offsetlake.pipeline.progress_spark import (
    failover_data_loss,
    latest_progress,
    replication_progress_history,
)

spark = SparkSession.builder.getOrCreate()
settings = pipeline_settings(spark)


@dp.materialized_view(
    name=FAILOVER_DATA_LOSS.name,
    comment=FAILOVER_DATA_LOSS.comment,
    schema=FAILOVER_DATA_LOSS.schema_ddl,
    cluster_by=settings.apply_cluster_by,
)
def failover_data_loss_view() -> DataFrame:
    progress = replication_progress_history(
        spark.read.table("replication_position_events"), spark.read.table(SOURCE_LOG_OFFSETS.name)
    )
    return failover_data_loss(
        spark.read.table(LATEST_GROUP_OFFSETS.name),
        latest_progress(progress),
        settings.policy,
        settings.target_alias,
    )
