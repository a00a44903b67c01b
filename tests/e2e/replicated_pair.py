"""A private local pair the MM2 simulator has replicated to: three groups checkpointed on two
partitions, for the failover scenarios that need a home of their own (beside the sync loop, on a
fresh home)."""

from __future__ import annotations

import os
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

SOURCE_ALIAS = "primary"
TARGET_ALIAS = "dr"
TOPIC = "orders"
PARTITIONS = 2
GROUPS = ("app-0", "app-1", "app-2")


@dataclass
class Pair:
    home: Path
    clusters: ClusterPair
    remote_topic: str

    def flags(self) -> list[str]:
        """The pair named on the command line, as an operator would."""
        return [
            "--target", self.clusters.target.bootstrap_servers,
            "--target-alias", TARGET_ALIAS,
            "--source", f"{SOURCE_ALIAS}={self.clusters.source.bootstrap_servers}",
            "--set", "offsetlake.cluster.timeout.ms=5000",
        ]  # fmt: skip

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
