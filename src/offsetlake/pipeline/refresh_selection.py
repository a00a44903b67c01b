"""The datasets a failover refreshes: everything ``latest_offsets`` is computed from, and the health rows.

A failover needs the newest translations and each cluster's reachability, nothing else. The engine's
refresh selection (``spark-pipelines run --refresh``, the Pipelines API's ``refresh_selection``)
updates only the named datasets; replication progress, data loss, history and the Connect offsets
follow at the next full update, each streaming table from where its checkpoint stopped.
Temporary views are not datasets and are never named.
"""

from __future__ import annotations

from offsetlake.pipeline.settings import PipelineSettings
from offsetlake.pipeline.tables import (
    BRONZE_CHECKPOINTS,
    BRONZE_GROUP_OFFSETS,
    BRONZE_MAPPINGS,
    BRONZE_OFFSET_SYNCS,
    CLUSTER_HEALTH,
    DECODED_CHECKPOINTS,
    DECODED_MAPPINGS,
    DECODED_OFFSET_SYNCS,
    K2K_MAPPING_CONFLICTS,
    K2K_TRACING_LOOKUPS,
    LATEST_GROUP_OFFSETS,
    LATEST_OFFSETS,
    OFFSET_VERSIONS,
    QUARANTINE,
    SILVER_CHECKPOINTS,
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
