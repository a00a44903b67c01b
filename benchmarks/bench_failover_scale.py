"""A healthy (and a source-dead) ``offsetlake failover`` at issue 50's scales, each phase printed.

Issue 50, point 2: a healthy failover <= 30 s idle on the 23-partition pair and at 2,000 groups
(9,200 group-partitions), <= 45 s at 10,000 groups / 46,000 group-partitions; apply + verify of
46,000 group-partitions <= 3 s on loopback. ``--scale`` picks the issue's sizes:

- ``pair``: the 23-partition pair, 5 groups (23 group-partitions);
- ``2000``: 2,000 groups, 9,200 group-partitions;
- ``10000``: 10,000 groups, 46,000 group-partitions.

Every scale has ``--topics`` topics (default 5) with ``--partitions`` partitions between them
(default 23: 5, 5, 5, 4, 4), and group ``n`` commits every partition of topic ``n mod topics``, so
``groups x partitions / topics`` group-partitions. ``--groups`` overrides the scale's groups.

A private Tansu pair and the MM2 simulator (batched: one client, requests pipelined, for the
source groups' commits and the checkpoint task's reads). Per ``--home``:

- ``fresh``: the failover runs on a home no pipeline ever ran on (with ``--refresh always`` its
  refresh is a full update that creates every table; by default it reads the sources directly);
- ``refreshed``: the same home again after one more round of data: production ran the pipeline
  before the outage, so what the failover reads beyond gold is only what is new since.

Each measurement moves every group on the source (a new round of records, syncs and checkpoints)
and then runs ``offsetlake failover`` as an operator would, with the source up (``--source up``: it
reads the sources, or refreshes with ``--refresh always``) or paused (``dead``: SIGSTOP, the
probe's bound). It checks that every checkpointed
group-partition is committed on the target at its checkpoint's downstream offset, and prints the
failover's report lines on probe, refresh, time by phase, the refresh's slowest flows (from its
log), the wall time of the process, the parameters, the commit and the load average.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import FrameType, SimpleNamespace

from bench_failover import COMMAND_TIMEOUT_S, OFFSETLAKE, SOURCE_ALIAS, TARGET_ALIAS, _commit, load
from offsetlake.kafka.admin import list_committed_offsets_of_groups
from offsetlake.kafka.clients import admin
from offsetlake.local.home import HOME_ENV
from offsetlake_dev.local_cluster import ClusterPair, paused, running_clusters
from offsetlake_dev.simulate import MirrorSettings, MirrorSimulator

SCALES = {"pair": 5, "2000": 2_000, "10000": 10_000}
"""Groups per scale (the issue's: the 23-partition pair, 9,200 and 46,000 group-partitions)."""
SHOWN = (
    "probe:", "cluster ", "refresh:", "time by phase:", "checkpoint", "sources read now", "known partitions",
    "INCOMPLETE", "FAILED", "OK",
)  # fmt: skip
_FLOW_EVENT = re.compile(r"^(\S+ \S+): Flow (\S+) (is RUNNING|has COMPLETED|has FAILED)")
_RUN_EVENT = re.compile(r"^(\S+ \S+): (Starting run|Run is COMPLETED)")


@dataclass(frozen=True)
class Layout:
    """Which topic each group commits (every partition of it)."""

    topics: dict[str, int]
    groups: list[str]

    def topic_of(self, index: int) -> str:
        names = list(self.topics)
        return names[index % len(names)]

    @property
    def group_partitions(self) -> int:
        return sum(self.topics[self.topic_of(index)] for index in range(len(self.groups)))


def layout(groups: int, topics: int, partitions: int) -> Layout:
    """``partitions`` spread over ``topics`` topics as evenly as they go (the first get one more)."""
    counts = [partitions // topics + (1 if index < partitions % topics else 0) for index in range(topics)]
    return Layout(
        {f"orders-{index}": count for index, count in enumerate(counts)}, [f"app-{n}" for n in range(groups)]
    )


class Scale:
    """The pair, the simulator and the rounds of data that move every group."""

    def __init__(self, pair: ClusterPair, simulator: MirrorSimulator, shape: Layout, records: int) -> None:
        self.pair, self.simulator, self.shape, self.records = pair, simulator, shape, records
        self.round = 0

    def flags(self, cluster_timeout_ms: int | None) -> list[str]:
        timeout = (
            ["--set", f"offsetlake.cluster.timeout.ms={cluster_timeout_ms}"] if cluster_timeout_ms else []
        )
        return [
            "--target", self.pair.target.bootstrap_servers, "--target-alias", TARGET_ALIAS,
            "--source", f"{SOURCE_ALIAS}={self.pair.source.bootstrap_servers}", *timeout,
        ]  # fmt: skip

    def new_round(self) -> tuple[dict[tuple[str, str, int], int], float]:
        """More records, replicated; every group moves; fresh checkpoints -> (expected, seconds)."""
        started = time.monotonic()
        self.round += 1
        for topic in self.shape.topics:
            self.simulator.produce(topic, self.records)
        self.simulator.replicate()
        self.simulator.commit()
        high = self.round * self.records
        positions = {}
        for index, group in enumerate(self.shape.groups):
            topic = self.shape.topic_of(index)
            positions[group] = {
                (topic, p): high - 1 - (index + p) % self.records for p in range(self.shape.topics[topic])
            }
        self.simulator.commit_source_groups(positions)
        emitted = self.simulator.emit_checkpoints(self.shape.groups)
        expected = {(c.group, c.topic, c.partition): c.downstream_offset for c in emitted}
        return expected, time.monotonic() - started

    def applied(self, expected: dict[tuple[str, str, int], int]) -> int:
        with admin({"bootstrap.servers": self.pair.target.bootstrap_servers}) as client:
            committed, failures = list_committed_offsets_of_groups(
                client, self.shape.groups, timeout_s=30, max_in_flight=256
            )
        if failures:
            print(f"  reading the target's commits failed for {len(failures)} groups")
        return sum(
            1
            for (group, topic, p), offset in expected.items()
            if (c := committed.get(group, {}).get((topic, p))) is not None and c.offset == offset
        )


def run_cli(home: Path, args: list[str]) -> tuple[float, int, list[str]]:
    started = time.monotonic()
    completed = subprocess.run(
        [str(OFFSETLAKE), *args],
        env={**os.environ, HOME_ENV: str(home)},
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
        check=False,
    )
    if completed.returncode not in (0,):
        print(f"  {args[0]} exit {completed.returncode}: {(completed.stdout + completed.stderr)[-1500:]}")
    return time.monotonic() - started, completed.returncode, completed.stdout.splitlines()


def slowest_flows(log: Path, shown: int = 6) -> str:
    """The refresh's run (``Starting run`` -> ``Run is COMPLETED``) and its slowest flows, from the
    log's whole-second timestamps."""
    if not log.exists():
        return "no refresh log"
    running: dict[str, datetime] = {}
    took: dict[str, float] = {}
    run: dict[str, datetime] = {}
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if match := _FLOW_EVENT.match(line):
            at, flow, event = datetime.fromisoformat(match[1]), match[2].rsplit(".", 1)[-1], match[3]
            if event == "is RUNNING":
                running.setdefault(flow, at)
            elif flow in running:
                took[flow] = (at - running[flow]).total_seconds()
        elif match := _RUN_EVENT.match(line):
            run.setdefault(match[2], datetime.fromisoformat(match[1]))
    whole = (
        f"run {(run['Run is COMPLETED'] - run['Starting run']).total_seconds():.0f}s"
        if len(run) == 2
        else "run ?"
    )
    flows = sorted(took.items(), key=lambda item: -item[1])[:shown]
    return f"{whole}, {len(took)} flows; slowest: " + ", ".join(f"{flow} {s:.0f}s" for flow, s in flows)


@contextmanager
def source_state(pair: ClusterPair, source: str) -> Iterator[None]:
    if source == "dead":
        with paused(pair.source):
            yield
    else:
        yield


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scale", choices=list(SCALES), default="pair")
    parser.add_argument("--groups", type=int, help="instead of the scale's")
    parser.add_argument("--topics", type=int, default=5)
    parser.add_argument("--partitions", type=int, default=23, help="partitions of all topics together")
    parser.add_argument("--records", type=int, default=20, help="records per partition per round")
    parser.add_argument("--home", nargs="+", choices=["fresh", "refreshed"], default=["fresh", "refreshed"])
    parser.add_argument("--source", nargs="+", choices=["up", "dead"], default=["up"])
    parser.add_argument(
        "--cluster-timeout-ms",
        type=int,
        help="offsetlake.cluster.timeout.ms (default: the pipeline's; 5,000 fails the group snapshot "
        "of 10,000 groups under load: one describe of them all)",
    )
    parser.add_argument("--probe-timeout", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, help="the failover's --concurrency (default: its own)")
    parser.add_argument(
        "--load",
        choices=["idle", "second-pipeline"],
        default="idle",
        help="second-pipeline: `offsetlake pipeline run` on another home against the same pair, again and "
        "again, during each failover (bench_failover.py's load)",
    )
    parser.add_argument(
        "--refresh",
        choices=["auto", "always"],
        default="auto",
        help="the failover's --refresh: auto (the default: the sources read directly, no pipeline update) "
        "or always (a pipeline update first)",
    )
    options = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _stop)  # the brokers and the temporary home are cleaned up
    shape = layout(options.groups or SCALES[options.scale], options.topics, options.partitions)
    print(
        f"failover at scale: {len(shape.groups):,} groups, {options.topics} topics "
        f"({'+'.join(map(str, shape.topics.values()))} = {sum(shape.topics.values())} partitions), "
        f"{shape.group_partitions:,} group-partitions, {options.records} records a partition a round; "
        f"homes {' '.join(options.home)}, source {' '.join(options.source)}, probe timeout "
        f"{options.probe_timeout:g}s, cluster timeout {options.cluster_timeout_ms or 'default'} ms, "
        f"--refresh {options.refresh}, load {options.load}; "
        f"commit {_commit()}; "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    failures = 0
    with tempfile.TemporaryDirectory(prefix="offsetlake-bench-failover-scale-") as directory:
        root = Path(directory)
        home = root / "home"
        home.mkdir()
        with running_clusters(root / "clusters", preferred_ports=None) as pair:
            settings = MirrorSettings(
                source_alias=SOURCE_ALIAS,
                target_alias=TARGET_ALIAS,
                source_bootstrap=pair.source.bootstrap_servers,
                target_bootstrap=pair.target.bootstrap_servers,
            )
            with MirrorSimulator(settings) as simulator:
                for topic, count in shape.topics.items():
                    simulator.create_topic(topic, count)
                scale = Scale(pair, simulator, shape, options.records)
                for kind in options.home:
                    # Before "refreshed", the pipeline has run on the home: the fresh failover's full
                    # update did it with --refresh always; otherwise one update here.
                    if kind == "refreshed" and ("fresh" not in options.home or options.refresh == "auto"):
                        scale.new_round()
                        seconds, code, _ = run_cli(
                            home, ["pipeline", "run", *scale.flags(options.cluster_timeout_ms)]
                        )
                        print(f"pipeline run before the outage: {seconds:.1f}s exit={code}")
                    for source in options.source if kind == "refreshed" else ["up"]:
                        failures += not measure(scale, home, kind, source, options)
    print(f"runs not ok: {failures}; load average now {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if failures:
        raise SystemExit(1)


def measure(scale: Scale, home: Path, kind: str, source: str, options: argparse.Namespace) -> bool:
    expected, built = scale.new_round()
    print(
        f"[{kind} home, source {source}] round {scale.round}: {len(expected):,} checkpoints in {built:.1f}s; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    log = home / "pipeline" / "last-run.log"
    log.unlink(missing_ok=True)
    extra = ["--concurrency", str(options.concurrency)] if options.concurrency else []
    args = ["failover", "--probe-timeout", f"{options.probe_timeout:g}", "--refresh", options.refresh, *extra]
    flags = scale.flags(options.cluster_timeout_ms)
    with load(options.load, SimpleNamespace(flags=lambda: flags), 0), source_state(scale.pair, source):
        seconds, code, lines = run_cli(home, [*args, *flags])
    for line in lines:
        if line.startswith(SHOWN):
            print(f"  {line[:300]}")
    if source == "up" and log.exists():
        print(f"  refresh log: {slowest_flows(log)}")
    applied = scale.applied(expected)
    ok = code == 0 and applied == len(expected)
    print(
        f"  failover {seconds:.1f}s (process wall time) exit={code} applied={applied:,}/{len(expected):,} "
        f"ok={ok}; load average {os.getloadavg()[0]:.2f}"
    )
    return ok


def _stop(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    sys.exit(main())
