"""The datasets a failover refreshes: everything ``latest_offsets`` is computed from, the health rows,
and ``latest_group_offsets``: the partitions each source group committed, which the apply must place
(apply/placement.py) and K2K's tracing search reads.

A failover needs the newest translations and each cluster's reachability, nothing else. The engine's
refresh selection (``spark-pipelines run --refresh``, the Pipelines API's ``refresh_selection``)
updates only the named datasets; replication progress, data loss, history and the Connect offsets
follow at the next full update, each streaming table from where its checkpoint stopped.
Temporary views are not datasets and are never named. The lineage is the inputs each table's spec
declares (contract/tables.py), which tests/integration/test_pipeline_declarations.py holds to what
the transformations read: a new input of ``latest_offsets`` joins the selection by itself, here and
in the bundle's failover job (resources/offsetlake_failover_job.py).

A selection needs the graph's tables to exist: the engine resolves each streaming flow again when
it starts, against the catalog, so a selected flow reading a table outside the selection that was
never created fails ("key not found: ...quarantine": quarantine reads ``decoded_connect_offsets``),
and the tables outside it (``replication_progress``, ...) would not exist after the failover. On a
home where a table the graph declares is missing, the failover's refresh is a full update
(:func:`failover_refresh`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from offsetlake.contract.settings import PipelineSettings
from offsetlake.contract.tables import (
    ALL_TABLES,
    BRONZE_CONNECT_OFFSETS,
    BRONZE_MAPPINGS,
    CLUSTER_HEALTH,
    DECODED_CONNECT_OFFSETS,
    DECODED_MAPPINGS,
    K2K_MAPPING_CONFLICTS,
    K2K_TRACING_LOOKUPS,
    LATEST_GROUP_OFFSETS,
    LATEST_OFFSETS,
    QUARANTINE,
    SILVER_CONNECT_OFFSETS,
    SILVER_MAPPINGS,
    TableSpec,
)

_REFRESHED_FOR: tuple[TableSpec, ...] = (
    LATEST_OFFSETS,
    # The partitions each group committed, newest snapshot: every one is placed or the run is
    # INCOMPLETE (apply/placement.py), so a snapshot older than the refresh could leave one unknown.
    # K2K's tracing search reads it too: stale, it searched the snapshot before (73) where the
    # lookups had translated the newer one (43).
    LATEST_GROUP_OFFSETS,
    # The apply refuses what this flags, so it must be as fresh as the translations it flags.
    K2K_MAPPING_CONFLICTS,
    CLUSTER_HEALTH,
)
"""What the failover reads: each is refreshed with every declared table it is computed from."""
_REFRESHED_BESIDE: tuple[TableSpec, ...] = (QUARANTINE,)
"""Refreshed without their inputs: malformed checkpoints and syncs land here in the same update
they are read, so nothing is lost between a failover's refresh and the next full update."""


def lineage(specs: Iterable[TableSpec], declared: Collection[str]) -> frozenset[str]:
    """``specs`` and every table they are computed from, following the inputs the specs declare
    through the ``declared`` tables only (an input the settings leave out is not read)."""
    found: set[str] = set()
    pending = [spec for spec in specs if spec.name in declared]
    while pending:
        spec = pending.pop()
        if spec.name not in found:
            found.add(spec.name)
            pending += [source for source in spec.inputs if source.name in declared]
    return frozenset(found)


def failover_refresh_selection(settings: PipelineSettings) -> tuple[str, ...]:
    """The dataset names to refresh before a failover, in table order: what the failover reads and
    every table of the graph ``settings`` declare that it is computed from (the specs' inputs)."""
    declared = declared_tables(settings)
    beside = {spec.name for spec in _REFRESHED_BESIDE if spec.name in declared}
    selected = lineage(_REFRESHED_FOR, declared) | beside
    return tuple(spec.name for spec in ALL_TABLES if spec.name in selected)


_WITH_TRACING: tuple[TableSpec, ...] = (K2K_TRACING_LOOKUPS,)
_DECLARED_WITH_MAPPINGS: tuple[TableSpec, ...] = (
    BRONZE_MAPPINGS,
    DECODED_MAPPINGS,
    SILVER_MAPPINGS,
    K2K_MAPPING_CONFLICTS,
)
_DECLARED_WITH_CONNECT_OFFSETS: tuple[TableSpec, ...] = (
    BRONZE_CONNECT_OFFSETS,
    DECODED_CONNECT_OFFSETS,
    SILVER_CONNECT_OFFSETS,
)


def declared_tables(settings: PipelineSettings) -> tuple[str, ...]:
    """Every table the pipeline's graph declares for ``settings``: all of them but the mapping,
    Connect-offset and tracing tables, each declared only when configured."""
    left_out = (
        (() if settings.mappings_topics else _DECLARED_WITH_MAPPINGS)
        + (() if settings.connect_offsets_topics else _DECLARED_WITH_CONNECT_OFFSETS)
        + (() if settings.k2k_tracing_routes else _WITH_TRACING)
    )
    return tuple(spec.name for spec in ALL_TABLES if spec not in left_out)


@dataclass(frozen=True)
class FailoverRefresh:
    """What the failover refreshes: ``selection`` (empty: every dataset, a full update)."""

    selection: tuple[str, ...]
    missing: tuple[str, ...]
    """The declared tables the home does not have yet; any makes the refresh a full update."""


def failover_refresh(settings: PipelineSettings, existing: Collection[str]) -> FailoverRefresh:
    """The failover's selection when every table the graph declares exists (``existing``: the
    home's table names), else a full update that creates them."""
    missing = tuple(name for name in declared_tables(settings) if name not in existing)
    return FailoverRefresh(() if missing else failover_refresh_selection(settings), missing)
