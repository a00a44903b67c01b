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
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from offsetlake_dev.simulate import MirrorSimulator
from tests.e2e.replicated_pair import (
    PARTITIONS,
    SOURCE_ALIAS,
    TOPIC,
    SimulatedPair,
    private_pair,
    replicate_past_a_filtered_start,
)

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

GROUPS = {"checked": {0: 12, 1: 9}, "unchecked": {0: 10, 1: 14}, "zero": {0: 0, 1: 0}}
CHECKPOINTED = ("checked", "zero")


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimulatedPair]:
    if os.environ.get("OFFSETLAKE_TEST_SOURCE_BOOTSTRAP"):
        pytest.skip("a private local pair keeps the syncs topic to this scenario")
    root = tmp_path_factory.mktemp("live_sources")
    home = root / "home"
    home.mkdir()
    with private_pair(root) as (clusters, settings), MirrorSimulator(settings) as simulator:
        replicate_past_a_filtered_start(simulator)
        scenario = SimulatedPair(home, clusters, simulator, {})
        for group, offsets in GROUPS.items():
            scenario.commit_on_source(group, dict(offsets))
        simulator.emit_checkpoints(CHECKPOINTED)
        yield scenario


def test_a_failover_on_a_home_no_update_ran_on_reads_the_sources_and_places_every_partition(
    scenario: SimulatedPair,
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
    scenario: SimulatedPair,
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
    checked = scenario.on_target("checked")
    gold = {
        row["partition"]: row["downstream_offset"]
        for row in _rows(scenario.home, "latest_offsets")
        if row["consumer_group"] == "checked"
    }
    assert all(checked[p] > gold[p] for p in range(PARTITIONS)), (checked, gold)


def _rows(home: Path, table: str) -> list[dict[str, object]]:
    return pq.read_table(home / "warehouse" / "offsetlake.db" / table).to_pylist()
