"""Offset translation as DataFrame operations: offset syncs (full history), record mappings, topic names.

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

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as sf

from offsetlake.mirror.policy import ReplicationPolicy
from offsetlake.pipeline.frames import add_columns
from offsetlake.pipeline.tables import PARTITION_KEY


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


def translate_with_mappings(
    committed: DataFrame, mappings: DataFrame, committed_offset: str = "committed_offset"
) -> DataFrame:
    """Exact record-level translation: the committed position U resumes at the target offset of record U.

    ``mappings`` has source_topic/source_partition/source_offset -> target_topic/target_partition/
    target_offset; when a record was mapped more than once, the latest-written mapping (highest
    ``mapping_order``) wins. No mapping for record U (not replicated yet, or U is the log end) ->
    no row. Adds ``downstream_topic``, ``downstream_partition`` and ``downstream_offset``.
    """
    latest_per_record = Window.partitionBy("source_topic", "source_partition", "source_offset").orderBy(
        sf.col("mapping_order").desc()
    )
    latest = (
        add_columns(mappings, {"_rank": sf.row_number().over(latest_per_record)})
        .where(sf.col("_rank") == 1)
        .select(
            sf.col("source_topic").alias("topic"),
            sf.col("source_partition").alias("partition"),
            sf.col("source_offset").alias(committed_offset),
            sf.col("target_topic").alias("downstream_topic"),
            sf.col("target_partition").alias("downstream_partition"),
            sf.col("target_offset").alias("downstream_offset"),
        )
    )
    # A USING join by name: pipeline query functions must not need the client to analyze plans.
    return committed.join(latest, on=["topic", "partition", committed_offset], how="inner")


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
