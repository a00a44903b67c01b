"""Reads the translated offsets the apply commits: gold ``latest_offsets`` or ``offset_history``.

Timestamps leave Spark as epoch microseconds and become UTC datetimes here: PySpark's collect()
turns TIMESTAMP values into naive datetimes in the driver's local time zone, which would shift
every age and as-of comparison on a driver that is not on UTC.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Collection, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from offsetlake.apply.planner import Selection
from offsetlake.contract.gold import (
    UPSTREAM,
    ClusterHealth,
    GoldOffset,
    GoldTableError,
    GroupDataLoss,
    from_micros,
    selection_bounds,
    table_name,
    to_micros,
)
from offsetlake.contract.tables import (
    BRONZE_CHECKPOINTS,
    CLUSTER_HEALTH,
    FAILOVER_DATA_LOSS,
    K2K_MAPPING_CONFLICTS,
    LATEST_GROUP_OFFSETS,
    LATEST_OFFSETS,
    OFFSET_HISTORY,
    SILVER_OFFSET_SYNCS,
)
from offsetlake.mirror.positions import GroupPartition
from offsetlake.mirror.precedence import METHODS

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from offsetlake.kafka.group_offsets import GroupOffset

_COLUMNS = (
    "source_cluster",
    "consumer_group",
    "topic",
    "`partition`",
    "downstream_offset",
    "method",
    "metadata",
    "source_timestamp",
)


def read_latest_offsets(
    spark: SparkSession, schema: str, catalog: str | None = None, selection: Selection | None = None
) -> list[GoldOffset]:
    """The current translations in ``latest_offsets`` that ``selection`` may select (none when the
    pipeline never created the table); see :func:`narrowed`."""
    name = table_name(LATEST_OFFSETS.name, schema, catalog)
    if not _exists(spark, name):
        return []

    def latest() -> DataFrame:
        frame = narrowed(spark.table(name), selection)
        return frame.selectExpr(*_COLUMNS, "last_observed_at", *_upstream(frame))

    return _collect(latest, name, observed="last_observed_at")


def count_translations(
    spark: SparkSession, schema: str, catalog: str | None = None, as_of: datetime | None = None
) -> int:
    """Rows of ``latest_offsets``, or with ``as_of`` the ``offset_history`` rows valid then (one per
    method): tells an empty gold from a selection that matched nothing, without reading the rows."""
    name = table_name(OFFSET_HISTORY.name if as_of else LATEST_OFFSETS.name, schema, catalog)
    if not _exists(spark, name):
        return 0
    frame = spark.table(name)
    return (_valid_at(frame, as_of) if as_of else frame).count()


def _valid_at(history: DataFrame, as_of: datetime) -> DataFrame:
    from pyspark.sql import functions as sf

    at = sf.timestamp_micros(sf.lit(to_micros(as_of)))
    return history.where(
        (sf.col("valid_from") <= at) & (sf.col("valid_to").isNull() | (sf.col("valid_to") > at))
    )


def narrowed(
    frame: DataFrame, selection: Selection | None, *, columns: Collection[str] = ("consumer_group", "topic")
) -> DataFrame:
    """``frame`` without the rows whose group or topic the selection's literal names and prefixes
    rule out (``--groups orders-app|billing``, ``--topics orders-.*``), as a filter Spark pushes
    to the scan: Parquet and Delta skip row groups and files by it, instead of every row reaching
    the driver. Any other regex leaves the frame as it is; the regex itself decides afterwards
    (planner.select_offsets), in Python, with Python's regex syntax. ``columns``: the ones the
    selection applies to in this table."""
    for column, bounds in selection_bounds(selection).items():
        if column in columns:
            frame = frame.where(_within(column, bounds.names, bounds.prefixes))
    return frame


def _within(column: str, names: Collection[str], prefixes: Sequence[str]) -> Column:
    from pyspark.sql import functions as sf

    # Only the parts there are: an empty IN is not a filter Spark can push to the scan.
    conditions = [sf.col(column).isin(sorted(names))] if names else []
    conditions += [sf.col(column).startswith(prefix) for prefix in prefixes]
    return functools.reduce(operator.or_, conditions)


def read_offsets_as_of(
    spark: SparkSession,
    as_of: datetime,
    schema: str,
    catalog: str | None = None,
    *,
    precedence: Sequence[str] = METHODS,
    selection: Selection | None = None,
) -> list[GoldOffset]:
    """The translation that was current at ``as_of`` per group-partition, from ``offset_history``.

    History is kept per method, so several rows can be current at once: one is chosen with the
    rule latest_offsets uses (offsetlake.mirror.precedence), with valid_from as the freshness,
    on the driver by the local store's code (offsetlake.apply.gold_rows.choose_current).
    Without this, methods that merely differ in precision would look like a conflict between
    source clusters. Rows ``selection`` rules out are left in storage (:func:`narrowed`).
    """
    if as_of.tzinfo is None:
        raise GoldTableError(f"--as-of needs a time zone: {as_of.isoformat()}")
    name = table_name(OFFSET_HISTORY.name, schema, catalog)
    if not _exists(spark, name):
        return []

    def current() -> DataFrame:
        valid = _valid_at(narrowed(spark.table(name), selection), as_of)
        return valid.selectExpr(*_COLUMNS, UPSTREAM, "valid_from")

    return _collect(current, name, observed="source_timestamp", precedence=precedence)


def read_checkpoint_positions(
    spark: SparkSession, schema: str, catalog: str | None = None
) -> dict[tuple[str, int], int]:
    """Per checkpoint topic-partition ingested in ``bronze_checkpoints``, the next Kafka offset after
    the highest one ingested (gold's high-water mark on the target's checkpoint topics); empty when
    the pipeline never created the table."""
    from offsetlake.apply.gold_rows import CHECKPOINT_COORDINATES

    name = table_name(BRONZE_CHECKPOINTS.name, schema, catalog)
    if not _exists(spark, name):
        return {}
    return _next_offsets(spark.table(name), CHECKPOINT_COORDINATES)


def read_offset_sync_positions(
    spark: SparkSession, schema: str, catalog: str | None, source_cluster: str
) -> dict[tuple[str, int], int]:
    """Per offset-syncs topic-partition of ``source_cluster`` in silver_offset_syncs, the next Kafka
    offset after the highest one silver holds (what the pipeline ingested of that source's syncs
    topics); empty when the table is absent."""
    from pyspark.sql import functions as sf

    from offsetlake.apply.gold_rows import SYNC_COORDINATES

    name = table_name(SILVER_OFFSET_SYNCS.name, schema, catalog)
    if not _exists(spark, name):
        return {}
    return _next_offsets(
        spark.table(name).where(sf.col("source_cluster") == source_cluster), SYNC_COORDINATES
    )


def _next_offsets(rows: DataFrame, coordinates: Sequence[str]) -> dict[tuple[str, int], int]:
    """gold_rows.next_offsets of ``rows``, grouped by Spark first: one row a partition crosses to Python."""
    from pyspark.sql import functions as sf

    from offsetlake.apply.gold_rows import next_offsets

    topic, partition, offset = coordinates
    highest = rows.groupBy(topic, partition).agg(sf.max(offset).alias(offset))
    return next_offsets(highest.toArrow(), coordinates)


def read_cluster_health(spark: SparkSession, schema: str, catalog: str | None = None) -> list[ClusterHealth]:
    """The newest ``cluster_health`` row per cluster; empty when the pipeline never recorded one."""
    name = table_name(CLUSTER_HEALTH.name, schema, catalog)
    if not _exists(spark, name):
        return []
    rows = spark.sql(
        "SELECT cluster, max_by(role, checked_at) AS role, "
        "max_by(reachable, checked_at) AS reachable, max_by(error, checked_at) AS error, "
        "unix_micros(max(checked_at)) AS checked_micros, "
        "unix_micros(max(CASE WHEN reachable THEN checked_at END)) AS reachable_micros "
        f"FROM {name} GROUP BY cluster ORDER BY cluster"
    ).collect()
    return [
        ClusterHealth(
            cluster=row["cluster"],
            role=row["role"],
            reachable=bool(row["reachable"]),
            error=row["error"],
            checked_at=from_micros(row["checked_micros"]),
            last_reachable_at=None
            if row["reachable_micros"] is None
            else from_micros(row["reachable_micros"]),
        )
        for row in rows
    ]


def read_failover_data_loss(
    spark: SparkSession, schema: str, catalog: str | None, selection: Selection
) -> list[GroupDataLoss]:
    """Per source cluster and group the selection's group regexes select, the newest data-loss
    estimate (none when the pipeline does not ingest MM2's Connect offsets). Chosen by group, not
    by the groups that have translations: a group that reads only topics MM2 never replicated has
    no checkpoint, so no translation, and it is the group that would lose the most."""
    from offsetlake.apply.gold_rows import DATA_LOSS_COLUMNS, data_loss_totals

    name = table_name(FAILOVER_DATA_LOSS.name, schema, catalog)
    if not _exists(spark, name):
        return []
    # By group only: this table's topic is the source topic; the selection's are target names.
    rows = narrowed(spark.table(name), selection, columns=("consumer_group",)).select(*DATA_LOSS_COLUMNS)
    return data_loss_totals(rows.toArrow(), selection)


def read_newest_group_offsets(
    spark: SparkSession, schema: str, catalog: str | None, selection: Selection | None
) -> dict[str, list[GroupOffset]]:
    """latest_group_offsets (the newest snapshot per group-partition) of the selected groups, per
    source alias; empty when the table is absent."""
    from offsetlake.apply.gold_rows import GROUP_SNAPSHOT_COLUMNS, group_snapshots

    name = table_name(LATEST_GROUP_OFFSETS.name, schema, catalog)
    if not _exists(spark, name):
        return {}
    rows = narrowed(spark.table(name), selection, columns=("consumer_group",)).select(*GROUP_SNAPSHOT_COLUMNS)
    return group_snapshots(rows.toArrow(), selection)


def read_offset_syncs(
    spark: SparkSession, schema: str, catalog: str | None, source_cluster: str, topics: Collection[str]
) -> dict[tuple[str, int], list[tuple[int, int]]]:
    """silver_offset_syncs of ``source_cluster``'s ``topics`` (upstream names), per partition in the
    order written (failback's reverse translation); empty when the table is absent."""
    from pyspark.sql import functions as sf

    from offsetlake.apply.gold_rows import OFFSET_SYNC_COLUMNS, sync_histories

    name = table_name(SILVER_OFFSET_SYNCS.name, schema, catalog)
    if not topics or not _exists(spark, name):
        return {}
    rows = (
        spark.table(name)
        .where((sf.col("source_cluster") == source_cluster) & sf.col("topic").isin(sorted(topics)))
        .select(*OFFSET_SYNC_COLUMNS)
    )
    return sync_histories(rows.toArrow())


def read_mapping_conflicts(
    spark: SparkSession, schema: str, catalog: str | None, selection: Selection | None
) -> dict[GroupPartition, str]:
    """k2k_mapping_conflicts by group-partition, with the reason; empty when the table is absent
    (no K2K mappings configured): one catalog lookup, no scan."""
    from offsetlake.apply.gold_rows import MAPPING_CONFLICT_COLUMNS, mapping_conflicts_by_key

    name = table_name(K2K_MAPPING_CONFLICTS.name, schema, catalog)
    if not _exists(spark, name):
        return {}
    rows = narrowed(spark.table(name), selection).select(*MAPPING_CONFLICT_COLUMNS).collect()
    return mapping_conflicts_by_key((tuple(row) for row in rows), selection)


def _exists(spark: SparkSession, name: str) -> bool:
    return bool(spark.catalog.tableExists(name.replace("`", "")))


def _collect(
    frame: Callable[[], DataFrame], name: str, *, observed: str, precedence: Sequence[str] | None = None
) -> list[GoldOffset]:
    """The rows of ``frame()`` as GoldOffsets, through Arrow (collect() builds a Row per row and
    looks each field up by name: 1,000,000 rows on a loaded 2-core machine took 54 s, through Arrow
    10-15 s), by the rules the local store uses too (offsetlake.apply.gold_rows); with
    ``precedence``, one row per key chosen first. A table without the contract's columns is a
    GoldTableError, as is a NULL key."""
    from pyspark.errors import AnalysisException

    from offsetlake.apply.gold_rows import choose_current, gold_offsets

    try:
        table = frame().toArrow()
    except AnalysisException as error:
        raise GoldTableError(f"cannot read gold table {name}: {error.getMessage()}") from error
    if precedence is not None:
        table = choose_current(table, precedence)
    return gold_offsets(table, name, observed=observed)


def _upstream(frame: DataFrame) -> tuple[str, ...]:
    """The upstream_offset column, when ``frame`` has it (every gold table the pipeline writes does)."""
    return (UPSTREAM,) if UPSTREAM in frame.columns else ()
