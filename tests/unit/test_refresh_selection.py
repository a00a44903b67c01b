"""The failover's refresh selection: latest_offsets' lineage and the health rows, nothing else."""

from __future__ import annotations

from dataclasses import replace

from offsetlake.contract.refresh_selection import (
    declared_tables,
    failover_refresh,
    failover_refresh_selection,
    lineage,
)
from offsetlake.contract.settings import PipelineSettings
from offsetlake.contract.tables import (
    ALL_TABLES,
    CLUSTER_HEALTH,
    FAILOVER_DATA_LOSS,
    LATEST_GROUP_OFFSETS,
    LATEST_OFFSETS,
    OFFSET_HISTORY,
    QUARANTINE,
    REPLICATION_PROGRESS,
    SOURCE_LOG_OFFSETS,
    TRANSLATION_OBSERVATIONS,
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


def test_the_selection_holds_every_declared_input_of_what_it_refreshes() -> None:
    """Quarantine aside (refreshed beside the decoded tables, not for the failover): a selected table
    reading a declared table outside the selection would compute from stale rows."""
    specs = {spec.name: spec for spec in ALL_TABLES}
    for conf in (
        {},
        {"offsetlake.mappings.topics": "primary", "offsetlake.k2k.tracing.topics": "primary={topic}"},
    ):
        chosen = settings(**conf)
        selected, declared = set(failover_refresh_selection(chosen)), set(declared_tables(chosen))
        for name in selected - {QUARANTINE.name}:
            assert {source.name for source in specs[name].inputs} & declared <= selected, name


def test_a_new_input_is_followed_to_its_own_inputs() -> None:
    """The lineage comes from the specs: a table latest_offsets starts to read, and what that table
    reads, join the refresh without a list to edit."""
    everything = {spec.name for spec in ALL_TABLES}
    grown = replace(LATEST_OFFSETS, inputs=(*LATEST_OFFSETS.inputs, SOURCE_LOG_OFFSETS))
    assert lineage((grown,), everything) == lineage((LATEST_OFFSETS,), everything) | {SOURCE_LOG_OFFSETS.name}
    assert TRANSLATION_OBSERVATIONS.name in lineage((LATEST_OFFSETS,), everything)
    assert lineage((LATEST_OFFSETS,), everything - {"offset_versions"}) == {LATEST_OFFSETS.name}


def test_mapping_tables_are_selected_only_when_the_graph_declares_them() -> None:
    with_mappings = failover_refresh_selection(settings(**{"offsetlake.mappings.topics": "primary"}))
    added = set(with_mappings) - set(failover_refresh_selection(settings()))
    assert added == {
        "bronze_mappings",
        "decoded_mappings",
        "silver_mappings",
        "k2k_mapping_conflicts",
    }


def test_the_snapshots_the_apply_places_from_are_refreshed_with_or_without_k2k() -> None:
    """The partitions each group committed (latest_group_offsets, apply/placement.py) come from the
    snapshot the refresh takes: without a K2K route it once held the last full update's, so a
    partition a group committed since was unknown to the failover."""
    for conf in ({}, {"offsetlake.k2k.tracing.topics": "primary={topic}"}):
        selected = set(failover_refresh_selection(settings(**conf)))
        assert {LATEST_GROUP_OFFSETS.name, "silver_group_offsets", "bronze_group_offsets"} <= selected


def test_tracing_lookups_are_selected_only_with_a_k2k_route() -> None:
    """Issue 46: the failover's K2K search reads latest_group_offsets; outside the selection it held
    the snapshot of the update before (73) while the lookups translated the newer one (43)."""
    with_tracing = failover_refresh_selection(
        settings(**{"offsetlake.k2k.tracing.topics": "primary={topic}"})
    )
    assert set(with_tracing) - set(failover_refresh_selection(settings())) == {"k2k_tracing_lookups"}
    assert LATEST_GROUP_OFFSETS.name in with_tracing
    assert {"bronze_group_offsets", "silver_group_offsets"} <= set(with_tracing)


def test_on_a_home_with_every_declared_table_the_failover_refreshes_the_selection() -> None:
    plain = settings()
    scope = failover_refresh(plain, set(declared_tables(plain)))
    assert scope.selection == failover_refresh_selection(plain)
    assert scope.missing == ()


def test_on_a_home_missing_a_declared_table_the_failover_refreshes_everything() -> None:
    """Issue 31: a fresh home; and one where quarantine's input decoded_connect_offsets was never
    created (the engine then fails quarantine with "key not found")."""
    plain = settings()
    fresh = failover_refresh(plain, ())
    assert fresh.selection == ()
    assert set(fresh.missing) == set(declared_tables(plain)) >= {"quarantine", REPLICATION_PROGRESS.name}
    without_connect = failover_refresh(plain, set(declared_tables(plain)) - {"decoded_connect_offsets"})
    assert without_connect == type(fresh)((), ("decoded_connect_offsets",))


def test_the_declared_tables_follow_the_configured_inputs() -> None:
    plain = set(declared_tables(settings()))
    assert "decoded_connect_offsets" in plain  # Connect's offsets topics are read by default
    assert not any("mapping" in name or "tracing" in name for name in plain)
    assert not any(
        "connect" in name for name in declared_tables(settings(**{"offsetlake.connect_offsets.topics": ""}))
    )
    everything = settings(
        **{"offsetlake.mappings.topics": "primary", "offsetlake.k2k.tracing.topics": "primary={topic}"}
    )
    assert set(declared_tables(everything)) == {table.name for table in ALL_TABLES}
