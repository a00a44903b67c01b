"""latest_group_offsets: the newest snapshot of each source group-partition's committed offset.

failover_data_loss needs only that, not every snapshot ever taken, so it reads this SCD type 1
table: keyed by (source_cluster, consumer_group, topic, partition), sequenced by snapshot_time.
On Databricks AUTO CDC keeps it (``offsetlake.gold.incremental`` ``auto_cdc``: each refresh
applies only the new snapshot); locally a materialized view computes the same rows from every
snapshot (no MERGE into Parquet).
"""

from __future__ import annotations

from types import ModuleType
from typing import Final

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as sf

from offsetlake.contract.tables import GROUP_PARTITION_KEY, LATEST_GROUP_OFFSETS
from offsetlake.pipeline.frames import add_columns

SEQUENCE: Final = "snapshot_time"


def latest_group_offsets(silver_group_offsets: DataFrame) -> DataFrame:
    """What AUTO CDC SCD type 1 keeps from ``silver_group_offsets``, at once: the newest row per key."""
    newest_first = Window.partitionBy(*GROUP_PARTITION_KEY).orderBy(sf.col(SEQUENCE).desc())
    ranked = add_columns(silver_group_offsets, {"_rank": sf.row_number().over(newest_first)})
    return ranked.where(sf.col("_rank") == 1).select(*LATEST_GROUP_OFFSETS.column_names)


def latest_group_offsets_by_auto_cdc(engine: ModuleType, source: str) -> None:
    """Declare latest_group_offsets as the AUTO CDC SCD type 1 table over the ``source`` stream."""
    engine.create_streaming_table(
        name=LATEST_GROUP_OFFSETS.name,
        comment=LATEST_GROUP_OFFSETS.comment,
        schema=LATEST_GROUP_OFFSETS.schema_ddl,
    )
    engine.create_auto_cdc_flow(
        target=LATEST_GROUP_OFFSETS.name,
        source=source,
        keys=list(GROUP_PARTITION_KEY),
        sequence_by=sf.col(SEQUENCE),
        stored_as_scd_type=1,
    )
