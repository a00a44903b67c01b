"""The promise, end to end: every partition a group committed lands at or before its first
unprocessed record, or the failover says it did not (a non-zero exit, the partitions listed).

A private pair (the source is paused with SIGSTOP for the outage) that the MM2 simulator
replicates: the first records of each partition are dropped by a filter, so the first offset sync
is past them, and the groups are

- ``zero``: committed at 0, before the first sync: no method translates it, and MM2 emits no
  checkpoint for it;
- ``mid``: checkpointed by MM2;
- ``unchecked``: never checkpointed by MM2 (the pipeline translates its snapshot with the offset syncs);
- ``rewound``: checkpointed, then reset on the source to a lower offset, which MM2 checkpoints again.

One pipeline update reads both clusters; every failover after it runs with the source down. The
tests run in file order and share the scenario: placed, then the source's rewind, then an
undecodable checkpoint record that refuses its source until the operator accepts gold as it is.
Every committed offset on the target is judged against the simulator's ground truth.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest

from offsetlake_dev.local_cluster import paused
from offsetlake_dev.simulate import MirrorSimulator
from tests.e2e.replicated_pair import (
    PARTITIONS,
    SOURCE_ALIAS,
    TOPIC,
    SimulatedPair,
    private_pair,
    replicate_past_a_filtered_start,
)
from tests.kafka_helpers import produce

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

GROUPS = {
    "zero": {0: 0, 1: 0},
    "mid": {0: 12, 1: 9},
    "unchecked": {0: 10, 1: 14},
    "rewound": {0: 18, 1: 20},
}
CHECKPOINTED = ("zero", "mid", "rewound")
"""The groups MM2's checkpoint task reads (``unchecked`` is outside its group filter, say)."""


class Scenario(SimulatedPair):
    def failover_with_source_down(self, *extra: str) -> subprocess.CompletedProcess[str]:
        with paused(self.clusters.source):
            return self.cli("failover", *self.flags(), "--probe-timeout", "3", *extra)


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    if os.environ.get("OFFSETLAKE_TEST_SOURCE_BOOTSTRAP"):
        pytest.skip("pausing the source needs the local broker's process; a real pair cannot be paused here")
    root = tmp_path_factory.mktemp("promise")
    home = root / "home"
    home.mkdir()
    with private_pair(root) as (clusters, settings), MirrorSimulator(settings) as simulator:
        replicate_past_a_filtered_start(simulator)
        for group, offsets in GROUPS.items():
            simulator.commit_source_group(group, {(TOPIC, p): offset for p, offset in offsets.items()})
        emitted = simulator.emit_checkpoints(CHECKPOINTED)
        assert {c.group for c in emitted} == {"mid", "rewound"}, "no checkpoint before the first sync"
        yield Scenario(home, clusters, simulator, {group: dict(offsets) for group, offsets in GROUPS.items()})


def test_every_committed_partition_is_placed_with_the_source_down(scenario: Scenario) -> None:
    update = scenario.cli("pipeline", "run", *scenario.flags())
    assert update.returncode == 0, update.stdout[-4000:]

    refused = scenario.failover_with_source_down("--untranslated", "refuse")
    report = refused.stdout + refused.stderr
    assert refused.returncode == 4, report[-4000:]
    assert "INCOMPLETE: 2 partitions not placed: zero primary.orders[0] (skip_untranslated)" in report
    assert "FAILOVER INCOMPLETE: 2 partitions not placed" in refused.stdout
    assert all(offset < 0 for offset in scenario.on_target("zero").values()), "no commit there"

    placed = scenario.failover_with_source_down()
    report = placed.stdout + placed.stderr
    assert placed.returncode == 0, report[-4000:]
    assert "FAILOVER DONE" in report
    assert "known partitions: 2 partition(s) source groups committed have no translation: placed" in report
    for group in GROUPS:
        scenario.assert_nothing_skipped(group)
    # Offset 0 before filtered records: the log start is the first record it owes, exactly.
    assert scenario.assert_nothing_skipped("zero") == {0: 0, 1: 0}


def test_a_source_reset_after_the_failover_moves_the_group_back(scenario: Scenario) -> None:
    lower = {0: 6, 1: 7}
    scenario.simulator.commit_source_group("rewound", {(TOPIC, p): offset for p, offset in lower.items()})
    (*_, newest) = scenario.simulator.emit_checkpoints(["rewound"])
    scenario.committed_on_source["rewound"] = lower
    before = scenario.on_target("rewound")

    moved = scenario.failover_with_source_down()
    report = moved.stdout + moved.stderr
    assert moved.returncode == 0, report[-4000:]
    after = scenario.on_target("rewound")
    assert all(after[p] < before[p] for p in range(PARTITIONS)), (before, after)
    assert after[newest.partition] == newest.downstream_offset
    scenario.assert_nothing_skipped("rewound")


def test_an_undecodable_checkpoint_refuses_its_source_until_gold_is_accepted(scenario: Scenario) -> None:
    checkpoints = scenario.simulator.settings.checkpoints_topic
    produce(scenario.clusters.target.bootstrap_servers, checkpoints, [(b"\x00\x01", b"not a checkpoint")])
    before = {group: scenario.on_target(group) for group in GROUPS}

    refused = scenario.failover_with_source_down()
    report = refused.stdout + refused.stderr
    assert refused.returncode == 4, report[-4000:]
    assert f"checkpoint tail: {SOURCE_ALIAS}: checkpoint record {checkpoints}-0@" in report
    assert "(skip_tail_unread)" in report
    assert {group: scenario.on_target(group) for group in GROUPS} == before

    accepted = scenario.failover_with_source_down("--accept-gold-without-tail")
    assert accepted.returncode == 0, (accepted.stdout + accepted.stderr)[-4000:]
    for group in GROUPS:
        scenario.assert_nothing_skipped(group)
