"""Failover when the source cluster is gone: real brokers, real Spark, the real command line.

A private source/target pair (the source must be paused, so never the shared session brokers):
the MM2 simulator replicates one topic and writes offset syncs on the source and checkpoints on
the target for five groups; more records follow that MM2 has not replicated yet, MM2's stored
position on one partition is reset, and one group also consumes a topic MM2 never replicates.
The source broker is then paused with SIGSTOP, as a dead host looks to a client (Tansu keeps data
only in memory, so it is never restarted), and resumed with SIGCONT in a ``finally``. The tests
run in file order and share the scenario:

1. source dead before the first refresh: ``offsetlake failover`` runs no refresh (nothing it could
   add), reads the target's checkpoints itself and applies them (exactly MM2's downstream offsets);
2. source dead between two refreshes: gold keeps every earlier row and gains new checkpoints;
   MM2's replication progress equals the simulator's ground truth;
3. failover data loss per group-partition equals the simulator's ground truth; ``plan`` shows it;
4. source paused during an apply: apply needs only the target; with both clusters up,
   ``failover --refresh always`` refreshes only what latest_offsets is computed from;
5. a refresh interrupted with SIGTERM: gold is as it was, no process is left behind;
6. ``apply`` with nothing fresh to apply exits non-zero; ``plan`` does not.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from offsetlake.codecs.mm2 import Checkpoint, encode_checkpoint
from offsetlake.local.home import HOME_ENV
from offsetlake.mirror.progress import ReplicationStatus
from offsetlake_dev.local_cluster import ClusterPair, paused, start_clusters, stop_clusters
from offsetlake_dev.simulate import MirrorSettings, MirrorSimulator
from offsetlake_dev.simulate.data_loss_truth import ExpectedLoss, SourcePartition, expected_data_loss
from tests.kafka_helpers import committed_offsets, create_topic, log_end_offset, produce
from tests.process_helpers import offsetlake_cli

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

SOURCE_ALIAS = "primary"
TARGET_ALIAS = "dr"
TOPIC = "orders"
PARTITIONS = 2
GROUPS = tuple(f"app-{n}" for n in range(5))
REPLICATED_RECORDS = 20
"""Per partition, in transactions of 5 (a commit marker after each), all replicated and flushed."""
UNREPLICATED_RECORDS = 10
"""Per partition, produced afterwards: MM2 has not replicated them yet."""
NEVER_REPLICATED = "audit-log"
NEVER_REPLICATED_RECORDS = 3
CLUSTER_TIMEOUT_MS = 5000
COMMAND_TIMEOUT_S = 600


@dataclass
class Outage:
    home: Path
    clusters: ClusterPair
    simulator: MirrorSimulator
    checkpoints: dict[tuple[str, str, int], Checkpoint]
    stored: dict[int, int | None]
    """The simulator's ground truth per TOPIC partition: the Connect offset it stored (None: reset)."""
    replicated: dict[int, int | None]
    """... and the last upstream offset it replicated (flushed to Connect or not)."""
    expected_loss: dict[tuple[str, str, int], ExpectedLoss]
    """The simulator's ground truth per (group, topic, partition) for gold failover_data_loss."""

    @property
    def target(self) -> str:
        return self.clusters.target.bootstrap_servers

    @property
    def source(self) -> str:
        return self.clusters.source.bootstrap_servers

    @property
    def remote_topic(self) -> str:
        return self.simulator.settings.remote_topic(TOPIC)

    def cluster_flags(self) -> list[str]:
        return [
            "--target",
            self.target,
            "--target-alias",
            TARGET_ALIAS,
            "--source",
            f"{SOURCE_ALIAS}={self.source}",
            "--set",
            f"offsetlake.cluster.timeout.ms={CLUSTER_TIMEOUT_MS}",
        ]

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return offsetlake_cli(self.home, *args, timeout_s=COMMAND_TIMEOUT_S)

    def committed(self, group: str) -> dict[int, int]:
        keys = [(self.remote_topic, p) for p in range(PARTITIONS)]
        return {p: offset for (_, p), offset in committed_offsets(self.target, group, keys).items()}

    def rows(self, table: str) -> list[dict[str, Any]]:
        path = self.home / "warehouse" / "offsetlake.db" / table
        return pq.read_table(path).to_pylist() if path.exists() else []

    def rows_with_pending_audit(self) -> list[dict[str, Any]]:
        """apply_audit's rows, with those a JVM-free run left for the next Spark session to fold in."""
        pending = sorted((self.home / "audit-pending").rglob("*.parquet"))
        return self.rows("apply_audit") + [row for path in pending for row in pq.read_table(path).to_pylist()]

    def source_paused(self) -> contextlib.AbstractContextManager[None]:
        return paused(self.clusters.source)


@pytest.fixture(scope="module")
def outage(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outage]:
    if os.environ.get("OFFSETLAKE_TEST_SOURCE_BOOTSTRAP"):
        pytest.skip("pausing the source needs the local broker's process; a real pair cannot be paused here")
    home = tmp_path_factory.mktemp("failover")
    clusters = start_clusters(home, preferred_ports=None)
    try:
        settings = MirrorSettings(
            source_alias=SOURCE_ALIAS,
            target_alias=TARGET_ALIAS,
            source_bootstrap=clusters.source.bootstrap_servers,
            target_bootstrap=clusters.target.bootstrap_servers,
        )
        with MirrorSimulator(settings) as simulator:
            simulator.create_topic(TOPIC, PARTITIONS, preexisting_target_records=3)
            simulator.produce(TOPIC, REPLICATED_RECORDS, transaction_size=5)
            simulator.replicate()
            simulator.commit()
            simulator.produce(TOPIC, UNREPLICATED_RECORDS)
            # A source topic MM2 never replicated (not in its topic filter, say): never_replicated.
            create_topic(clusters.source.bootstrap_servers, NEVER_REPLICATED)
            produce(
                clusters.source.bootstrap_servers, NEVER_REPLICATED, [(None, b"x")] * NEVER_REPLICATED_RECORDS
            )
            # Some groups are behind MM2, some ahead of it; the first also consumes the unreplicated topic.
            committed = {
                group: {(TOPIC, p): 5 + 7 * index + p for p in range(PARTITIONS)}
                for index, group in enumerate(GROUPS)
            }
            committed[GROUPS[0]][(NEVER_REPLICATED, 0)] = NEVER_REPLICATED_RECORDS - 1
            for group, offsets in committed.items():
                simulator.commit_source_group(group, offsets)
            emitted = simulator.emit_checkpoints(GROUPS)
            simulator.reset_connect_offset(TOPIC, 1)  # an operator reset: no lag figure, not zero lag
            stored = {p: simulator.stored_offset(TOPIC, p) for p in range(PARTITIONS)}
            replicated = {p: simulator.replicated_through(TOPIC, p) for p in range(PARTITIONS)}
            partitions = {(TOPIC, p): _mirrored(simulator, p) for p in range(PARTITIONS)}
        partitions[(NEVER_REPLICATED, 0)] = SourcePartition(
            0, NEVER_REPLICATED_RECORDS, ReplicationStatus.NEVER_REPLICATED
        )
        checkpoints = {(c.group, c.topic, c.partition): c for c in emitted}
        assert len(checkpoints) == len(GROUPS) * PARTITIONS
        expected_loss = expected_data_loss(partitions, committed)
        yield Outage(home, clusters, simulator, checkpoints, stored, replicated, expected_loss)
    finally:
        stop_clusters(home)


def _mirrored(simulator: MirrorSimulator, partition: int) -> SourcePartition:
    """A TOPIC partition as the simulator left it: the topic is fresh (log start 0), and everything
    replicated was flushed to Connect, so MM2's records prove exactly the stored offset (no sync is
    beyond what was replicated); a reset leaves the position unknown."""
    stored = simulator.stored_offset(TOPIC, partition)
    log_end = simulator.source_log_end(TOPIC, partition)
    if stored is None:
        return SourcePartition(0, log_end, ReplicationStatus.RESET)
    assert stored == simulator.replicated_through(TOPIC, partition)
    return SourcePartition(0, log_end, ReplicationStatus.REPLICATING, stored + 1)


def test_source_dead_before_the_first_refresh_fails_over_from_target_checkpoints(outage: Outage) -> None:
    """No refresh can add anything the target's checkpoints do not say, so none runs: the failover
    reads the checkpoint records gold has not ingested (all of them here) from the target itself."""
    with outage.source_paused():
        run = outage.cli("failover", *outage.cluster_flags(), "--probe-timeout", "5")
    report = run.stdout + run.stderr
    assert run.returncode == 0, report[-4000:]
    assert "refresh: skipped (source primary did not answer" in report
    assert f"cluster {SOURCE_ALIAS} (source): NOT ANSWERING now" in report
    assert f"cluster {TARGET_ALIAS} (target): reachable now" in report
    assert f"{len(outage.checkpoints)} group-partition(s) newer than gold" in report
    assert "FAILOVER DONE" in report
    # Where the time went, every phase of this failover in order; no refresh ran.
    assert re.search(
        r"^time by phase: probe \d+\.\ds, refresh -, gold \d+\.\ds, tail \d+\.\ds, target \d+\.\ds, "
        r"plan \d+\.\ds, apply\+verify \d+\.\ds, audit \d+\.\ds; total \d+\.\ds$",
        run.stdout,
        re.MULTILINE,
    ), run.stdout
    # The dead source's probe ran beside the apply's reads and plan (issue 50), and the report says so.
    assert re.search(
        r"^probe: \d+\.\ds in all, beside the apply's reads and plan; \d+\.\ds of it waited for alone",
        run.stdout,
        re.MULTILINE,
    ), run.stdout

    # the target groups are where MM2 says; gold has not seen the checkpoints yet (no update ran)
    for group in GROUPS:
        assert outage.committed(group) == {
            p: outage.checkpoints[(group, outage.remote_topic, p)].downstream_offset
            for p in range(PARTITIONS)
        }, group
    assert outage.rows("latest_offsets") == []
    rows = outage.rows_with_pending_audit()
    audited = [r for r in rows if r["stage"] == "result"]
    assert len(audited) == len(outage.checkpoints)
    assert all("from a checkpoint newer than gold" in r["reason"] for r in audited)
    # The audit is where the report says: `offsetlake sql` reads every one of those rows there.
    assert "audit: `offsetlake`.`apply_audit`" in report
    columns = ["run_id", "stage", "consumer_group", "partition"]
    queried = outage.cli("sql", "--json", f"SELECT {', '.join(columns)} FROM offsetlake.apply_audit")
    assert queried.returncode == 0, queried.stderr[-4000:]
    in_table = sorted(tuple(row) for row in json.loads(queried.stdout)[0]["rows"])
    assert in_table == sorted(tuple(r[column] for column in columns) for r in rows)


def test_source_dead_between_refreshes_keeps_gold_and_adds_new_checkpoints(outage: Outage) -> None:
    both_up = outage.cli("pipeline", "run", *outage.cluster_flags())
    assert both_up.returncode == 0, both_up.stdout[-4000:]
    before_latest = {_key(r): r for r in outage.rows("latest_offsets")}
    before_history = outage.rows("offset_history")
    before_progress = outage.rows("replication_progress")
    assert {r["method"] for r in before_history} == {"checkpoint", "offset_sync"}

    group, partition = GROUPS[0], 0
    old = outage.checkpoints[(group, outage.remote_topic, partition)]
    newer = Checkpoint(group, old.topic, partition, old.upstream_offset + 4, old.downstream_offset + 4, "")
    with outage.source_paused():
        _write_checkpoint(outage, newer)
        dead = outage.cli("pipeline", "run", *outage.cluster_flags())
    # The dead source's wait is bounded (cluster.timeout.ms): the update completes, and records it.
    assert dead.returncode == 0, dead.stdout[-4000:]

    after_latest = {_key(r): r for r in outage.rows("latest_offsets")}
    after_history = outage.rows("offset_history")
    assert set(before_latest) <= set(after_latest)
    assert len(after_history) > len(before_history)
    assert {_history_key(r) for r in before_history} <= {_history_key(r) for r in after_history}
    newest = after_latest[(SOURCE_ALIAS, group, outage.remote_topic, partition)]
    assert (newest["upstream_offset"], newest["downstream_offset"]) == (
        newer.upstream_offset,
        newer.downstream_offset,
    )
    latest_check = max(
        (r for r in outage.rows("cluster_health") if r["cluster"] == SOURCE_ALIAS),
        key=lambda r: r["checked_at"],
    )
    assert latest_check["reachable"] is False
    assert latest_check["error"]
    outage.checkpoints[(group, outage.remote_topic, partition)] = newer

    # MM2's replication progress from the refresh with both clusters up, against the simulator's
    # ground truth: the position it stored, the reset, and the topic it never replicated.
    progress = {
        (r["topic"], r["partition"]): r for r in before_progress if r["source_cluster"] == SOURCE_ALIAS
    }
    assert (TOPIC, 0) in progress, both_up.stdout[-3000:]
    ok = progress[(TOPIC, 0)]
    assert ok["status"] == "replicating"
    stored, replicated = outage.stored[0], outage.replicated[0]
    assert stored is not None and replicated is not None
    # The stored Connect offset, or a fresher offset sync; never beyond what was replicated.
    assert stored <= ok["upstream_offset"] <= replicated
    assert ok["log_end_offset"] == log_end_offset(outage.source, TOPIC, 0)
    assert ok["lag_records"] == ok["log_end_offset"] - (ok["upstream_offset"] + 1)
    assert outage.stored[1] is None
    assert (progress[(TOPIC, 1)]["status"], progress[(TOPIC, 1)]["lag_records"]) == ("reset", None)
    never = progress[(NEVER_REPLICATED, 0)]
    assert (never["status"], never["upstream_offset"], never["lag_records"]) == (
        "never_replicated",
        None,
        NEVER_REPLICATED_RECORDS,
    )


def test_failover_data_loss_equals_the_simulators_ground_truth(outage: Outage) -> None:
    """Every group-partition's data-loss figures in gold (kept by the refresh with the source dead)
    are the simulator's: behind MM2 or ahead of it on orders[0], unknown (not 0) on the reset
    orders[1], every record missing on the never-replicated topic. ``plan`` shows the per-group sums."""
    expected = outage.expected_loss
    # The scenario covers each case.
    assert {loss.status for loss in expected.values()} == set(ReplicationStatus)
    assert any(loss.consumed_not_replicated for loss in expected.values())
    assert any(loss.unconsumed_lost for loss in expected.values())
    gold = {
        (r["consumer_group"], r["topic"], r["partition"]): (
            r["status"],
            r["replicated_through"],
            r["consumed_not_replicated"],
            r["unconsumed_lost"],
        )
        for r in outage.rows("failover_data_loss")
        if r["source_cluster"] == SOURCE_ALIAS
    }
    assert gold == {
        key: (loss.status.value, loss.replicated_through, loss.consumed_not_replicated, loss.unconsumed_lost)
        for key, loss in expected.items()
    }

    plan = outage.cli("plan", "--target", outage.target)
    assert plan.returncode == 0, plan.stdout[-3000:] + plan.stderr[-3000:]
    shown = _data_loss_rows(plan.stdout)
    for group in GROUPS:
        losses = [loss for (g, _, _), loss in expected.items() if g == group]
        unknown = sum(loss.status is ReplicationStatus.RESET for loss in losses)
        # source, partitions, consumed not on target, unconsumed lost, position unknown (then: as of)
        assert shown[group][:5] == [
            SOURCE_ALIAS,
            str(len(losses)),
            str(sum(loss.consumed_not_replicated or 0 for loss in losses)),
            str(sum(loss.unconsumed_lost or 0 for loss in losses)),
            str(unknown) if unknown else "-",
        ], plan.stdout


def test_apply_needs_only_the_target(outage: Outage) -> None:
    group = GROUPS[0]
    with outage.source_paused():
        held = outage.cli("apply", "--target", outage.target)
        # The groups the first test's failover placed stay failed over until an operator says so.
        assert held.returncode == 4, held.stdout[-3000:] + held.stderr[-3000:]
        assert f"{GROUPS[0]} {outage.remote_topic}[0] (skip_failed_over)" in held.stderr
        run = outage.cli("apply", "--target", outage.target, "--resume-sync")
    _placed_but_the_never_replicated_topic(run)
    assert f"cluster {SOURCE_ALIAS} (source): UNREACHABLE" in run.stdout
    assert outage.committed(group)[0] == outage.checkpoints[(group, outage.remote_topic, 0)].downstream_offset


def test_a_failover_refreshing_with_every_cluster_up_refreshes_only_what_latest_offsets_is_computed_from(
    outage: Outage,
) -> None:
    group, partition = GROUPS[1], 1
    old = outage.checkpoints[(group, outage.remote_topic, partition)]
    newer = Checkpoint(group, old.topic, partition, old.upstream_offset + 2, old.downstream_offset + 2, "")
    _write_checkpoint(outage, newer)
    untouched = {
        table: len(outage.rows(table)) for table in ("replication_progress_history", "source_log_offsets")
    }
    run = outage.cli("failover", *outage.cluster_flags(), "--refresh", "always")
    report = run.stdout + run.stderr
    # The checkpoint test 2 wrote says app-0 was at upstream +4, the live source's snapshot says it
    # is where it was: the snapshot's translation was first seen before that checkpoint, so it is
    # older than what the resumed sync applied, and refused out loud rather than moved back.
    _placed_but_the_never_replicated_topic(run, f"{GROUPS[0]} {outage.remote_topic}[0] (skip_stale)")
    assert "older than the one already applied" in report, report[-4000:]
    assert "refresh: completed" in report, report[-4000:]
    assert "0 group-partition(s) newer than gold" in report, report[-4000:]  # the refresh ingested it
    ingested = {
        (r["consumer_group"], r["partition"], r["downstream_offset"])
        for r in outage.rows("silver_checkpoints")
    }
    assert (group, partition, newer.downstream_offset) in ingested
    assert {table: len(outage.rows(table)) for table in untouched} == untouched  # not in the selection
    # (the live source's group snapshot makes the offset sync the freshest translation here)
    latest = {_key(r): r["downstream_offset"] for r in outage.rows("latest_offsets")}
    assert outage.committed(group)[partition] == latest[(SOURCE_ALIAS, group, outage.remote_topic, partition)]


def test_a_refresh_interrupted_by_sigterm_leaves_gold_as_it_was(outage: Outage) -> None:
    before = sorted(map(_key, outage.rows("latest_offsets")))
    history = len(outage.rows("offset_history"))
    assert before
    process = subprocess.Popen(
        [sys.executable, "-m", "offsetlake.cli", "pipeline", "run", *outage.cluster_flags()],
        env={**os.environ, HOME_ENV: str(outage.home)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    lines = []
    for line in process.stdout:  # until the gold flows are being rewritten
        lines.append(line)
        if "latest_offsets" in line and "RUNNING" in line:
            break
    process.send_signal(signal.SIGTERM)
    output, _ = process.communicate(timeout=120)
    assert process.returncode == 128 + signal.SIGTERM, "".join(lines) + output
    assert "interrupted by SIGTERM" in output
    assert _processes_using(outage.home) == []
    assert sorted(map(_key, outage.rows("latest_offsets"))) == before
    assert len(outage.rows("offset_history")) == history


def test_apply_with_nothing_fresh_enough_fails_and_says_why(outage: Outage) -> None:
    time.sleep(2)
    stale = outage.cli("apply", "--target", outage.target, "--max-age", "1s")
    assert stale.returncode == 1, stale.stdout[-3000:] + stale.stderr[-3000:]
    assert "every selected translation is older than --max-age" in stale.stderr
    dry = outage.cli("plan", "--target", outage.target, "--max-age", "1s")
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert "skip_stale" in dry.stdout
    nothing_selected = outage.cli("apply", "--target", outage.target, "--groups", "no-such-group")
    assert nothing_selected.returncode == 0
    assert "no gold offsets match the selection" in nothing_selected.stdout


def test_apply_on_an_empty_gold_fails_and_says_why(outage: Outage, tmp_path: Path) -> None:
    empty = subprocess.run(
        [sys.executable, "-m", "offsetlake.cli", "apply", "--target", outage.target],
        env={**os.environ, HOME_ENV: str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
        check=False,
    )
    assert empty.returncode == 1, empty.stdout + empty.stderr
    assert "no translation in gold" in empty.stderr


def _placed_but_the_never_replicated_topic(run: subprocess.CompletedProcess[str], *also: str) -> None:
    """Every partition placed but the one a group committed on the topic MM2 never replicated (its
    snapshot says so since the first refresh), and ``also`` (``<group> <topic>[<p>] (<action>)``):
    no topic to place it on, so the run says INCOMPLETE and lists them, in plan order."""
    report = run.stdout + run.stderr
    assert run.returncode == 4, report[-4000:]
    missing = f"{SOURCE_ALIAS}.{NEVER_REPLICATED}"
    listed = ", ".join([f"{GROUPS[0]} {missing}[0] (skip_missing_topic)", *also])
    assert f"INCOMPLETE: {1 + len(also)} partitions not placed: {listed} (run " in report, report[-4000:]
    assert f"topic {missing} does not exist on the target" in report


def _data_loss_rows(stdout: str) -> dict[str, list[str]]:
    """The data-loss table ``plan`` prints: group -> the other columns (no value holds a space)."""
    title = "data loss if failing over now"
    assert title in stdout, stdout
    rows = [line.split() for line in stdout[stdout.index(title) :].splitlines()[3:]]
    return {row[0]: row[1:] for row in rows if row and row[0] in GROUPS}


def _write_checkpoint(outage: Outage, checkpoint: Checkpoint) -> None:
    key, value = encode_checkpoint(checkpoint)
    now_ms = int(datetime.now(UTC).timestamp() * 1000)
    produce(outage.target, outage.simulator.settings.checkpoints_topic, [(key, value, now_ms)])


def _key(row: dict[str, Any]) -> tuple[str, str, str, int]:
    return (row["source_cluster"], row["consumer_group"], row["topic"], row["partition"])


def _history_key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (*_key(row), row["method"], row["downstream_offset"], row["valid_from"])


def _processes_using(home: Path) -> list[str]:
    """Command lines of live processes that mention ``home`` (the pipeline's spec lives there)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = next(
                line for line in (proc / "status").read_text().splitlines() if line.startswith("State:")
            )
        except (OSError, StopIteration):
            continue
        if str(home) in cmdline and "zombie" not in state:
            found.append(cmdline)
    return found
