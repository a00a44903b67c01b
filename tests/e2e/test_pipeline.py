"""The whole pipeline, run by `spark-pipelines` through the runner, on records produced to the brokers.

One scenario (module fixture) feeds most assertions; later tests in this module extend it with a
rerun (nothing new -> nothing changes) and an incremental run (only the new records are read).

Scenario: two source aliases with a custom replication separator (unique per session, so other
tests' MM2 topics on the shared brokers never match our patterns), offset syncs at location
``source``. ``east`` is the source broker; ``west`` is the target broker acting as a second
source (as in a bidirectional setup), so each alias has its own offset-syncs topic and groups.
Every checkpoint, offset-sync, Connect-offset and K2K fixture record (valid and malformed) is
replayed. MM2's own position: Connect offsets for ``east`` (orders replicated through 37; unsynced
reset by a tombstone), offset syncs only for ``west`` (payments), source log ends from records
produced one per batch; the replication progress and failover data loss are checked against the
figures these imply.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from offsetlake.codecs.connect import ConnectOffset, encode_connect_offset
from offsetlake.codecs.mappings import OffsetMapping, encode_k2k_json_v1
from offsetlake.codecs.mm2 import Checkpoint, OffsetSync, encode_checkpoint, encode_offset_sync
from offsetlake.contract.settings import MappingTopic, PipelineSettings
from offsetlake.contract.tables import ALL_TABLES
from offsetlake.k2k.routing import TOPIC_PLACEHOLDER, TracingRoute
from offsetlake.local.backlog import flow_checkpoint, stream_position, target_backlog
from offsetlake.local.home import HOME_ENV, LocalHome
from offsetlake.local.pipeline_update import PipelineRunResult, run_pipeline
from offsetlake.mirror.clusters import ClusterEndpoint
from offsetlake.mirror.policy import ReplicationPolicy
from tests.fixture_records import load_fixture_records
from tests.kafka_helpers import STREAMS_METADATA, ClustersUnderTest, commit_offsets, create_topic, produce

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

TARGET_ALIAS = "tgt"
# (upstream, downstream) in write order; 20 is synced twice and the later sync must win.
EAST_ORDERS_SYNCS = ((0, 0), (10, 8), (20, 15), (20, 16), (35, 30))
REPO_SQL = Path(__file__).resolve().parents[2] / "sql"
DASHBOARD = Path(__file__).resolve().parents[2] / "src" / "dashboards" / "offsetlake_freshness.lvdash.json"
ALERTS = Path(__file__).resolve().parents[2] / "resources" / "offsetlake.alert.yml"
# apply_audit is written by plan/apply, not the pipeline: test_apply.py and test_alert_queries.py run those.
_NOT_PIPELINE_DATASETS = {"apply_outcomes"}
_NOT_PIPELINE_ALERTS = {"offsetlake_sync_stalled"}
_BUNDLE_SCHEMA_PREFIX = (
    "${resources.schemas.offsetlake_schema.catalog_name}.${resources.schemas.offsetlake_schema.name}."
)


def dashboard_queries() -> dict[str, str]:
    """The dashboard's dataset queries (unqualified: the schema is offsetlake locally) and the
    alerts' queries with the bundle's catalog.schema prefix (the schema resource's) taken off."""
    import yaml

    datasets = json.loads(DASHBOARD.read_text(encoding="utf-8"))["datasets"]
    queries = {
        f"dashboard:{d['name']}": " ".join(d["queryLines"])
        for d in datasets
        if d["name"] not in _NOT_PIPELINE_DATASETS
    }
    for name, alert in yaml.safe_load(ALERTS.read_text(encoding="utf-8"))["resources"]["alerts"].items():
        if name not in _NOT_PIPELINE_ALERTS:
            queries[f"alert:{name}"] = alert["query_text"].replace(_BUNDLE_SCHEMA_PREFIX, "")
    return queries


@dataclass
class Scenario:
    home: Path
    settings: PipelineSettings
    policy: ReplicationPolicy
    token: str
    source_bootstrap: str
    target_bootstrap: str
    first_run: PipelineRunResult
    tables: dict[str, list[dict[str, Any]]]

    def name(self, prefix: str) -> str:
        return f"{prefix}-{self.token}"

    def downstream(self, alias: str, topic: str) -> str:
        return self.policy.format_remote_topic(alias, topic)


def query(home: Path, *queries: str) -> list[list[dict[str, Any]]]:
    """Run queries with `offsetlake sql --json` in its own process (it owns the Derby metastore)."""
    completed = subprocess.run(
        [sys.executable, "-m", "offsetlake.cli", "sql", "--json", *queries],
        env={**os.environ, HOME_ENV: str(home)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    documents = json.loads(completed.stdout.strip().splitlines()[-1])
    return [[dict(zip(doc["columns"], row, strict=True)) for row in doc["rows"]] for doc in documents]


def all_tables(home: Path, **extra_queries: str) -> dict[str, list[dict[str, Any]]]:
    """Every table's rows (and any extra named queries), from one `offsetlake sql` process."""
    queries = {table.name: f"SELECT * FROM offsetlake.{table.name}" for table in ALL_TABLES} | extra_queries
    return dict(zip(queries, query(home, *queries.values()), strict=True))


def _describe_and_example_queries() -> dict[str, str]:
    describe = {
        f"describe:{table.name}": f"DESCRIBE TABLE EXTENDED offsetlake.{table.name}" for table in ALL_TABLES
    }
    examples = {
        f"sql:{path.stem}": path.read_text(encoding="utf-8") for path in sorted(REPO_SQL.glob("*.sql"))
    }
    return describe | examples | dashboard_queries()


def _run(scenario_home: Path, settings: PipelineSettings) -> PipelineRunResult:
    result = run_pipeline(settings, LocalHome.resolve(scenario_home))
    assert result.succeeded, f"{result.explanation}; log {result.log_path}"
    return result


def _checkpoint(
    group: str, topic: str, upstream: int, downstream: int, metadata: str = ""
) -> tuple[bytes, bytes]:
    return encode_checkpoint(Checkpoint(group, topic, 0, upstream, downstream, metadata))


def _sync(topic: str, upstream: int, downstream: int) -> tuple[bytes, bytes]:
    return encode_offset_sync(OffsetSync(topic, 0, upstream, downstream))


def _connect(topic: str, partition: int, offset: int | None) -> tuple[bytes, bytes | None]:
    source_partition = {"cluster": "east", "partition": partition, "topic": topic}
    return encode_connect_offset(
        ConnectOffset(
            "MirrorSourceConnector", source_partition, None if offset is None else {"offset": offset}
        )
    )


def _raw(kind: str) -> list[tuple[bytes | None, bytes | None]]:
    return [(record.key, record.value) for record in load_fixture_records(kind)]


@pytest.fixture(scope="module")
def scenario(
    tmp_path_factory: pytest.TempPathFactory, source_bootstrap: str, target_bootstrap: str
) -> Iterator[Scenario]:
    token = uuid.uuid4().hex[:6]
    policy = ReplicationPolicy(separator=f"_{token}_")
    home = tmp_path_factory.mktemp("pipeline_home")
    orders, payments, unsynced = f"orders-{token}", f"payments-{token}", f"unsynced-{token}"
    for topic in (orders, unsynced):
        create_topic(source_bootstrap, topic)
    create_topic(target_bootstrap, payments)

    east_syncs = policy.offset_syncs_topic(TARGET_ALIAS)  # on each source cluster (location=source)
    create_topic(source_bootstrap, east_syncs)
    create_topic(target_bootstrap, east_syncs)  # west's syncs topic lives on west's own cluster
    produce(
        source_bootstrap,
        east_syncs,
        [
            *(_sync(orders, upstream, downstream) for upstream, downstream in EAST_ORDERS_SYNCS),
            *_raw("offset_sync"),
        ],
    )
    produce(target_bootstrap, east_syncs, [_sync(payments, 0, 100), _sync(payments, 5, 104)])

    east_orders = policy.format_remote_topic("east", orders)
    west_payments = policy.format_remote_topic("west", payments)
    east_checkpoints, west_checkpoints = policy.checkpoints_topic("east"), policy.checkpoints_topic("west")
    for topic in (east_checkpoints, west_checkpoints):
        create_topic(target_bootstrap, topic)
    produce(
        target_bootstrap,
        east_checkpoints,
        [
            _checkpoint(f"exact-{token}", east_orders, 20, 15, "m1"),  # MM2 computed 15; latest sync says 16
            _checkpoint(f"stale-{token}", east_orders, 10, 8),  # the group moved on to 35 since
            *_raw("checkpoint"),
        ],
    )
    produce(
        target_bootstrap,
        west_checkpoints,
        [
            _checkpoint(f"west-{token}", west_payments, 7, 105),
            # A Kafka Streams application's group: MM2 copies its metadata (partition time) as is.
            _checkpoint(f"streams-{token}", west_payments, 5, 104, STREAMS_METADATA),
        ],
    )

    mappings_topic = f"k2k-mappings-{token}"
    create_topic(target_bootstrap, mappings_topic)
    produce(
        target_bootstrap,
        mappings_topic,
        [
            encode_k2k_json_v1(OffsetMapping(orders, 0, 20, east_orders, 0, 16)),
            encode_k2k_json_v1(OffsetMapping(orders, 0, 35, east_orders, 0, 30)),
            *_raw("k2k_mapping"),
        ],
    )

    # The source heads: 45 orders, 8 unsynced (east), 10 payments (west); one record per batch.
    for bootstrap, topic, count in ((source_bootstrap, orders, 45), (source_bootstrap, unsynced, 8)):
        produce(bootstrap, topic, [(None, b"r")] * count)
    produce(target_bootstrap, payments, [(None, b"r")] * 10)
    connect_offsets = f"connect-offsets-{token}"
    create_topic(target_bootstrap, connect_offsets)
    produce(
        target_bootstrap,
        connect_offsets,
        [
            _connect(orders, 0, 29),
            _connect(unsynced, 0, 3),
            _connect(orders, 0, 37),  # the newest flush: orders replicated through 37
            _connect(unsynced, 0, None),  # reset
            *_raw("connect_offset"),
        ],
    )

    commit_offsets(source_bootstrap, f"exact-{token}", {(orders, 0): 20}, metadata="m1")
    commit_offsets(source_bootstrap, f"between-{token}", {(orders, 0): 25})
    commit_offsets(source_bootstrap, f"stale-{token}", {(orders, 0): 35})
    commit_offsets(source_bootstrap, f"unsynced-{token}", {(unsynced, 0): 5})
    commit_offsets(target_bootstrap, f"west-{token}", {(payments, 0): 7})

    settings = PipelineSettings(
        target_bootstrap_servers=target_bootstrap,
        target_alias=TARGET_ALIAS,
        sources=(ClusterEndpoint("east", source_bootstrap), ClusterEndpoint("west", target_bootstrap)),
        separator=policy.separator,
        groups_include=f".*-{token}",
        mappings_topics=(MappingTopic("east", f"k2k-mappings-{token}"),),
        # No target copy here carries K2K tracing headers: every lookup ends with its reason.
        k2k_tracing_routes=(TracingRoute("east", f"east{policy.separator}{TOPIC_PLACEHOLDER}"),),
        connect_offsets_topics=f"connect-offsets-{token}",
        topics_include=f"(orders|unsynced|payments|k2k-mappings)-{token}",
    )
    first_run = _run(home, settings)
    tables = all_tables(home, **_describe_and_example_queries())
    yield Scenario(home, settings, policy, token, source_bootstrap, target_bootstrap, first_run, tables)


def _latest(scenario: Scenario, group: str) -> list[dict[str, Any]]:
    return [row for row in scenario.tables["latest_offsets"] if row["consumer_group"] == scenario.name(group)]


def _history(scenario: Scenario, group: str, method: str) -> list[dict[str, Any]]:
    return [
        row
        for row in scenario.tables["offset_history"]
        if row["consumer_group"] == scenario.name(group) and row["method"] == method
    ]


def test_every_flow_completed_and_the_runner_says_so(scenario: Scenario) -> None:
    result = scenario.first_run
    assert result.succeeded and result.run_state == "COMPLETED"
    assert {outcome.state for outcome in result.flows} == {"COMPLETED"}
    flow_names = {outcome.name.rsplit(".", 1)[-1] for outcome in result.flows}
    assert {table.name for table in ALL_TABLES} <= flow_names
    assert result.flow("latest_offsets").seconds >= 0 and result.flow("quarantine").state == "COMPLETED"


def test_bronze_keeps_every_record_with_coordinates_and_alias(scenario: Scenario) -> None:
    checkpoints = scenario.tables["bronze_checkpoints"]
    by_alias = {alias: [r for r in checkpoints if r["source_cluster"] == alias] for alias in ("east", "west")}
    assert len(by_alias["east"]) == 2 + len(load_fixture_records("checkpoint"))
    assert len(by_alias["west"]) == 2
    assert sorted(r["offset"] for r in by_alias["east"]) == list(range(len(by_alias["east"])))
    assert all(r["ingested_at"] and r["timestamp"] for r in checkpoints)
    syncs = scenario.tables["bronze_offset_syncs"]
    assert len([r for r in syncs if r["source_cluster"] == "east"]) == 5 + len(
        load_fixture_records("offset_sync")
    )
    assert len([r for r in syncs if r["source_cluster"] == "west"]) == 2
    assert len(scenario.tables["bronze_mappings"]) == 2 + len(load_fixture_records("k2k_mapping"))
    assert len(scenario.tables["bronze_connect_offsets"]) == 4 + len(load_fixture_records("connect_offset"))


def test_the_backlog_estimate_starts_where_the_bronze_stream_stands(scenario: Scenario) -> None:
    """The estimate that chooses an update's JIT (local/backlog.py) reads the engine's own
    checkpoint: after the update nothing is left to read; a full refresh would read every checkpoint
    record bronze holds; the stream stands one past the newest offset bronze landed per partition."""
    home, config = LocalHome(scenario.home), {"bootstrap.servers": scenario.target_bootstrap}
    bronze = scenario.tables["bronze_checkpoints"]
    assert target_backlog(scenario.settings, home, config, full_refresh=False) == 0
    assert target_backlog(scenario.settings, home, config, full_refresh=True) == len(bronze)
    newest: dict[tuple[str, int], int] = {}
    for row in bronze:
        key = (row["topic"], row["partition"])
        newest[key] = max(newest.get(key, -1), row["offset"] + 1)
    assert stream_position(flow_checkpoint(home, "bronze_checkpoints")) == newest


def test_every_malformed_fixture_is_quarantined_with_its_reason_and_bytes(scenario: Scenario) -> None:
    quarantine = scenario.tables["quarantine"]
    for kind, quarantine_kind in (
        ("checkpoint", "checkpoint"),
        ("offset_sync", "offset_sync"),
        ("connect_offset", "connect_offset"),
        ("k2k_mapping", "k2k-json-v1"),
    ):
        malformed = [record for record in load_fixture_records(kind) if record.error]
        rows = [row for row in quarantine if row["kind"] == quarantine_kind]
        assert len(rows) == len(malformed), kind
        for record in malformed:
            matching = [
                row
                for row in rows
                if row["key"] == (record.key.hex() if record.key is not None else None)
                and row["value"] == (record.value.hex() if record.value is not None else None)
            ]
            assert matching, record.id
            assert any(record.error in row["reason"] for row in matching), (record.id, matching[0]["reason"])
            assert all(row["kafka_topic"] and row["kafka_offset"] is not None for row in matching)
    good_checkpoints = 2 + 2 + sum(1 for r in load_fixture_records("checkpoint") if r.expected)
    assert len(scenario.tables["silver_checkpoints"]) == good_checkpoints


def test_silver_is_typed_and_decoded(scenario: Scenario) -> None:
    exact = [
        r for r in scenario.tables["silver_checkpoints"] if r["consumer_group"] == scenario.name("exact")
    ]
    assert [(r["topic"], r["upstream_offset"], r["downstream_offset"], r["metadata"]) for r in exact] == [
        (scenario.downstream("east", scenario.name("orders")), 20, 15, "m1")
    ]
    east_syncs = [
        (r["upstream_offset"], r["downstream_offset"])
        for r in sorted(scenario.tables["silver_offset_syncs"], key=lambda r: r["kafka_offset"])
        if r["source_cluster"] == "east" and r["topic"] == scenario.name("orders")
    ]
    assert east_syncs == list(EAST_ORDERS_SYNCS)
    groups = {r["consumer_group"]: r["committed_offset"] for r in scenario.tables["silver_group_offsets"]}
    assert groups[scenario.name("between")] == 25


def test_latest_offsets_follow_freshness_then_precedence(scenario: Scenario) -> None:
    east_orders = scenario.downstream("east", scenario.name("orders"))
    # U=20: mapping (16), offset_sync (latest-written sync 20->16) and checkpoint (15) translate the
    # same upstream offset; the mapping wins by precedence and the checkpoint disagrees.
    [exact] = _latest(scenario, "exact")
    assert (exact["topic"], exact["downstream_offset"], exact["method"]) == (east_orders, 16, "mapping")
    assert exact["methods_disagree"] is True
    # U=25: no exact sync and no mapping of record 25 -> 20->16 plus one, by both methods.
    [between] = _latest(scenario, "between")
    assert (between["downstream_offset"], between["method"], between["methods_disagree"]) == (
        17,
        "mapping",
        False,
    )
    # The checkpoint (U=10) is older than the snapshot (U=35): the fresher translation wins, no disagreement.
    [stale] = _latest(scenario, "stale")
    assert (stale["upstream_offset"], stale["downstream_offset"], stale["method"]) == (35, 30, "mapping")
    assert stale["methods_disagree"] is False
    # No sync at or below the committed offset: no row at all, never a guess.
    assert _latest(scenario, "unsynced") == []
    [west] = _latest(scenario, "west")
    assert (west["source_cluster"], west["topic"], west["downstream_offset"]) == (
        "west",
        scenario.downstream("west", scenario.name("payments")),
        105,
    )
    assert all(row["valid_to"] is None for row in scenario.tables["latest_offsets"])


def test_a_target_without_tracing_headers_is_a_reason_not_a_translation(scenario: Scenario) -> None:
    lookups = [
        row
        for row in scenario.tables["k2k_tracing_lookups"]
        if row["consumer_group"] == scenario.name("exact")
    ]
    assert lookups, "every new snapshot of a routed source is looked up"
    for row in lookups:
        assert row["downstream_offset"] is None and row["reason"], row
    assert not [
        row for row in scenario.tables["translation_observations"] if row["method"] == "k2k_tracing_headers"
    ]
    assert scenario.tables["k2k_mapping_conflicts"] == []


def test_the_source_groups_commit_metadata_reaches_gold_unchanged(
    scenario: Scenario, kafka_clusters: ClustersUnderTest
) -> None:
    [streams] = _latest(scenario, "streams")
    assert (streams["method"], streams["downstream_offset"], streams["metadata"]) == (
        "checkpoint",
        104,
        STREAMS_METADATA,
    )
    # A translation from a snapshot carries what the source cluster returned for the group's commit.
    snapshot = {
        row["metadata"]
        for row in scenario.tables["silver_group_offsets"]
        if row["consumer_group"] == scenario.name("exact")
    }
    [exact] = _latest(scenario, "exact")
    assert exact["method"] == "mapping" and {exact["metadata"]} == snapshot
    if not kafka_clusters.is_tansu:  # Tansu reads commit metadata back empty
        assert snapshot == {"m1"}


def test_offset_history_has_one_row_per_distinct_offset_and_method(scenario: Scenario) -> None:
    [checkpoint] = _history(scenario, "stale", "checkpoint")
    [synced] = _history(scenario, "stale", "offset_sync")
    assert (checkpoint["downstream_offset"], checkpoint["valid_to"]) == (8, None)
    assert (synced["downstream_offset"], synced["valid_to"]) == (30, None)
    assert synced["valid_from"] == synced["source_timestamp"]


def test_every_table_and_column_has_a_comment(scenario: Scenario) -> None:
    for table in ALL_TABLES:
        name, rows = table.name, scenario.tables[f"describe:{table.name}"]
        comments = {row["col_name"]: row["comment"] for row in rows}
        for column in table.column_names:
            assert comments.get(column), f"{name}.{column} has no comment"
        table_comment = next(row["data_type"] for row in rows if row["col_name"] == "Comment")
        assert table_comment == table.comment, name


def test_every_sql_example_runs_against_the_populated_tables(scenario: Scenario) -> None:
    by_file = {
        name.removeprefix("sql:"): rows for name, rows in scenario.tables.items() if name.startswith("sql:")
    }
    assert len(by_file) >= 5
    quarantined = sum(row["records"] for row in by_file["quarantine_summary"])
    assert quarantined == len(scenario.tables["quarantine"])
    east = next(row for row in by_file["stale_checkpoints"] if row["source_cluster"] == "east")
    assert east["partitions_behind_committed_offset"] == 1  # the "stale" group
    lag = {(row["source_cluster"], row["topic"]): row for row in by_file["replication_lag"]}
    assert lag[("east", scenario.name("orders"))]["lag_records"] == 7
    assert lag[("east", scenario.name("unsynced"))]["reset_partitions"] == 1
    stuck = {(row["topic"], row["status"]) for row in by_file["stuck_replication"]}
    assert (scenario.name("unsynced"), "reset") in stuck
    loss = {row["consumer_group"]: row for row in by_file["failover_data_loss"]}
    assert (
        loss[scenario.name("west")]["consumed_not_replicated"],
        loss[scenario.name("west")]["unconsumed_lost"],
    ) == (1, 3)
    assert {row["topic"] for row in by_file["replication_lag_over_time"]} >= {scenario.name("orders")}


def test_replication_progress_and_failover_data_loss(scenario: Scenario) -> None:
    """east orders: Connect offset 37 (newer than every sync, max 35) -> next 38, head 45, lag 7.
    east unsynced: newest Connect record a tombstone -> reset, no lag figure. west payments: no
    Connect offset, newest sync 5 -> next 6, head 10, lag 4. The K2K topic was never replicated."""
    progress = {(r["source_cluster"], r["topic"]): r for r in scenario.tables["replication_progress"]}
    orders = progress[("east", scenario.name("orders"))]
    assert (orders["status"], orders["upstream_offset"], orders["position_method"]) == (
        "replicating",
        37,
        "connect_offset",
    )
    assert (orders["log_end_offset"], orders["lag_records"]) == (45, 7)
    assert orders["lag_seconds"] is not None and orders["last_progress_at"] is not None
    unsynced = progress[("east", scenario.name("unsynced"))]
    assert (unsynced["status"], unsynced["upstream_offset"], unsynced["lag_records"]) == ("reset", None, None)
    payments = progress[("west", scenario.name("payments"))]
    assert (payments["status"], payments["upstream_offset"], payments["position_method"]) == (
        "replicating",
        5,
        "offset_sync",
    )
    assert payments["lag_records"] == 4
    never = progress[("west", scenario.name("k2k-mappings"))]
    assert never["status"] == "never_replicated"
    assert never["lag_records"] == never["log_end_offset"] - never["log_start_offset"] > 0
    assert len(scenario.tables["replication_progress_history"]) == len(scenario.tables["source_log_offsets"])

    loss = {(r["consumer_group"], r["topic"]): r for r in scenario.tables["failover_data_loss"]}

    def figures(group: str, topic: str) -> tuple[int | None, int | None]:
        row = loss[(scenario.name(group), scenario.name(topic))]
        return row["consumed_not_replicated"], row["unconsumed_lost"]

    assert figures("exact", "orders") == (0, 7)  # committed 20 < replicated 38 < head 45
    assert figures("stale", "orders") == (0, 7)
    assert figures("unsynced", "unsynced") == (None, None)  # reset: unknown, not zero
    assert figures("west", "payments") == (1, 3)  # committed 7 > replicated 6, head 10
    assert loss[(scenario.name("exact"), scenario.name("orders"))]["target_topic"] == scenario.downstream(
        "east", scenario.name("orders")
    )


def test_every_dashboard_dataset_and_alert_query_runs_against_the_local_tables(scenario: Scenario) -> None:
    """A renamed column breaks CI, not the dashboard."""
    results = {
        name: rows for name, rows in scenario.tables.items() if name.startswith(("dashboard:", "alert:"))
    }
    assert set(results) == set(dashboard_queries())
    clusters = {row["source_cluster"] for row in results["dashboard:translation_age"]}
    assert clusters == {row["source_cluster"] for row in scenario.tables["latest_offsets"]}
    assert sum(row["records"] for row in results["dashboard:quarantine_by_reason"]) == len(
        scenario.tables["quarantine"]
    )
    (alert,) = results["alert:offsetlake_stale_translations"]
    # Age is computed when read (not stored by the refresh): from the oldest last observation to
    # the query, which ran after the update and before now.
    oldest_observation = min(_utc(row["last_observed_at"]) for row in scenario.tables["latest_offsets"])
    assert 1 <= alert["oldest_age_seconds"] <= (datetime.now(UTC) - oldest_observation).total_seconds() + 1


def test_a_rerun_without_new_records_changes_nothing(scenario: Scenario) -> None:
    _run(scenario.home, scenario.settings)
    after = all_tables(scenario.home)
    refresh_relative = {"last_observed_at"}
    for name, before in scenario.tables.items():
        if ":" in name:  # describe and example queries are not tables
            continue
        if name in {
            "bronze_group_offsets",
            "silver_group_offsets",
            "cluster_health",
            "source_log_offsets",
            "replication_progress_history",
            "k2k_tracing_lookups",
        }:
            # A new snapshot and a new health check each update; the offsets themselves did not move.
            assert len(after[name]) == 2 * len(before), name
            continue
        if name == "translation_observations":
            # The new snapshot is translated again (same offsets); no checkpoint is read twice.
            from_snapshots = [row for row in before if row["method"] != "checkpoint"]
            assert len(after[name]) == len(before) + len(from_snapshots), name
            continue
        ignored = {
            "latest_offsets": refresh_relative,
            "offset_versions": {"observed_at"},
            "latest_group_offsets": {"snapshot_time", "ingested_at"},
            "replication_progress": {"snapshot_time", "lag_seconds"},
            "failover_data_loss": {"committed_at", "progress_at"},
        }.get(name, set())
        assert _canonical(after[name], ignored) == _canonical(before, ignored), name
    scenario.tables = after


def test_an_incremental_run_reads_only_new_records_and_a_late_sync_shows_at_the_next_snapshot(
    scenario: Scenario,
) -> None:
    """Run 2: ``between`` commits 40, which only the sync 35->30 covers (31). Run 3: the sync 40->36
    arrives late. The snapshot already translated keeps its version (history is not rewritten);
    run 3's snapshot of the same commit is translated with the new sync, a new version from then."""
    orders, between = scenario.name("orders"), scenario.name("between")
    east_syncs = scenario.policy.offset_syncs_topic(TARGET_ALIAS)
    commit_offsets(scenario.source_bootstrap, between, {(orders, 0): 40})
    before = scenario.tables
    _run(scenario.home, scenario.settings)
    after = all_tables(scenario.home)
    assert len(after["bronze_offset_syncs"]) == len(before["bronze_offset_syncs"])
    assert len(after["bronze_checkpoints"]) == len(before["bronze_checkpoints"])
    assert len(after["quarantine"]) == len(before["quarantine"])
    assert _between(after, between) == [(17, 25), (31, 40)]

    produce(scenario.source_bootstrap, east_syncs, [_sync(orders, 40, 36)])
    _run(scenario.home, scenario.settings)
    late = all_tables(scenario.home)
    assert len(late["bronze_offset_syncs"]) == len(after["bronze_offset_syncs"]) + 1
    assert _between(late, between) == [(17, 25), (31, 40), (36, 40)]
    rows = _between_rows(late, between)
    assert [r["valid_to"] for r in rows] == [rows[1]["valid_from"], rows[2]["valid_from"], None]
    earlier = _between_rows(after, between)
    assert rows[2]["valid_from"] > earlier[1]["valid_from"], "from run 3's snapshot"
    assert [r["valid_from"] for r in rows[:2]] == [r["valid_from"] for r in earlier]
    # The mapping topic's newest mapping at or below 40 is 35->30: 31 by the +1 rule, safe but less
    # precise than the late sync's exact 36; precedence puts mapping first and flags the difference.
    [latest] = [r for r in late["latest_offsets"] if r["consumer_group"] == between]
    assert (latest["downstream_offset"], latest["upstream_offset"], latest["method"]) == (31, 40, "mapping")
    assert latest["methods_disagree"] is True


def _between_rows(tables: dict[str, list[dict[str, Any]]], group: str) -> list[dict[str, Any]]:
    rows = (
        r for r in tables["offset_history"] if r["consumer_group"] == group and r["method"] == "offset_sync"
    )
    return sorted(rows, key=lambda r: r["valid_from"])


def _between(tables: dict[str, list[dict[str, Any]]], group: str) -> list[tuple[int, int]]:
    return [(r["downstream_offset"], r["upstream_offset"]) for r in _between_rows(tables, group)]


def _utc(value: str) -> datetime:
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _canonical(rows: list[dict[str, Any]], ignored: set[str]) -> list[str]:
    return sorted(
        json.dumps({k: v for k, v in row.items() if k not in ignored}, sort_keys=True) for row in rows
    )


def test_a_flow_that_really_fails_makes_the_run_fail(scenario: Scenario) -> None:
    """Adding a source cluster without a full refresh changes the bronze streams' sources, so
    their checkpoints no longer fit and those flows fail at run time. The runner must report the
    failure even though exit 1 is also what a good run with a Python data source returns."""
    grown = replace(
        scenario.settings,
        sources=(*scenario.settings.sources, ClusterEndpoint("north", scenario.source_bootstrap)),
    )
    result = run_pipeline(
        grown, LocalHome.resolve(scenario.home), spark_conf={"spark.sql.pipelines.maxFlowRetryAttempts": "0"}
    )
    assert not result.succeeded
    assert result.exit_code != 0
    stopped = {o.name.rsplit(".", 1)[-1] for o in result.flows if o.state in {"FAILED", "SKIPPED"}}
    assert {"silver_group_offsets", "offset_history", "latest_offsets"} <= stopped, result.flows
    assert result.explanation.startswith(("flows failed", "flows skipped")), result.explanation
