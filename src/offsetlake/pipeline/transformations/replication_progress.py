"""replication_progress: MM2's replication progress per source partition at the newest log-offset
snapshot, computed from its inputs like replication_progress_history (not from that table)."""

from __future__ import annotations

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession

from offsetlake.contract.tables import REPLICATION_PROGRESS, SOURCE_LOG_OFFSETS
from offsetlake.pipeline.progress_spark import latest_progress, replication_progress_history

spark = SparkSession.builder.getOrCreate()


@dp.materialized_view(
    name=REPLICATION_PROGRESS.name,
    comment=REPLICATION_PROGRESS.comment,
    schema=REPLICATION_PROGRESS.schema_ddl,
)
def replication_progress_view() -> DataFrame:
    return latest_progress(
        replication_progress_history(
            spark.read.table("replication_position_events"), spark.read.table(SOURCE_LOG_OFFSETS.name)
        )
    )
