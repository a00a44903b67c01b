"""`offsetlake failover` with the source dead, end to end, on an idle and on a busy machine.

Starts a private source/target pair in a temporary home and replicates with the MM2 simulator
(offset syncs on the source, checkpoints on the target; by default 5 groups x 5 partitions, the
size of the failover tests). Each repeat first moves every group on the source and emits fresh
checkpoints (so there is always something to apply), then pauses the source with SIGSTOP (a dead
host, as a client sees it; SIGCONT afterwards: Tansu keeps data only in memory), runs
``.venv/bin/offsetlake failover`` as an operator would, and checks that every checkpointed
group-partition is committed on the target at its checkpoint's downstream offset. One refresh
with both clusters up comes first, as production has run the pipeline before an outage.

``--load second-pipeline`` runs ``offsetlake pipeline run`` on another home against the same
pair, again and again, for the whole measurement: on a 2-core machine this is what makes Spark's
Python workers miss their 10 s connect-back window (local/spark.py). ``--cpu-hogs N`` adds N
busy loops. ``--source up`` leaves the source up: a healthy failover, which refreshes
``latest_offsets``' lineage before it applies (issue 36: goal <= 60 s idle, <= 120 s beside a
second pipeline). ``--measure refresh`` times ``offsetlake pipeline run`` with the source dead instead
(the pipeline's own robustness), counting ``CANNOT_OPEN_SOCKET`` in its log.

Prints per repeat: seconds, exit status, applied/checkpointed partitions, CANNOT_OPEN_SOCKET
lines, and the failover's own time by phase (with what its probe ran beside); then the median per
load. With the source dead, each failover is also printed against ``--probe-timeout``, the probe's
own bound (issue 50: <= the bound + 1 s idle, + 2 s beside a test run: the apply reads and plans
while the dead source's probe waits). The header names the commit measured. Goal (issue 23): a
failover with a dead source, busy or not, applies every checkpointed partition.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from offsetlake.failover.run import DEFAULT_PROBE_TIMEOUT_S
from offsetlake.kafka.admin import list_committed_offsets
from offsetlake.kafka.clients import admin
from offsetlake.local.home import HOME_ENV
from offsetlake_dev.local_cluster import ClusterPair, paused, running_clusters
from offsetlake_dev.simulate import MirrorSettings, MirrorSimulator

SOURCE_ALIAS = "primary"
TARGET_ALIAS = "dr"
TOPIC = "orders"
OFFSETLAKE = Path(sys.executable).with_name("offsetlake")
SOCKET_ERROR = "CANNOT_OPEN_SOCKET"
COMMAND_TIMEOUT_S = 900


@dataclass(frozen=True)
class Outcome:
    seconds: float
    exit_code: int
    applied: int
    expected: int
    socket_errors: int

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.applied == self.expected


@dataclass(frozen=True)
class PairFlags:
    """A pipeline's flags for a benchmark's pair, as an operator names it (the second pipeline's)."""

    pair: ClusterPair

    def flags(self) -> list[str]:
        return [
            "--target", self.pair.target.bootstrap_servers, "--target-alias", TARGET_ALIAS,
            "--source", f"{SOURCE_ALIAS}={self.pair.source.bootstrap_servers}",
        ]  # fmt: skip


class Scenario:
    """The pair, the simulator, and the commands run against them."""

    def __init__(
        self, home: Path, pair: ClusterPair, simulator: MirrorSimulator, options: argparse.Namespace
    ):
        self.home = home
        self.pair = pair
        self.simulator = simulator
        self.options = options
        self.groups = [f"bench-app-{n}" for n in range(options.groups)]
        self.round = 0

    def flags(self) -> list[str]:
        return [
            *PairFlags(self.pair).flags(),
            "--set", f"offsetlake.cluster.timeout.ms={self.options.cluster_timeout_ms}",
        ]  # fmt: skip

    def new_checkpoints(self) -> dict[tuple[str, str, int], int]:
        """More records, replicated; every group moves on; fresh checkpoints -> expected commits."""
        self.round += 1
        self.simulator.produce(TOPIC, self.options.records)
        self.simulator.replicate()
        self.simulator.commit()
        high = self.round * self.options.records
        for index, group in enumerate(self.groups):
            offsets = {
                (TOPIC, p): high - 1 - (index + p) % self.options.records
                for p in range(self.options.partitions)
            }
            self.simulator.commit_source_group(group, offsets)
        emitted = self.simulator.emit_checkpoints(self.groups)
        return {(c.group, c.topic, c.partition): c.downstream_offset for c in emitted}

    def run(self, *args: str) -> tuple[float, int]:
        """Run the CLI; prints its ``time by phase`` line (the failover's report has one)."""
        started = time.monotonic()
        completed = subprocess.run(
            [str(OFFSETLAKE), *args, *self.flags()],
            env={**os.environ, HOME_ENV: str(self.home)},
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            check=False,
        )
        if completed.returncode != 0:
            print(f"  {args[0]} exit {completed.returncode}: {(completed.stdout + completed.stderr)[-1500:]}")
        for line in completed.stdout.splitlines():
            if line.startswith(("time by phase:", "probe: ", "cluster ")):
                print(f"  {line}")
        return time.monotonic() - started, completed.returncode

    def applied(self, expected: dict[tuple[str, str, int], int]) -> int:
        config = {"bootstrap.servers": self.pair.target.bootstrap_servers}
        count = 0
        with admin(config) as client:
            for group in self.groups:
                keys = [(topic, p) for (g, topic, p) in expected if g == group]
                committed = list_committed_offsets(client, group, keys, timeout_s=30)
                count += sum(
                    1
                    for (topic, p) in keys
                    if (c := committed.get((topic, p))) and c.offset == expected[(group, topic, p)]
                )
        return count

    def source_dead(self) -> contextlib.AbstractContextManager[None]:
        """The source paused (a dead host), or left up with ``--source up`` (a healthy failover)."""
        if self.options.source == "up":
            return contextlib.nullcontext()
        return paused(self.pair.source)

    def once(self) -> Outcome:
        expected = self.new_checkpoints()
        log = self.home / "pipeline" / "last-run.log"
        log.unlink(missing_ok=True)
        with self.source_dead():
            if self.options.measure == "failover":
                seconds, code = self.run("failover", "--probe-timeout", f"{self.options.probe_timeout:g}")
            else:
                seconds, code = self.run("pipeline", "run")
        applied = self.applied(expected) if self.options.measure == "failover" else len(expected)
        return Outcome(seconds, code, applied, len(expected), _socket_errors(log))


def _socket_errors(log: Path) -> int:
    if not log.exists():
        return 0
    return sum(
        SOCKET_ERROR in line for line in log.read_text(encoding="utf-8", errors="replace").splitlines()
    )


class SecondPipeline:
    """``offsetlake pipeline run`` on another home in a loop, in a process group of its own."""

    def __init__(self, scenario: Flagged, home: Path) -> None:
        loop = "import subprocess, sys\nwhile True: subprocess.run(sys.argv[1:])\n"
        self.home = home
        self.output = (home / "second-pipeline.out").open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-c", loop, str(OFFSETLAKE), "pipeline", "run", *scenario.flags()],
            env={**os.environ, HOME_ENV: str(home)},
            stdout=self.output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_until_running(self, timeout_s: float = 180) -> None:
        """Until its first update has printed a flow event (its Spark is up)."""
        log = self.home / "pipeline" / "last-run.log"
        deadline = time.monotonic() + timeout_s
        while not (log.exists() and "Flow " in log.read_text(encoding="utf-8", errors="replace")):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise SystemExit("the second pipeline update did not start")
            time.sleep(1)

    def stop(self, timeout_s: float = 120) -> int:
        """SIGTERM the group (run_pipeline cleans up on SIGTERM) and wait until none of it is left (its
        JVM may still be writing in the home after the loop exited); returns its CANNOT_OPEN_SOCKET
        lines."""
        os.killpg(self.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while _group_alive(self.process.pid) and time.monotonic() < deadline + 10:
            if time.monotonic() > deadline:
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.poll()  # reaps the loop; its children are reaped by init
            time.sleep(0.2)
        self.process.wait()
        self.output.close()
        return _socket_errors(self.home / "second-pipeline.out")


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


class Flagged(Protocol):
    """What the second pipeline needs of a scenario: the pair named on the command line."""

    def flags(self) -> list[str]: ...


@contextmanager
def load(kind: str, scenario: Flagged, cpu_hogs: int) -> Iterator[None]:
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(cpu_hogs)]
    second = None
    try:
        with tempfile.TemporaryDirectory(prefix="offsetlake-bench-second-") as directory:
            if kind == "second-pipeline":
                second = SecondPipeline(scenario, Path(directory))
                second.wait_until_running()
            try:
                yield
            finally:
                if second is not None:
                    print(f"  second pipeline: {second.stop()} {SOCKET_ERROR} lines in its output")
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--groups", type=int, default=5)
    parser.add_argument("--partitions", type=int, default=5)
    parser.add_argument("--records", type=int, default=40, help="records per partition per repeat")
    parser.add_argument("--repeat", type=int, default=3, help="measured runs per load")
    parser.add_argument(
        "--load", nargs="+", choices=["idle", "second-pipeline"], default=["idle", "second-pipeline"]
    )
    parser.add_argument("--cpu-hogs", type=int, default=0, help="busy loops beside the measurement")
    parser.add_argument("--measure", choices=["failover", "refresh"], default="failover")
    parser.add_argument(
        "--source",
        choices=["dead", "up"],
        default="dead",
        help="pause the source during each run (dead) or leave it up: a healthy failover refreshes first",
    )
    parser.add_argument("--cluster-timeout-ms", type=int, default=5000, help="as the failover tests")
    parser.add_argument(
        "--probe-timeout",
        type=float,
        default=DEFAULT_PROBE_TIMEOUT_S,
        help="the failover's --probe-timeout: what a dead source's probe waits",
    )
    options = parser.parse_args(argv)
    against_bound = options.measure == "failover" and options.source == "dead"

    medians: dict[str, float] = {}
    failures = 0
    with tempfile.TemporaryDirectory(prefix="offsetlake-bench-failover-") as directory:
        home = Path(directory)
        with running_clusters(home, preferred_ports=None) as pair:
            settings = MirrorSettings(
                source_alias=SOURCE_ALIAS,
                target_alias=TARGET_ALIAS,
                source_bootstrap=pair.source.bootstrap_servers,
                target_bootstrap=pair.target.bootstrap_servers,
            )
            with MirrorSimulator(settings) as simulator:
                simulator.create_topic(TOPIC, options.partitions)
                scenario = Scenario(home, pair, simulator, options)
                print(
                    f"{options.measure} with the source {options.source}: {options.groups} groups x "
                    f"{options.partitions} partitions, cluster timeout {options.cluster_timeout_ms} ms, "
                    f"{options.cpu_hogs} cpu hogs, probe timeout {options.probe_timeout:g}s; "
                    f"commit {_commit()}; load average {os.getloadavg()[0]:.2f}"
                )
                # Production has run the pipeline before the outage: gold holds translations.
                scenario.new_checkpoints()
                warm_up, code = scenario.run("pipeline", "run")
                print(f"warm-up refresh (both clusters up): {warm_up:.1f}s exit={code}")
                for kind in options.load:
                    seconds = []
                    with load(kind, scenario, options.cpu_hogs):
                        for number in range(1, options.repeat + 1):
                            outcome = scenario.once()
                            seconds.append(outcome.seconds)
                            failures += not outcome.ok
                            print(
                                f"{kind:>15} #{number}: {outcome.seconds:6.1f}s exit={outcome.exit_code} "
                                f"applied={outcome.applied}/{outcome.expected} "
                                f"{SOCKET_ERROR}={outcome.socket_errors} ok={outcome.ok}"
                                + (
                                    f" probe bound +{outcome.seconds - options.probe_timeout:.1f}s"
                                    if against_bound
                                    else ""
                                )
                            )
                    medians[kind] = statistics.median(seconds)
    for kind, median in medians.items():
        bound = (
            f" = probe bound {options.probe_timeout:g}s + {median - options.probe_timeout:.1f}s"
            if against_bound
            else ""
        )
        print(
            f"median {options.measure}, {kind}: {median:.1f}s{bound} "
            f"(load average now {os.getloadavg()[0]:.2f})"
        )
    print(f"runs not ok (non-zero exit or a checkpointed partition not applied): {failures}")
    if failures:
        raise SystemExit(1)


def _commit() -> str:
    """The checkout's commit, ``+dirty`` when files differ from it."""
    repo = Path(__file__).resolve().parent
    head = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], check=False, capture_output=True, text=True
    )
    dirty = subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
        check=False,
        capture_output=True,
        text=True,
    )
    return (head.stdout.strip() or "unknown") + ("+dirty" if dirty.stdout.strip() else "")


if __name__ == "__main__":
    main()
