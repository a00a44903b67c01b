"""Gold logic as DataFrame functions: translation observations -> offset versions -> offset_history
and latest_offsets.

An *observation* is one translated offset for (source_cluster, consumer_group, topic, partition)
by one method at one time:

- ``checkpoint``: each MM2 checkpoint, observed at its Kafka timestamp (when MM2 listed offsets),
  ordered by its offset in its checkpoints topic (``observation_order``);
- ``offset_sync``: each source group-offset snapshot translated with the offset syncs known when
  it was ingested (translation_spark.translate_with_offset_syncs), observed at the snapshot time;
- ``mapping``: each snapshot translated through the record-level mappings then known (largest mapped
  source offset <= U, + 1 when not exact; one row per target topic the source partition is routed to);
- ``k2k_tracing_headers``: each snapshot translated by a binary search over the target partition on
  K2K's record-tracing headers (table k2k_tracing_lookups, data_sources/offsetlake_k2k_tracing.py).

Observations are appended as they arrive (translation_observations, a streaming table: a refresh
translates only the new checkpoints and snapshots). A sync that arrives late (MM2 lag) does not
rewrite an earlier snapshot's observation; the next snapshot of the group, taken every refresh,
is translated with it and shows up as a new version when the translation changes.

*Versions* (offset_versions) are SCD type 2 over the observations, exactly as AUTO CDC stores them:
per (key, method), ordered by the sequence (observation_order, observed_at), a new version starts
when downstream_offset or upstream_offset changes; the other columns hold the version's newest
observation; ``__START_AT``/``__END_AT`` are the sequences of the version's first observation and of
the next version's. The order is Kafka's where Kafka has one: a key's checkpoints all come from one
checkpoints topic (named after the source alias) and MM2 writes its one partition, so their record
offsets order them, whatever MM2's worker clocks stamped (a task moved to a worker with an earlier
clock steps the timestamps back; ordering by them would let an older checkpoint win). The other
methods have no such coordinates (observation_order 0): their observation time orders them. The
failover's twin (apply/tail_merge.py) orders the same way. On Databricks AUTO CDC maintains the table
incrementally (``versions_by_auto_cdc``, sequence_by ``(observation_order, observed_at)``; a table
made with the earlier (observed_at, observation_order) sequence needs a full refresh of
offset_versions); locally ``offset_versions`` computes the same
table from all observations (the open-source engine has no MERGE for a Parquet table).

``offset_history`` and ``latest_offsets`` read the versions in both places: history is every
version with valid_from/valid_to; latest picks one method per key among the current versions, by
the rule in offsetlake.mirror.precedence (freshness first, then ``offsetlake.method.precedence``);
``methods_disagree`` flags same-upstream methods that differ (a stale method based on an older
upstream offset is not a disagreement, it is just stale; sql/stale_checkpoints.sql shows those).
Age is left to the reader (now - last_observed_at), so no refresh has to rewrite every row.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import Final

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as sf

from offsetlake.contract.tables import (
    GROUP_PARTITION_KEY,
    LATEST_OFFSETS,
    OFFSET_HISTORY,
    OFFSET_VERSIONS_AUTO_CDC,
)
from offsetlake.mirror.policy import ReplicationPolicy
from offsetlake.pipeline.frames import add_columns
from offsetlake.pipeline.precedence_spark import choose_translation
from offsetlake.pipeline.translation_spark import (
    MAPPING_ORDER,
    downstream_topic,
    translate_with_mappings,
    translate_with_offset_syncs,
)

OBSERVATION_COLUMNS: Final = (
    *GROUP_PARTITION_KEY,
    "downstream_offset",
    "upstream_offset",
    "method",
    "metadata",
    "observed_at",
    "observation_order",
)


def checkpoint_observations(silver_checkpoints: DataFrame) -> DataFrame:
    return silver_checkpoints.select(
        *GROUP_PARTITION_KEY,
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


_MAPPING_COLUMNS: Final = (
    "source_cluster",
    "source_topic",
    "source_partition",
    "source_offset",
    "target_topic",
    "target_partition",
    "target_offset",
    *MAPPING_ORDER,
)


def mapping_observations(silver_group_offsets: DataFrame, silver_mappings: DataFrame) -> DataFrame:
    translated = translate_with_mappings(
        _committed(silver_group_offsets), silver_mappings.select(*_MAPPING_COLUMNS), carry=COMMITTED_COLUMNS
    )
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


def mapping_conflicts(latest_group_offsets: DataFrame, silver_mappings: DataFrame) -> DataFrame:
    """k2k_mapping_conflicts: newest snapshots whose mapping translation rests on a source record
    mapped to more than one target topic, one row per target topic (the apply refuses them by
    default, as K2K's ``onMultipleTargetCommittedOffsets: fail``)."""
    translated = translate_with_mappings(
        _committed(latest_group_offsets), silver_mappings.select(*_MAPPING_COLUMNS), carry=COMMITTED_COLUMNS
    )
    return translated.where(sf.size("routed_to") > 1).select(
        "source_cluster",
        "consumer_group",
        sf.col("downstream_topic").alias("topic"),
        sf.col("downstream_partition").alias("partition"),
        sf.col("topic").alias("upstream_topic"),
        sf.col("partition").alias("upstream_partition"),
        sf.col("committed_offset").alias("upstream_offset"),
        "mapped_source_offset",
        sf.col("routed_to").alias("target_topics"),
        "downstream_offset",
        "snapshot_time",
    )


def tracing_observations(k2k_tracing_lookups: DataFrame) -> DataFrame:
    """The k2k_tracing_headers method: every lookup that found a translation."""
    return k2k_tracing_lookups.where(sf.col("downstream_offset").isNotNull()).select(
        *GROUP_PARTITION_KEY,
        "downstream_offset",
        "upstream_offset",
        sf.lit("k2k_tracing_headers").alias("method"),
        "metadata",
        sf.col("snapshot_time").alias("observed_at"),
        sf.lit(0).cast("bigint").alias("observation_order"),
    )


VERSION_KEY: Final = (*GROUP_PARTITION_KEY, "method")
TRACKED_COLUMNS: Final = ("downstream_offset", "upstream_offset")
"""A change of these opens a new version (AUTO CDC's track_history_column_list)."""
START_AT: Final = "__START_AT"
END_AT: Final = "__END_AT"


SEQUENCE: Final = ("observation_order", "observed_at")
"""The order of one (key, method)'s observations: the checkpoint record's offset in its checkpoints
topic (0 for the other methods), then the observation time."""


def observation_sequence() -> Column:
    """AUTO CDC's sequence_by: SEQUENCE's fields, compared in that order."""
    return sf.struct(*[sf.col(name) for name in SEQUENCE])


def _stored_sequence() -> Column:
    """What the local table stores in __START_AT/__END_AT: its declared struct (tables.OFFSET_VERSIONS,
    fields in the order the table was first made with); ordered by SEQUENCE's fields, by name."""
    return sf.struct(sf.col("observed_at"), sf.col("observation_order"))


def _by_sequence(column: str, *, descending: bool = False) -> list[Column]:
    fields = [sf.col(f"{column}.{name}") for name in SEQUENCE]
    return [field.desc() for field in fields] if descending else fields


def offset_versions(observations: DataFrame) -> DataFrame:
    """The SCD type 2 table AUTO CDC keeps from ``observations`` (see the module docstring), at once."""
    in_order = Window.partitionBy(*VERSION_KEY).orderBy(*SEQUENCE)
    running = in_order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    changed = sf.lit(False)
    for column in TRACKED_COLUMNS:
        changed = changed | ~sf.col(column).eqNullSafe(sf.lag(column).over(in_order))
    first = sf.row_number().over(in_order) == 1
    marked = add_columns(
        observations.select(*OBSERVATION_COLUMNS),
        {"_sequence": _stored_sequence(), "_opens": first | changed},
    )
    started = add_columns(
        marked,
        {START_AT: sf.last(sf.when(sf.col("_opens"), sf.col("_sequence")), ignorenulls=True).over(running)},
    )
    newest_in_version = Window.partitionBy(*VERSION_KEY, START_AT).orderBy(
        *_by_sequence("_sequence", descending=True)
    )
    newest = add_columns(started, {"_rank": sf.row_number().over(newest_in_version)}).where(
        sf.col("_rank") == 1
    )
    next_version = sf.lead(START_AT).over(Window.partitionBy(*VERSION_KEY).orderBy(*_by_sequence(START_AT)))
    return add_columns(newest, {END_AT: next_version}).select(*OBSERVATION_COLUMNS, START_AT, END_AT)


def versions_by_auto_cdc(engine: ModuleType, source: str, target: str, comment: str) -> None:
    """Declare ``target`` as the AUTO CDC SCD type 2 table over the ``source`` stream (Databricks),
    with the schema whose __START_AT/__END_AT have sequence_by's type (OFFSET_VERSIONS_AUTO_CDC).

    ``engine`` is the pipelines module (``pyspark.pipelines``); the open-source engine before 4.3
    has no SCD type 2 and cannot MERGE into Parquet, so this runs on Databricks only.
    """
    engine.create_streaming_table(name=target, comment=comment, schema=OFFSET_VERSIONS_AUTO_CDC.schema_ddl)
    engine.create_auto_cdc_flow(
        target=target,
        source=source,
        keys=list(VERSION_KEY),
        sequence_by=observation_sequence(),
        stored_as_scd_type=2,
        track_history_column_list=list(TRACKED_COLUMNS),
    )


def _valid_from() -> Column:
    return sf.col(f"{START_AT}.observed_at")


def offset_history(versions: DataFrame) -> DataFrame:
    return versions.select(
        *[sf.col(name) for name in GROUP_PARTITION_KEY],
        "downstream_offset",
        "upstream_offset",
        "method",
        "metadata",
        _valid_from().alias("source_timestamp"),
        _valid_from().alias("valid_from"),
        sf.col(f"{END_AT}.observed_at").alias("valid_to"),
    ).select(*_typed(OFFSET_HISTORY.columns))


def latest_offsets(versions: DataFrame, precedence: Sequence[str]) -> DataFrame:
    current = versions.where(sf.col(END_AT).isNull())
    chosen = choose_translation(current, precedence, freshness="observed_at")
    return chosen.select(
        *[sf.col(name) for name in GROUP_PARTITION_KEY],
        "downstream_offset",
        "upstream_offset",
        "method",
        "metadata",
        _valid_from().alias("source_timestamp"),
        _valid_from().alias("valid_from"),
        sf.lit(None).cast("timestamp").alias("valid_to"),
        sf.col("_disagree").alias("methods_disagree"),
        sf.col("observed_at").alias("last_observed_at"),
    ).select(*_typed(LATEST_OFFSETS.columns))


def _typed(columns: Sequence[tuple[str, str, str]]) -> list[Column]:
    return [sf.col(name).cast(kind).alias(name) for name, kind, _ in columns]
