"""Refresh time with one dead source cluster against a refresh with every cluster up, same data.

Starts a private source/target pair in a temporary home, replicates with the MM2 simulator
(offset syncs on the source, checkpoints on the target, ``--groups`` consumer groups), runs one
warm-up refresh, then alternates refreshes with both clusters up and with the source paused
(SIGSTOP, as a dead host looks to a client; SIGCONT afterwards: Tansu keeps data only in memory).
Each refresh is ``offsetlake pipeline run`` end to end, Spark start-up included.

Prints per refresh: seconds, whether it succeeded, gold row counts; then the medians and the
ratio dead/up. Goal (issue "failover when the source cluster is gone"): a refresh with a dead
source at most 90 s on this 2-core machine, with gold complete.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

from offsetlake.local.home import HOME_ENV
from offsetlake_dev.local_cluster import running_clusters
from offsetlake_dev.simulate import MirrorSettings, MirrorSimulator

SOURCE_ALIAS = "primary"
TARGET_ALIAS = "dr"
GOAL_S = 90.0


def replicate(settings: MirrorSettings, groups: int, records: int, partitions: int) -> int:
    """Topic, records, offset syncs and one checkpoint per group-partition; returns checkpoints."""
    with MirrorSimulator(settings) as simulator:
        simulator.create_topic("orders", partitions)
        simulator.produce("orders", records)
        simulator.replicate()
        simulator.commit()
        names = [f"bench-app-{n}" for n in range(groups)]
        for index, group in enumerate(names):
            simulator.commit_source_group(
                group, {("orders", p): (index * 7) % records for p in range(partitions)}
            )
        return len(simulator.emit_checkpoints(names))


def refresh(home: Path, flags: list[str]) -> tuple[float, bool]:
    started = time.monotonic()
    completed = subprocess.run(
        [sys.executable, "-m", "offsetlake.cli", "pipeline", "run", *flags],
        env={**os.environ, HOME_ENV: str(home)},
        capture_output=True,
        text=True,
        check=False,
    )
    return time.monotonic() - started, completed.returncode == 0


def gold_rows(home: Path, table: str) -> int:
    path = home / "warehouse" / "offsetlake.db" / table
    return pq.read_table(path).num_rows if path.exists() else 0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--groups", type=int, default=50)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--records", type=int, default=200, help="records per partition")
    parser.add_argument("--rounds", type=int, default=3, help="refreshes of each kind")
    parser.add_argument("--cluster-timeout-ms", type=int, default=30_000, help="the setting's default")
    options = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="offsetlake-bench-failover-") as directory:
        home = Path(directory)
        with running_clusters(home, preferred_ports=None) as pair:
            settings = MirrorSettings(
                source_alias=SOURCE_ALIAS,
                target_alias=TARGET_ALIAS,
                source_bootstrap=pair.source.bootstrap_servers,
                target_bootstrap=pair.target.bootstrap_servers,
            )
            checkpoints = replicate(settings, options.groups, options.records, options.partitions)
            flags = [
                "--target", pair.target.bootstrap_servers, "--target-alias", TARGET_ALIAS,
                "--source", f"{SOURCE_ALIAS}={pair.source.bootstrap_servers}",
                "--set", f"offsetlake.cluster.timeout.ms={options.cluster_timeout_ms}",
            ]  # fmt: skip
            print(
                f"workload: {options.groups} groups x {options.partitions} partitions, {checkpoints} "
                f"checkpoints, cluster timeout {options.cluster_timeout_ms} ms"
            )
            warm_up, ok = refresh(home, flags)
            print(f"warm-up refresh (both up): {warm_up:.1f}s ok={ok}")
            figures: dict[str, list[float]] = {"up": [], "dead": []}
            assert pair.source.pid is not None
            for round_number in range(1, options.rounds + 1):
                for kind in ("up", "dead"):
                    if kind == "dead":
                        os.kill(pair.source.pid, signal.SIGSTOP)
                    try:
                        seconds, ok = refresh(home, flags)
                    finally:
                        if kind == "dead":
                            os.kill(pair.source.pid, signal.SIGCONT)
                    latest, history = gold_rows(home, "latest_offsets"), gold_rows(home, "offset_history")
                    figures[kind].append(seconds)
                    print(
                        f"round {round_number} source {kind:>4}: {seconds:6.1f}s ok={ok} "
                        f"latest_offsets={latest} offset_history={history}"
                    )
    up, dead = statistics.median(figures["up"]), statistics.median(figures["dead"])
    verdict = "met" if dead <= GOAL_S else "NOT met"
    print(f"median refresh, all clusters up: {up:.1f}s")
    print(f"median refresh, source dead:     {dead:.1f}s (goal <= {GOAL_S:.0f}s: {verdict})")
    print(f"ratio dead/up: {dead / up:.2f}")


if __name__ == "__main__":
    main()
