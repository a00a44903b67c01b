"""Offset translation as DataFrame operations: offset syncs (full history), record mappings, topic names.

Record mappings follow the same rule as offset syncs, per routing (mapping_intervals).

The rule is ``offsetlake.mirror.translation.translate`` (the oracle, property-tested against this): for a
committed upstream position U, take the sync with the largest upstream_offset <= U, the
latest-written one if several share it; exact -> its downstream, otherwise downstream + 1; no such
sync -> no row (never guess).

Formulated as an interval join, not a cross join or a window over lookups: on the sync side alone
(a batch read), each partition's syncs become the intervals [upstream_offset, next upstream_offset)
in which they are the best sync; each committed offset then matches at most one interval by an
equi-join on the partition plus a range condition. The committed side can therefore be a stream
(the pipeline translates only the new group-offset snapshots, a stream-static join) and the cost
of a refresh is the new snapshots plus one pass over the syncs, not the snapshot history.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as sf

from offsetlake.contract.tables import PARTITION_KEY
from offsetlake.mirror.policy import ReplicationPolicy
from offsetlake.pipeline.frames import add_columns


def sync_intervals(offset_syncs: DataFrame, sync_write_order: str = "sync_order") -> DataFrame:
    """Per partition: the best sync for every upstream offset in [from_offset, until_offset).

    ``offset_syncs`` needs PARTITION_KEY, upstream_offset, downstream_offset and
    ``sync_write_order`` (e.g. the record's offset in the syncs topic): of several syncs for one
    upstream offset the latest-written wins. ``until_offset`` is NULL for the newest interval.
    """
    latest_first = Window.partitionBy(*PARTITION_KEY, "upstream_offset").orderBy(
        sf.col(sync_write_order).desc()
    )
    newest = add_columns(
        offset_syncs.select(
            *[sf.col(name) for name in PARTITION_KEY],
            sf.col("upstream_offset").cast("bigint").alias("upstream_offset"),
            sf.col("downstream_offset").cast("bigint").alias("downstream_offset"),
            sf.col(sync_write_order),
        ),
        {"_rank": sf.row_number().over(latest_first)},
    ).where(sf.col("_rank") == 1)
    by_offset = Window.partitionBy(*PARTITION_KEY).orderBy("upstream_offset")
    return newest.select(
        *[sf.col(name).alias(f"_sync_{name}") for name in PARTITION_KEY],
        sf.col("upstream_offset").alias("sync_upstream_offset"),
        sf.col("downstream_offset").alias("sync_downstream_offset"),
        sf.lead("upstream_offset").over(by_offset).alias("_until_offset"),
    )


def translate_with_offset_syncs(
    committed: DataFrame,
    offset_syncs: DataFrame,
    carry: Sequence[str],
    committed_offset: str = "committed_offset",
    sync_write_order: str = "sync_order",
) -> DataFrame:
    """Add ``downstream_offset`` (and the sync used) to each committed offset a sync can translate.

    ``committed`` (a batch or a stream) needs the PARTITION_KEY columns (upstream topic names),
    ``committed_offset`` and the ``carry`` columns, which are passed through (named explicitly:
    pipeline query functions may not analyze a DataFrame to list its columns). ``offset_syncs`` (a
    batch) is as for ``sync_intervals``. Rows with a negative committed offset (no commit) or no
    usable sync are dropped.
    """
    lookups = committed.where(sf.col(committed_offset) >= 0)
    intervals = sync_intervals(offset_syncs, sync_write_order)
    offset = sf.col(committed_offset)
    matches = [sf.col(name) == sf.col(f"_sync_{name}") for name in PARTITION_KEY]
    within = (offset >= sf.col("sync_upstream_offset")) & (
        sf.col("_until_offset").isNull() | (offset < sf.col("_until_offset"))
    )
    condition = matches[0]
    for match in [*matches[1:], within]:
        condition = condition & match
    translated = lookups.join(intervals, condition, "inner")
    sync_upstream = sf.col("sync_upstream_offset")
    sync_downstream = sf.col("sync_downstream_offset")
    return translated.select(
        *[sf.col(name) for name in carry],
        sync_upstream,
        sync_downstream,
        sf.when(offset == sync_upstream, sync_downstream)
        .otherwise(sync_downstream + 1)
        .alias("downstream_offset"),
    )


MAPPING_ORDER: Final = ("mapping_timestamp", "kafka_topic", "kafka_partition", "kafka_offset")
"""What "the latest mapping" means: Kafka offsets compare only within one partition of one topic (K2K's
sample mapping topic has six partitions, and several topics may match), so the record timestamp
comes first and the coordinates only break ties: a total order."""
ROUTE_KEY: Final = ("source_cluster", "topic", "partition", "downstream_topic", "downstream_partition")
"""One routing: a source partition of one source cluster into one target topic-partition."""


def mapping_intervals(mappings: DataFrame) -> DataFrame:
    """Per routing: the best mapping for every source offset in [mapped_source_offset, _until_offset).

    ``mappings`` are silver_mappings rows (source_cluster from the mapping topic's binding). Of
    several mappings of one source record into one routing the latest (MAPPING_ORDER) wins; mappings
    of one record into different target topics are different routings and never collapse, and each
    carries ``routed_to``: every target topic that record was mapped to, sorted (more than one is K2K's
    "duplicate offset mappings").
    """
    routed = mappings.select(
        "source_cluster",
        sf.col("source_topic").alias("topic"),
        sf.col("source_partition").alias("partition"),
        "source_offset",
        sf.col("target_topic").alias("downstream_topic"),
        sf.col("target_partition").alias("downstream_partition"),
        "target_offset",
        *MAPPING_ORDER,
    )
    latest_first = Window.partitionBy(*ROUTE_KEY, "source_offset").orderBy(
        *[sf.col(name).desc() for name in MAPPING_ORDER]
    )
    one_record = Window.partitionBy("source_cluster", "topic", "partition", "source_offset")
    newest = add_columns(
        routed,
        {
            "_rank": sf.row_number().over(latest_first),
            "_routed_to": sf.collect_set("downstream_topic").over(one_record),
        },
    ).where(sf.col("_rank") == 1)
    by_offset = Window.partitionBy(*ROUTE_KEY).orderBy("source_offset")
    return newest.select(
        *[sf.col(name).alias(f"_map_{name}") for name in ROUTE_KEY[:3]],
        "downstream_topic",
        "downstream_partition",
        sf.col("source_offset").alias("mapped_source_offset"),
        sf.col("target_offset").alias("mapped_target_offset"),
        sf.array_sort("_routed_to").alias("routed_to"),
        sf.lead("source_offset").over(by_offset).alias("_until_offset"),
    )


def translate_with_mappings(
    committed: DataFrame,
    mappings: DataFrame,
    carry: Sequence[str],
    committed_offset: str = "committed_offset",
) -> DataFrame:
    """Translate committed positions through record-level mappings, by the offset-sync rule.

    For each routing of the committed source partition (mapping_intervals): the mapping with the
    largest source offset <= U gives its target offset, exact when it is record U itself, + 1
    otherwise (a caught-up group, U at the log end, and sparse mappings translate too; consumers
    may re-read, never skip). No mapping at or below U -> no row. One row per routing: a record K2K
    routed to two target topics gives two rows, kept apart by target topic, with ``routed_to``
    listing both. ``committed`` needs source_cluster, topic, partition, ``committed_offset`` and the
    ``carry`` columns; adds downstream_topic, downstream_partition, downstream_offset,
    mapped_source_offset and routed_to.
    """
    lookups = committed.where(sf.col(committed_offset) >= 0)
    intervals = mapping_intervals(mappings)
    offset = sf.col(committed_offset)
    condition = (
        (sf.col("source_cluster") == sf.col("_map_source_cluster"))
        & (sf.col("topic") == sf.col("_map_topic"))
        & (sf.col("partition") == sf.col("_map_partition"))
        & (offset >= sf.col("mapped_source_offset"))
        & (sf.col("_until_offset").isNull() | (offset < sf.col("_until_offset")))
    )
    translated = lookups.join(intervals, condition, "inner")
    return translated.select(
        *[sf.col(name) for name in carry],
        "downstream_topic",
        "downstream_partition",
        sf.when(offset == sf.col("mapped_source_offset"), sf.col("mapped_target_offset"))
        .otherwise(sf.col("mapped_target_offset") + 1)
        .alias("downstream_offset"),
        "mapped_source_offset",
        "routed_to",
    )


def downstream_topic(
    policy: ReplicationPolicy, source_alias: Column, upstream_topic: Column, target_alias: str
) -> Column:
    """``ReplicationPolicy.downstream_topic`` as a Column: the target-cluster name of an upstream topic.

    Default policy: ``<alias><sep><topic>``; a topic that came from the target in the first place
    (``<target><sep>…``, failback) returns to its original name. Identity: unchanged.
    """
    if policy.kind == "identity":
        return upstream_topic
    separator = policy.separator
    remote = sf.concat(source_alias, sf.lit(separator), upstream_topic)
    if not target_alias:
        return remote
    target_prefix = f"{target_alias}{separator}"
    stripped = sf.substring(upstream_topic, len(target_prefix) + 1, 1 << 30)
    original = _original_topic(stripped, separator)
    return sf.when(upstream_topic.startswith(target_prefix) & (stripped != ""), original).otherwise(remote)


def _original_topic(topic: Column, separator: str) -> Column:
    """Strip every further ``<alias><sep>`` hop: the last separator-delimited part is the original name."""
    return sf.element_at(sf.split(topic, _java_regex_quote(separator)), -1)


def _java_regex_quote(text: str) -> str:
    return "\\Q" + text.replace("\\E", "\\E\\\\E\\Q") + "\\E"
