"""The failover's refresh selection: latest_offsets' lineage and the health rows, nothing else."""

from __future__ import annotations

from offsetlake.pipeline.refresh_selection import failover_refresh_selection
from offsetlake.pipeline.settings import PipelineSettings
from offsetlake.pipeline.tables import (
    ALL_TABLES,
    CLUSTER_HEALTH,
    FAILOVER_DATA_LOSS,
    LATEST_OFFSETS,
    OFFSET_HISTORY,
    REPLICATION_PROGRESS,
)


def settings(**overrides: str) -> PipelineSettings:
    conf = {"offsetlake.target.bootstrap.servers": "t:9092", "offsetlake.sources": "primary=s:9092"}
    return PipelineSettings.from_conf((conf | overrides).get)


def test_the_selection_names_latest_offsets_its_inputs_and_the_health_rows_only() -> None:
    selected = failover_refresh_selection(settings())
    assert {LATEST_OFFSETS.name, CLUSTER_HEALTH.name, "bronze_checkpoints", "silver_offset_syncs"} <= set(
        selected
    )
    assert not {OFFSET_HISTORY.name, FAILOVER_DATA_LOSS.name, REPLICATION_PROGRESS.name} & set(selected)
    assert not any("mapping" in name or "connect" in name or "k2k" in name for name in selected)
    assert set(selected) <= {table.name for table in ALL_TABLES}
    assert len(set(selected)) == len(selected)


def test_mapping_tables_are_selected_only_when_the_graph_declares_them() -> None:
    with_mappings = failover_refresh_selection(settings(**{"offsetlake.mappings.topics": "primary"}))
    added = set(with_mappings) - set(failover_refresh_selection(settings()))
    assert added == {
        "bronze_mappings",
        "decoded_mappings",
        "silver_mappings",
        "latest_group_offsets",
        "k2k_mapping_conflicts",
    }


def test_tracing_lookups_are_selected_only_when_a_k2k_route_is_configured() -> None:
    with_tracing = failover_refresh_selection(
        settings(**{"offsetlake.k2k.tracing.topics": "primary={topic}"})
    )
    assert set(with_tracing) - set(failover_refresh_selection(settings())) == {"k2k_tracing_lookups"}
