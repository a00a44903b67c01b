"""Data-quality expectations of the silver tables: declared once, as data, warn-only.

Silver holds only records that decoded and passed the meaning checks (codecs/semantics.py); the
others are in quarantine with their reason. So every row of a silver table should satisfy the
invariants below, and on Databricks they are declared as expectations (``dp.expect_all``), whose
passed and failed record counts a Databricks engineer reads in the pipeline event log's
data-quality metrics (``details:flow_progress.data_quality.expectations``,
sql/event_log/pipeline_expectations.sql). A failed record there means a decoder let through what
it should have quarantined, or the data source broke its contract.

They only warn: ``expect_all``, never ``expect_all_or_drop`` or ``expect_all_or_fail``. Quarantine
already holds the bad records, and silver must not lose or change a row, nor stop an update
during a failover.

The open-source pipelines engine (pyspark 4.2) has no expectations API: there ``expect_all`` below
is the identity, silently. Constraints are NULL-safe (``x IS NOT NULL AND x >= 0``), so each
evaluates to true or false for every record, as the expectations reference asks.
https://docs.databricks.com/gcp/dlt-ref/dlt-python-ref-expectations
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final, TypeVar

from offsetlake.contract.tables import (
    SILVER_CHECKPOINTS,
    SILVER_CONNECT_OFFSETS,
    SILVER_GROUP_OFFSETS,
    SILVER_MAPPINGS,
    SILVER_OFFSET_SYNCS,
)


def _quoted(column: str) -> str:
    return f"`{column}`" if column == "partition" else column


def _not_empty(*columns: str) -> dict[str, str]:
    return {f"{c}_not_empty": f"{c} IS NOT NULL AND {c} <> ''" for c in columns}


def _non_negative(*columns: str) -> dict[str, str]:
    return {f"{c}_non_negative": f"{_quoted(c)} IS NOT NULL AND {_quoted(c)} >= 0" for c in columns}


def _known(*columns: str) -> dict[str, str]:
    return {f"{c}_known": f"{c} IS NOT NULL" for c in columns}


_KAFKA_COORDINATES: Final = {
    "kafka_coordinates_known": (
        "kafka_topic IS NOT NULL AND kafka_partition IS NOT NULL AND kafka_partition >= 0 "
        "AND kafka_offset IS NOT NULL AND kafka_offset >= 0"
    ),
    **_known("ingested_at"),
}

SILVER_EXPECTATIONS: Final[Mapping[str, Mapping[str, str]]] = MappingProxyType(
    {
        SILVER_CHECKPOINTS.name: MappingProxyType(
            {
                **_not_empty("source_cluster", "consumer_group", "topic"),
                **_non_negative("partition", "upstream_offset", "downstream_offset"),
                **_known("checkpoint_timestamp"),
                **_KAFKA_COORDINATES,
            }
        ),
        SILVER_OFFSET_SYNCS.name: MappingProxyType(
            {
                **_not_empty("source_cluster", "topic"),
                **_non_negative("partition", "upstream_offset", "downstream_offset"),
                **_known("sync_timestamp"),
                **_KAFKA_COORDINATES,
            }
        ),
        SILVER_MAPPINGS.name: MappingProxyType(
            {
                **_not_empty("source_cluster", "source_topic"),
                **_non_negative("source_partition", "source_offset"),
                **_not_empty("target_topic"),
                **_non_negative("target_partition", "target_offset"),
                **_KAFKA_COORDINATES,
            }
        ),
        SILVER_CONNECT_OFFSETS.name: MappingProxyType(
            {
                **_not_empty("connector"),
                **_known("source_partition"),
                # A tombstone (reset) is exactly a record without a stored source offset.
                "tombstone_iff_no_source_offset": (
                    "tombstone IS NOT NULL AND tombstone = (source_offset IS NULL)"
                ),
                # MirrorSourceConnector keys give cluster, topic and partition together, or none.
                "mirror_source_partition_complete": (
                    "(source_cluster IS NULL) = (topic IS NULL) AND (topic IS NULL) = (`partition` IS NULL)"
                ),
                # Absent for other connectors' keys and for resets: non-negative when present.
                "partition_non_negative": "`partition` IS NULL OR `partition` >= 0",
                "upstream_offset_non_negative": "upstream_offset IS NULL OR upstream_offset >= 0",
                **_KAFKA_COORDINATES,
            }
        ),
        SILVER_GROUP_OFFSETS.name: MappingProxyType(
            {
                **_not_empty("source_cluster", "consumer_group", "topic"),
                # Partitions without a commit never reach bronze (kafka/group_offsets.py).
                **_non_negative("partition", "committed_offset"),
                **_known("snapshot_time", "ingested_at"),
            }
        ),
    }
)
"""Silver table name -> {expectation name: Spark SQL boolean constraint over its columns}."""

QueryFunction = TypeVar("QueryFunction", bound=Callable[..., Any])


def expect_all(engine: Any, table: str) -> Callable[[QueryFunction], QueryFunction]:
    """``engine.expect_all`` with ``table``'s expectations, or the identity when the engine has none.

    ``engine`` is the pipelines module the transformation file imported (``from pyspark import
    pipelines as dp``). Place the decorator under ``@dp.table(...)``, as the reference shows::

        @dp.table(name=SILVER_CHECKPOINTS.name, ...)
        @expect_all(dp, SILVER_CHECKPOINTS.name)
        def silver_checkpoints() -> DataFrame: ...
    """
    expectations = SILVER_EXPECTATIONS[table]
    engine_expect_all = getattr(engine, "expect_all", None)
    if engine_expect_all is None:
        return _identity
    decorator: Callable[[QueryFunction], QueryFunction] = engine_expect_all(dict(expectations))
    return decorator


def _identity(query_function: QueryFunction) -> QueryFunction:
    return query_function
