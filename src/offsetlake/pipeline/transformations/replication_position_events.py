"""replication_position_events (a temporary view, not stored): MM2's replicated positions, from the
Connect offsets (when read) and the offset syncs; what the replication-progress views and
failover_data_loss compute from (rules in offsetlake.pipeline.progress_spark). They are recomputed
from their inputs, which grow with source partitions x refreshes, not with groups."""

from __future__ import annotations

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession

from offsetlake.contract.tables import SILVER_CONNECT_OFFSETS, SILVER_OFFSET_SYNCS
from offsetlake.pipeline.kafka_readers import pipeline_settings
from offsetlake.pipeline.progress_spark import position_observations

spark = SparkSession.builder.getOrCreate()
settings = pipeline_settings(spark)


@dp.temporary_view(name="replication_position_events", comment="MM2's positions: Connect offsets, syncs.")
def replication_position_events() -> DataFrame:
    connect = spark.read.table(SILVER_CONNECT_OFFSETS.name) if settings.connect_offsets_topics else None
    return position_observations(connect, spark.read.table(SILVER_OFFSET_SYNCS.name))
