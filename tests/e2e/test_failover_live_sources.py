"""A healthy failover reads the sources itself: no pipeline update, every partition placed.

With every cluster answering, ``offsetlake failover`` (``--refresh auto``) snapshots the selected
groups on the source and reads MM2's offset syncs beyond what the pipeline ingested, translates
with the pipeline's rule and plans from gold plus those translations (apply/live_read.py). A
private pair the MM2 simulator replicates, the first records of each partition filtered (the first
offset sync is past them), and the groups

- ``checked``: checkpointed by MM2;
- ``unchecked``: never checkpointed (outside MM2's group filter, say): only the offset syncs
  translate it;
- ``zero``: committed at 0, before the first sync: no method translates it;
- ``late`` (second test): a group that first commits after the pipeline's last update, so gold
  knows nothing of it.

Every committed offset on the target is judged against the simulator's ground truth: at or before
the first record the group had not processed.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from offsetlake_dev.local_cluster import ClusterPair
from offsetlake_dev.simulate import MirrorSimulator
from tests.e2e.replicated_pair import SOURCE_ALIAS, TARGET_ALIAS, private_pair
from tests.kafka_helpers import committed_offsets
from tests.process_helpers import offsetlake_cli

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

TOPIC = "orders"
PARTITIONS = 2
FILTERED_FIRST = 3
GROUPS = {"checked": {0: 12, 1: 9}, "unchecked": {0: 10, 1: 14}, "zero": {0: 0, 1: 0}}
CHECKPOINTED = ("checked", "zero")
COMMAND_TIMEOUT_S = 600


@dataclass
class Scenario:
    home: Path
    clusters: ClusterPair
    simulator: MirrorSimulator
    committed_on_source: dict[str, dict[int, int]]

    @property
    def remote_topic(self) -> str:
        return self.simulator.settings.remote_topic(TOPIC)

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return offsetlake_cli(self.home, *args, timeout_s=COMMAND_TIMEOUT_S)

    def flags(self) -> list[str]:
        return [
            "--target", self.clusters.target.bootstrap_servers,
            "--target-alias", TARGET_ALIAS,
            "--source", f"{SOURCE_ALIAS}={self.clusters.source.bootstrap_servers}",
            "--set", "offsetlake.cluster.timeout.ms=5000",
        ]  # fmt: skip

    def commit_on_source(self, group: str, offsets: dict[int, int]) -> None:
        self.simulator.commit_source_group(group, {(TOPIC, p): offset for p, offset in offsets.items()})
        self.committed_on_source[group] = offsets

    def assert_nothing_skipped(self, group: str) -> None:
        keys = [(self.remote_topic, p) for p in range(PARTITIONS)]
        found = committed_offsets(self.clusters.target.bootstrap_servers, group, keys)
        committed = {p: offset for (_, p), offset in found.items()}
        for partition, upstream in self.committed_on_source[group].items():
            owed = self.simulator.ground_truth.first_unprocessed(TOPIC, partition, upstream)
            assert owed is not None, (group, partition)
            assert 0 <= committed[partition] <= owed.target_offset, (group, partition, committed, owed)


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    if os.environ.get("OFFSETLAKE_TEST_SOURCE_BOOTSTRAP"):
        pytest.skip("a private local pair keeps the syncs topic to this scenario")
    root = tmp_path_factory.mktemp("live_sources")
    home = root / "home"
    home.mkdir()
    with private_pair(root) as (clusters, settings), MirrorSimulator(settings) as simulator:
        simulator.create_topic(TOPIC, PARTITIONS)
        simulator.produce(TOPIC, FILTERED_FIRST, filter_every=1)
        simulator.produce(TOPIC, 25, transaction_size=5)
        simulator.replicate()
        simulator.commit()
        scenario = Scenario(home, clusters, simulator, {})
        for group, offsets in GROUPS.items():
            scenario.commit_on_source(group, dict(offsets))
        simulator.emit_checkpoints(CHECKPOINTED)
        yield scenario


def test_a_failover_on_a_home_no_update_ran_on_reads_the_sources_and_places_every_partition(
    scenario: Scenario,
) -> None:
    run = scenario.cli("failover", *scenario.flags())
    report = run.stdout + run.stderr
    print(f"\nhealthy failover, no pipeline update ever:\n{run.stdout}")  # with -s: time by phase
    assert run.returncode == 0, report[-4000:]
    assert "refresh: skipped (every cluster answered" in report, report[-4000:]
    assert f"sources read now ({SOURCE_ALIAS}): 6 group-partition(s) committed, 4 translated" in report
    assert "known partitions: 2 partition(s) source groups committed have no translation: placed" in report
    assert "FAILOVER DONE" in report
    assert not (scenario.home / "pipeline" / "last-run.log").exists(), "no pipeline update ran"
    for group in GROUPS:
        scenario.assert_nothing_skipped(group)


def test_groups_that_moved_or_appeared_since_the_last_update_are_placed_from_the_sources(
    scenario: Scenario,
) -> None:
    update = scenario.cli("pipeline", "run", *scenario.flags())
    assert update.returncode == 0, update.stdout[-4000:]
    log = scenario.home / "pipeline" / "last-run.log"
    updated = log.stat().st_mtime_ns
    scenario.simulator.produce(TOPIC, 10, transaction_size=5)
    scenario.simulator.replicate()
    scenario.simulator.commit()  # new offset syncs, no checkpoint: MM2's emit interval has not come
    scenario.commit_on_source("checked", {0: 38, 1: 36})
    scenario.commit_on_source("late", {0: 30, 1: 33})

    run = scenario.cli("failover", *scenario.flags())
    report = run.stdout + run.stderr
    print(f"\nhealthy failover after an update:\n{run.stdout}")
    assert run.returncode == 0, report[-4000:]
    assert "8 group-partition(s) committed, 6 translated" in report, report[-4000:]
    assert "FAILOVER DONE" in report
    assert log.stat().st_mtime_ns == updated, "no pipeline update ran"
    for group in [*GROUPS, "late"]:
        scenario.assert_nothing_skipped(group)
    checked = committed_offsets(
        scenario.clusters.target.bootstrap_servers,
        "checked",
        [(scenario.remote_topic, p) for p in range(PARTITIONS)],
    )
    gold = {
        row["partition"]: row["downstream_offset"]
        for row in _rows(scenario.home, "latest_offsets")
        if row["consumer_group"] == "checked"
    }
    assert all(checked[(scenario.remote_topic, p)] > gold[p] for p in range(PARTITIONS)), (checked, gold)


def _rows(home: Path, table: str) -> list[dict[str, object]]:
    return pq.read_table(home / "warehouse" / "offsetlake.db" / table).to_pylist()
