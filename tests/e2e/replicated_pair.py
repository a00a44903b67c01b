"""A private local pair the MM2 simulator has replicated to: three groups checkpointed on two
partitions, for the failover scenarios that need a home of their own (beside the sync loop, on a
fresh home); and :class:`SimulatedPair`, a pair whose simulator stays open, every committed offset
on the target judged against its ground truth (the promise's scenarios)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from offsetlake.local.home import HOME_ENV
from offsetlake_dev.local_cluster import ClusterPair, start_clusters, stop_clusters
from offsetlake_dev.simulate import MirrorSettings, MirrorSimulator
from tests.kafka_helpers import committed_offsets
from tests.process_helpers import offsetlake_cli

SOURCE_ALIAS = "primary"
TARGET_ALIAS = "dr"
TOPIC = "orders"
PARTITIONS = 2
GROUPS = ("app-0", "app-1", "app-2")
COMMAND_TIMEOUT_S = 600


def pair_flags(clusters: ClusterPair) -> list[str]:
    """The pair named on the command line, as an operator would."""
    return [
        "--target", clusters.target.bootstrap_servers,
        "--target-alias", TARGET_ALIAS,
        "--source", f"{SOURCE_ALIAS}={clusters.source.bootstrap_servers}",
        "--set", "offsetlake.cluster.timeout.ms=5000",
    ]  # fmt: skip


@dataclass
class Pair:
    home: Path
    clusters: ClusterPair
    remote_topic: str

    def flags(self) -> list[str]:
        return pair_flags(self.clusters)

    def env(self) -> dict[str, str]:
        return {**os.environ, HOME_ENV: str(self.home)}

    def rows(self, table: str) -> list[dict[str, Any]]:
        path = self.home / "warehouse" / "offsetlake.db" / table
        return pq.read_table(path).to_pylist() if path.exists() else []

    def committed(self, group: str) -> dict[int, int]:
        """The group's committed offsets on the target, by partition of the replicated topic."""
        keys = [(self.remote_topic, p) for p in range(PARTITIONS)]
        found = committed_offsets(self.clusters.target.bootstrap_servers, group, keys)
        return {p: offset for (_, p), offset in found.items()}


@dataclass
class SimulatedPair:
    """A private pair, its home and its MM2 simulator, with what each group committed on the source
    (``TOPIC``'s partitions): the promise judged against the simulator's ground truth."""

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
        return pair_flags(self.clusters)

    def commit_on_source(self, group: str, offsets: dict[int, int]) -> None:
        self.simulator.commit_source_group(group, {(TOPIC, p): offset for p, offset in offsets.items()})
        self.committed_on_source[group] = offsets

    def on_target(self, group: str) -> dict[int, int]:
        keys = [(self.remote_topic, p) for p in range(PARTITIONS)]
        found = committed_offsets(self.clusters.target.bootstrap_servers, group, keys)
        return {p: offset for (_, p), offset in found.items()}

    def assert_nothing_skipped(self, group: str) -> dict[int, int]:
        """Every partition the group committed on the source is committed on the target at or before
        the target offset of the first record it had not processed; the re-reads per partition."""
        committed = self.on_target(group)
        assert set(committed) == set(self.committed_on_source[group]), (group, committed)
        rereads = {}
        for partition, upstream in self.committed_on_source[group].items():
            owed = self.simulator.ground_truth.first_unprocessed(TOPIC, partition, upstream)
            assert owed is not None, (group, partition)
            assert 0 <= committed[partition] <= owed.target_offset, (group, partition, committed, owed)
            rereads[partition] = owed.target_offset - committed[partition]
        return rereads


FILTERED_FIRST = 3
"""Records at the start of each partition a filtering SMT drops: never on the target."""


def replicate_past_a_filtered_start(simulator: MirrorSimulator) -> None:
    """``TOPIC`` on the source: ``FILTERED_FIRST`` records a filter drops, then 25 in transactions
    of 5 (commit markers between them), replicated and flushed, so the first offset sync is past
    the filtered records."""
    simulator.create_topic(TOPIC, PARTITIONS)
    simulator.produce(TOPIC, FILTERED_FIRST, filter_every=1)
    simulator.produce(TOPIC, 25, transaction_size=5)
    simulator.replicate()
    simulator.commit()


@contextmanager
def private_pair(root: Path) -> Iterator[tuple[ClusterPair, MirrorSettings]]:
    """A local pair of its own under ``root`` and the simulator's settings for ``primary`` -> ``dr``
    on it; the clusters are stopped afterwards."""
    clusters = start_clusters(root / "clusters", preferred_ports=None)
    try:
        yield (
            clusters,
            MirrorSettings(
                source_alias=SOURCE_ALIAS,
                target_alias=TARGET_ALIAS,
                source_bootstrap=clusters.source.bootstrap_servers,
                target_bootstrap=clusters.target.bootstrap_servers,
            ),
        )
    finally:
        stop_clusters(root / "clusters")


@contextmanager
def replicated_pair(root: Path) -> Iterator[Pair]:
    """Clusters under ``root``, replicated and checkpointed, and an empty home; stopped afterwards."""
    with private_pair(root) as (clusters, settings):
        with MirrorSimulator(settings) as simulator:
            simulator.create_topic(TOPIC, PARTITIONS)
            simulator.produce(TOPIC, 20, transaction_size=5)
            simulator.replicate()
            simulator.commit()
            for index, group in enumerate(GROUPS):
                offsets = {(TOPIC, p): 5 + 3 * index + p for p in range(PARTITIONS)}
                simulator.commit_source_group(group, offsets)
            simulator.emit_checkpoints(GROUPS)
            remote_topic = simulator.settings.remote_topic(TOPIC)
        home = root / "home"
        home.mkdir()
        yield Pair(home, clusters, remote_topic)
