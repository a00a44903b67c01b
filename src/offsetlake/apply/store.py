"""Where the apply reads gold and keeps its audit: a :class:`GoldStore`.

Every read and write a plan or apply run makes goes through one of these, never through a Spark
session of its own, so the run can be served by whatever holds the tables:

- :class:`SparkGoldStore`: a Spark session (the Databricks runtime's, on Unity Catalog), with the
  queries of offsetlake.apply.gold and offsetlake.apply.audit as its body;
- ``offsetlake.local.warehouse_gold.LocalGoldStore``: the local warehouse's Parquet files read with
  pyarrow, so a local failover starts no JVM.

Both return the same values for the same tables (tests/integration/test_gold_stores.py). Which one
a run uses is chosen by the entry point that starts it (offsetlake.cli.stores, ``gold_store_for``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from offsetlake.apply import audit, gold
from offsetlake.mirror.precedence import METHODS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from offsetlake.apply.gold_rows import SyncHistories
    from offsetlake.apply.planner import GroupPartition, Selection
    from offsetlake.contract.gold import ClusterHealth, GoldOffset, GroupDataLoss, LastApplied
    from offsetlake.kafka.group_offsets import GroupOffset

CheckpointPositions = dict[tuple[str, int], int]
"""(checkpoint topic, partition) -> the next Kafka offset after the highest one gold ingested."""


@runtime_checkable
class GoldStore(Protocol):
    """The gold tables and the ``apply_audit`` table of one schema (and catalog), as the apply
    uses them. Timestamps are UTC datetimes; a table the pipeline never created reads as empty."""

    schema: str
    catalog: str | None

    def latest_offsets(self, selection: Selection | None = None) -> list[GoldOffset]:
        """``latest_offsets`` rows ``selection``'s literal names and prefixes may select (its regexes
        decide afterwards: planner.select_offsets)."""
        ...

    def offsets_as_of(
        self,
        as_of: datetime,
        *,
        precedence: Sequence[str] = METHODS,
        selection: Selection | None = None,
    ) -> list[GoldOffset]:
        """The translation current at ``as_of`` per group-partition, from ``offset_history``, chosen
        by offsetlake.mirror.precedence with valid_from as the freshness."""
        ...

    def count_translations(self, as_of: datetime | None = None) -> int:
        """Rows of ``latest_offsets``, or with ``as_of`` the ``offset_history`` rows valid then."""
        ...

    def cluster_health(self) -> list[ClusterHealth]:
        """The newest ``cluster_health`` check per cluster, by cluster name."""
        ...

    def failover_data_loss(self, selection: Selection) -> list[GroupDataLoss]:
        """Per source cluster and selected group, the newest ``failover_data_loss`` estimate."""
        ...

    def last_applied(self, selection: Selection | None = None) -> dict[GroupPartition, LastApplied]:
        """Per group-partition, the translation most recently applied and verified (from the audit)."""
        ...

    def failover_holds(self, selection: Selection | None = None) -> dict[str, datetime]:
        """Groups a failover placed that no operator resumed since, with when (audit.failover_holds)."""
        ...

    def append_audit(self, records: Sequence[tuple[Any, ...]]) -> int:
        """Append audit rows (in the columns' order of contract.tables.APPLY_AUDIT); the number appended."""
        ...

    def checkpoint_positions(self) -> CheckpointPositions:
        """Per checkpoint topic-partition in ``bronze_checkpoints``, the next Kafka offset after the
        highest one ingested: gold's high-water mark on the target's checkpoint topics."""
        ...

    def offset_sync_positions(self, source_cluster: str) -> dict[tuple[str, int], int]:
        """Per offset-syncs topic-partition (kafka_topic, kafka_partition) of ``source_cluster`` in
        ``silver_offset_syncs``, the next Kafka offset after the highest one silver holds
        (kafka_offset + 1): what the pipeline ingested of that source's syncs topics; empty when the
        table is absent or holds none."""
        ...

    def newest_group_offsets(self, selection: Selection | None = None) -> dict[str, list[GroupOffset]]:
        """Per source alias, ``latest_group_offsets`` of the selected groups (the newest snapshot of
        each group-partition): the committed positions the failover's K2K search translates."""
        ...

    def mapping_conflicts(self, selection: Selection | None = None) -> dict[GroupPartition, str]:
        """Per group-partition in ``k2k_mapping_conflicts``, why its mapping translation is ambiguous
        (a source record K2K mapped to several target topics); empty without K2K mappings."""
        ...

    def close(self) -> None:
        """Let go of what the store holds while a run reads (the local home's run lock, which keeps
        pipeline updates from rewriting gold under it); a run closes the store it opened."""
        ...


class SparkGoldStore:
    """A GoldStore on a Spark session: offsetlake.apply.gold and offsetlake.apply.audit's queries."""

    def __init__(self, spark: SparkSession, schema: str, catalog: str | None = None) -> None:
        self.spark = spark
        self.schema = schema
        self.catalog = catalog

    @property
    def audit_table(self) -> str:
        return audit.audit_table_name(self.schema, self.catalog)

    def latest_offsets(self, selection: Selection | None = None) -> list[GoldOffset]:
        return gold.read_latest_offsets(self.spark, self.schema, self.catalog, selection)

    def offsets_as_of(
        self,
        as_of: datetime,
        *,
        precedence: Sequence[str] = METHODS,
        selection: Selection | None = None,
    ) -> list[GoldOffset]:
        return gold.read_offsets_as_of(
            self.spark, as_of, self.schema, self.catalog, precedence=precedence, selection=selection
        )

    def count_translations(self, as_of: datetime | None = None) -> int:
        return gold.count_translations(self.spark, self.schema, self.catalog, as_of)

    def cluster_health(self) -> list[ClusterHealth]:
        return gold.read_cluster_health(self.spark, self.schema, self.catalog)

    def failover_data_loss(self, selection: Selection) -> list[GroupDataLoss]:
        return gold.read_failover_data_loss(self.spark, self.schema, self.catalog, selection)

    def last_applied(self, selection: Selection | None = None) -> dict[GroupPartition, LastApplied]:
        return audit.read_last_applied(self.spark, self.audit_table, selection)

    def failover_holds(self, selection: Selection | None = None) -> dict[str, datetime]:
        return audit.read_failover_holds(self.spark, self.audit_table, selection)

    def append_audit(self, records: Sequence[tuple[Any, ...]]) -> int:
        return audit.append_audit(self.spark, self.audit_table, records)

    def checkpoint_positions(self) -> CheckpointPositions:
        return gold.read_checkpoint_positions(self.spark, self.schema, self.catalog)

    def offset_sync_positions(self, source_cluster: str) -> dict[tuple[str, int], int]:
        return gold.read_offset_sync_positions(self.spark, self.schema, self.catalog, source_cluster)

    def newest_group_offsets(self, selection: Selection | None = None) -> dict[str, list[GroupOffset]]:
        return gold.read_newest_group_offsets(self.spark, self.schema, self.catalog, selection)

    def mapping_conflicts(self, selection: Selection | None = None) -> dict[GroupPartition, str]:
        return gold.read_mapping_conflicts(self.spark, self.schema, self.catalog, selection)

    def offset_syncs(self, source_cluster: str, topics: Collection[str]) -> SyncHistories:
        """The forward flow's offset syncs of ``topics`` (failback's reverse translation)."""
        return gold.read_offset_syncs(self.spark, self.schema, self.catalog, source_cluster, topics)

    def close(self) -> None:
        """Nothing to let go of: the session is its creator's, and the tables' engine keeps each
        read whole (Delta versions on Databricks)."""
