"""What the apply reads of gold and of its own audit, named once for every reader (pure).

Both gold stores (Spark's, apply/gold.py; the local one, local/warehouse_gold.py), the features
(apply, failover, failback, mm2_reset) and the reports take these types and helpers from here, not
from either store: gold's rows as GoldOffsets, the audit's last verified commit, the pipeline's
health and data-loss rows, how a table is named in a catalog, gold's timestamps as UTC
datetimes (epoch microseconds, never a driver's local time zone), and the bounds a selection of
groups and topics hands a read of gold.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final, Protocol

from offsetlake.errors import ExternalError
from offsetlake.mirror.positions import GroupPartition

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
UPSTREAM: Final = "upstream_offset"
"""Read into GoldOffset.upstream_offset from a gold table that has the column (the contract's do)."""


@dataclass(frozen=True)
class NameBounds:
    """Whole names and name prefixes that together cover every name a selection regex matches."""

    names: frozenset[str]
    prefixes: tuple[str, ...]


class Bounded(Protocol):
    """A selection of groups and topics as a read of gold sees it (offsetlake.apply.planner.Selection)."""

    @property
    def group_bounds(self) -> NameBounds | None: ...

    @property
    def topic_bounds(self) -> NameBounds | None: ...


def selection_bounds(selection: Bounded | None) -> dict[str, NameBounds]:
    """The selection's storage bounds by the gold column they apply to: both gold stores turn them
    into their scan's filter (Spark's and Arrow's)."""
    if selection is None:
        return {}
    bounds = {"consumer_group": selection.group_bounds, "topic": selection.topic_bounds}
    return {column: bound for column, bound in bounds.items() if bound is not None}


class GoldTableError(ExternalError, ValueError):
    """The gold table is missing or holds rows the apply cannot use."""


def table_name(table: str, schema: str, catalog: str | None = None) -> str:
    """``catalog.schema.table`` on Unity Catalog, ``schema.table`` on the local metastore."""
    parts = [catalog, schema, table] if catalog else [schema, table]
    return ".".join(f"`{part}`" for part in parts)


def to_micros(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(microseconds=1)


def from_micros(micros: int) -> datetime:
    return _EPOCH + timedelta(microseconds=micros)


@dataclass(frozen=True)
class GoldOffset:
    """One translated offset from gold (``latest_offsets`` or ``offset_history`` as of a time).

    ``source_timestamp`` identifies the translation (when this offset was first observed);
    ``observed_at`` is the latest evidence that it still holds (gold ``last_observed_at``). An idle
    group keeps an old source_timestamp while its translation is re-observed, so age is measured
    from ``observed_at`` when gold has it.
    """

    source_cluster: str
    consumer_group: str
    topic: str
    partition: int
    downstream_offset: int
    source_timestamp: datetime
    method: str = ""
    observed_at: datetime | None = None
    metadata: str = ""
    """The source group's own commit metadata (from its checkpoint or snapshot): what apply commits."""
    upstream_offset: int | None = None
    """The source group's committed offset the translation is based on (precedence compares it)."""
    from_tail: bool = False
    """Read from the target by the run itself, beyond gold: the checkpoint tail
    (offsetlake.apply.tail_merge) or the K2K search (offsetlake.apply.k2k_search); the pipeline
    records it in history at its next update."""

    @property
    def key(self) -> GroupPartition:
        return (self.consumer_group, self.topic, self.partition)


@dataclass(frozen=True)
class LastApplied:
    """What the audit remembers of the most recent verified commit of one group-partition."""

    source_timestamp: datetime
    """The translation it applied (a later run refuses older ones without --allow-rewind)."""
    committed_at: datetime
    """When it was committed: the start of the offset's retention clock on the target."""
    offset: int | None = None
    """The offset it committed, as read back: a target still there is offsetlake's own position."""


@dataclass(frozen=True)
class ClusterHealth:
    """A cluster's last reachability check by the pipeline, and when it last answered."""

    cluster: str
    role: str
    reachable: bool
    error: str | None
    checked_at: datetime
    last_reachable_at: datetime | None


@dataclass(frozen=True)
class GroupDataLoss:
    """What failing over now costs one group from one source cluster (gold failover_data_loss)."""

    source_cluster: str
    consumer_group: str
    partitions: int
    consumed_not_replicated: int
    """Records the group consumed on the source that are not on the target (partitions with a known
    replication position only)."""
    unconsumed_lost: int
    """Records the group has not consumed yet that are not on the target: lost to it."""
    partitions_unknown: int
    """Partitions whose replication position is unknown (MM2's offset was reset) or never snapshotted."""
    as_of: datetime | None
