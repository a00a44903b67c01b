"""Gold logic as DataFrame functions: translation observations -> offset_history and latest_offsets.

An *observation* is one translated offset for (source_cluster, consumer_group, topic, partition)
by one method at one time:

- ``checkpoint``: each MM2 checkpoint, observed at its Kafka timestamp (when MM2 listed offsets);
- ``offset_sync``: each source group-offset snapshot translated with the full sync history
  (translation_spark.translate_with_offset_syncs), observed at the snapshot time;
- ``mapping``: each snapshot translated exactly through record-level mappings.

``offset_history`` keeps, per key and method, only the observations where the translated offset
changed: valid_from is that observation's time (= source_timestamp, event time of the source
world, so "as of T" means what the source group had committed at T) and valid_to the next change.

``latest_offsets`` picks one method per key from each method's current translation, by the rule
in offsetlake.pipeline.precedence (freshness first, then ``offsetlake.method.precedence``);
``methods_disagree`` flags same-upstream methods that differ (a stale method based on an older
upstream offset is not a disagreement, it is just stale; sql/stale_checkpoints.sql shows those).

Both are recomputed from silver on every update (materialized views): their inputs are the compact
decoded rows, not raw bytes; see transformations/gold.py for the cost note. Because snapshots are
translated with the full sync history known at refresh time, a sync that arrives late (MM2 lag)
can sharpen the translation of an earlier snapshot; history then shows the better offset.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as sf

from offsetlake.pipeline.frames import add_columns
from offsetlake.pipeline.precedence import GOLD_KEY, choose_translation
from offsetlake.pipeline.tables import LATEST_OFFSETS, OFFSET_HISTORY
from offsetlake.pipeline.translation_spark import (
    downstream_topic,
    translate_with_mappings,
    translate_with_offset_syncs,
)
from offsetlake.replication import ReplicationPolicy

OBSERVATION_COLUMNS: Final = (
    *GOLD_KEY,
    "downstream_offset",
    "upstream_offset",
    "method",
    "metadata",
    "observed_at",
    "observation_order",
)


def checkpoint_observations(silver_checkpoints: DataFrame) -> DataFrame:
    return silver_checkpoints.select(
        *GOLD_KEY,
        "downstream_offset",
        "upstream_offset",
        sf.lit("checkpoint").alias("method"),
        "metadata",
        sf.col("checkpoint_timestamp").alias("observed_at"),
        sf.col("kafka_offset").alias("observation_order"),
    )


COMMITTED_COLUMNS: Final = (
    "source_cluster",
    "consumer_group",
    "topic",
    "partition",
    "committed_offset",
    "metadata",
    "snapshot_time",
)


def _committed(silver_group_offsets: DataFrame) -> DataFrame:
    return silver_group_offsets.select(*COMMITTED_COLUMNS)


def offset_sync_observations(
    silver_group_offsets: DataFrame,
    silver_offset_syncs: DataFrame,
    policy: ReplicationPolicy,
    target_alias: str,
) -> DataFrame:
    syncs = silver_offset_syncs.select(
        "source_cluster",
        "topic",
        "partition",
        "upstream_offset",
        "downstream_offset",
        sf.col("kafka_offset").alias("sync_order"),
    )
    translated = translate_with_offset_syncs(_committed(silver_group_offsets), syncs, carry=COMMITTED_COLUMNS)
    return translated.select(
        "source_cluster",
        "consumer_group",
        downstream_topic(policy, sf.col("source_cluster"), sf.col("topic"), target_alias).alias("topic"),
        "partition",
        "downstream_offset",
        sf.col("committed_offset").alias("upstream_offset"),
        sf.lit("offset_sync").alias("method"),
        "metadata",
        sf.col("snapshot_time").alias("observed_at"),
        sf.lit(0).cast("bigint").alias("observation_order"),
    )


def mapping_observations(silver_group_offsets: DataFrame, silver_mappings: DataFrame) -> DataFrame:
    mappings = silver_mappings.select(
        "source_topic",
        "source_partition",
        "source_offset",
        "target_topic",
        "target_partition",
        "target_offset",
        sf.col("kafka_offset").alias("mapping_order"),
    )
    translated = translate_with_mappings(_committed(silver_group_offsets), mappings)
    return translated.select(
        "source_cluster",
        "consumer_group",
        sf.col("downstream_topic").alias("topic"),
        sf.col("downstream_partition").alias("partition"),
        "downstream_offset",
        sf.col("committed_offset").alias("upstream_offset"),
        sf.lit("mapping").alias("method"),
        "metadata",
        sf.col("snapshot_time").alias("observed_at"),
        sf.lit(0).cast("bigint").alias("observation_order"),
    )


def _with_runs(observations: DataFrame) -> DataFrame:
    """Mark where each (key, method)'s translated offset changed and when the current run began."""
    in_order = Window.partitionBy(*GOLD_KEY, "method").orderBy("observed_at", "observation_order")
    running = in_order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    previous = sf.lag("downstream_offset").over(in_order)
    changed = previous.isNull() | (previous != sf.col("downstream_offset"))
    marked = add_columns(observations, {"_changed": changed})
    run_start = sf.last(sf.when(sf.col("_changed"), sf.col("observed_at")), ignorenulls=True).over(running)
    return add_columns(marked, {"_run_start": run_start})


def offset_history(observations: DataFrame) -> DataFrame:
    changes = _with_runs(observations).where("_changed")
    next_change = Window.partitionBy(*GOLD_KEY, "method").orderBy("observed_at", "observation_order")
    return changes.select(
        *[sf.col(name) for name in GOLD_KEY],
        "downstream_offset",
        "upstream_offset",
        "method",
        "metadata",
        sf.col("observed_at").alias("source_timestamp"),
        sf.col("observed_at").alias("valid_from"),
        sf.lead("observed_at").over(next_change).alias("valid_to"),
    ).select(*_typed(OFFSET_HISTORY.columns))


def latest_offsets(
    observations: DataFrame, precedence: Sequence[str], refreshed_at: Column | None = None
) -> DataFrame:
    refreshed_at = sf.current_timestamp() if refreshed_at is None else refreshed_at
    newest_first = Window.partitionBy(*GOLD_KEY, "method").orderBy(
        sf.col("observed_at").desc(), sf.col("observation_order").desc()
    )
    ranked = add_columns(_with_runs(observations), {"_rank": sf.row_number().over(newest_first)})
    chosen = choose_translation(ranked.where(sf.col("_rank") == 1), precedence, freshness="observed_at")
    return chosen.select(
        *[sf.col(name) for name in GOLD_KEY],
        "downstream_offset",
        "upstream_offset",
        "method",
        "metadata",
        sf.col("_run_start").alias("source_timestamp"),
        sf.col("_run_start").alias("valid_from"),
        sf.lit(None).cast("timestamp").alias("valid_to"),
        (sf.unix_seconds(refreshed_at) - sf.unix_seconds(sf.col("observed_at"))).alias("age_seconds"),
        sf.col("_disagree").alias("methods_disagree"),
        sf.col("observed_at").alias("last_observed_at"),
    ).select(*_typed(LATEST_OFFSETS.columns))


def _typed(columns: Sequence[tuple[str, str, str]]) -> list[Column]:
    return [sf.col(name).cast(kind).alias(name) for name, kind, _ in columns]
