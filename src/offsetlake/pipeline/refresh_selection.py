"""The datasets a failover refreshes: everything ``latest_offsets`` is computed from, and the health rows.

A failover needs the newest translations and each cluster's reachability, nothing else. The engine's
refresh selection (``spark-pipelines run --refresh``, the Pipelines API's ``refresh_selection``)
updates only the named datasets; replication progress, data loss, history and the Connect offsets
follow at the next full update, each streaming table from where its checkpoint stopped.
Temporary views are not datasets and are never named.

A selection needs the graph's tables to exist: the engine resolves each streaming flow again when
it starts, against the catalog, so a selected flow reading a table outside the selection that was
never created fails ("key not found: ...quarantine": quarantine reads ``decoded_connect_offsets``),
and the tables outside it (``replication_progress``, ...) would not exist after the failover. On a
home where a table the graph declares is missing, the failover's refresh is a full update
(:func:`failover_refresh`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from offsetlake.pipeline.settings import PipelineSettings
from offsetlake.pipeline.tables import (
    ALL_TABLES,
    BRONZE_CHECKPOINTS,
    BRONZE_CONNECT_OFFSETS,
    BRONZE_GROUP_OFFSETS,
    BRONZE_MAPPINGS,
    BRONZE_OFFSET_SYNCS,
    CLUSTER_HEALTH,
    DECODED_CHECKPOINTS,
    DECODED_CONNECT_OFFSETS,
    DECODED_MAPPINGS,
    DECODED_OFFSET_SYNCS,
    K2K_MAPPING_CONFLICTS,
    K2K_TRACING_LOOKUPS,
    LATEST_GROUP_OFFSETS,
    LATEST_OFFSETS,
    OFFSET_VERSIONS,
    QUARANTINE,
    SILVER_CHECKPOINTS,
    SILVER_CONNECT_OFFSETS,
    SILVER_GROUP_OFFSETS,
    SILVER_MAPPINGS,
    SILVER_OFFSET_SYNCS,
    TRANSLATION_OBSERVATIONS,
    TableSpec,
)

_ALWAYS: tuple[TableSpec, ...] = (
    BRONZE_CHECKPOINTS,
    BRONZE_OFFSET_SYNCS,
    BRONZE_GROUP_OFFSETS,
    CLUSTER_HEALTH,
    DECODED_CHECKPOINTS,
    DECODED_OFFSET_SYNCS,
    SILVER_CHECKPOINTS,
    SILVER_OFFSET_SYNCS,
    SILVER_GROUP_OFFSETS,
    # Malformed checkpoints and syncs land here in the same update they are read: nothing is lost
    # between a failover's refresh and the next full update.
    QUARANTINE,
    TRANSLATION_OBSERVATIONS,
    OFFSET_VERSIONS,
    LATEST_OFFSETS,
)
_WITH_MAPPINGS: tuple[TableSpec, ...] = (
    BRONZE_MAPPINGS,
    DECODED_MAPPINGS,
    SILVER_MAPPINGS,
    # The apply refuses what this flags, so it must be as fresh as the translations it flags.
    LATEST_GROUP_OFFSETS,
    K2K_MAPPING_CONFLICTS,
)
_WITH_TRACING: tuple[TableSpec, ...] = (K2K_TRACING_LOOKUPS,)


def failover_refresh_selection(settings: PipelineSettings) -> tuple[str, ...]:
    """The dataset names to refresh before a failover, for the graph ``settings`` declare
    (mapping and tracing tables exist only when configured)."""
    specs = (
        _ALWAYS
        + (_WITH_MAPPINGS if settings.mappings_topics else ())
        + (_WITH_TRACING if settings.k2k_tracing_routes else ())
    )
    return tuple(spec.name for spec in specs)


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
