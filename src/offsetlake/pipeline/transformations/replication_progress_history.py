"""replication_progress_history: MM2's replication progress per source partition at every
log-offset snapshot (replication_position_events.py; rules in offsetlake.pipeline.progress_spark)."""

from __future__ import annotations

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession

from offsetlake.contract.tables import REPLICATION_PROGRESS_HISTORY, SOURCE_LOG_OFFSETS
from offsetlake.pipeline.progress_spark import replication_progress_history

spark = SparkSession.builder.getOrCreate()


@dp.materialized_view(
    name=REPLICATION_PROGRESS_HISTORY.name,
    comment=REPLICATION_PROGRESS_HISTORY.comment,
    schema=REPLICATION_PROGRESS_HISTORY.schema_ddl,
)
def replication_progress_history_view() -> DataFrame:
    return replication_progress_history(
        spark.read.table("replication_position_events"), spark.read.table(SOURCE_LOG_OFFSETS.name)
    )
