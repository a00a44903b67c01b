"""Where a demo-sized pipeline update spends its time, phase by phase (issue 23: goal <= 30 s).

Starts a private Tansu pair in a temporary home, replicates the demo's workload with the MM2
simulator (``offsetlake_dev.demo``: the same topics, partitions and commit intervals, about
2,000 records), then runs ``--repeat`` updates and prints, per update and as medians:

- launch -> "Loading pipeline spec": the launcher (a JVM for ``spark-pipelines``) and the Python
  CLI's imports;
- "Creating Spark session" -> "Creating dataflow graph": the Spark Connect session (a cold update
  starts the server's SparkContext here);
- graph: creating the schema and the dataflow graph; register: importing the transformations
  and registering every dataset;
- run: "Starting run" -> "Run is COMPLETED", and each flow from RUNNING to done;
- exit: "Run is COMPLETED" -> the process gone (session stop, JVM shutdown);
- total: run_pipeline as a whole.

Every update is a full refresh (``--kind full``: the demo's work, every table recomputed from
Kafka) or an incremental update over no new data (``--kind incremental``: what a sync loop pays
between two MM2 commit intervals). ``--warm`` runs the updates against one kept-warm Spark
Connect server (``offsetlake.local.connect_server.WarmServer``) started before the first update; its
start is printed apart. Times are taken when each progress line reaches this process (the child
runs unbuffered). The most JVMs and Python processes seen at once in the update's process tree are
printed too. ``--load second-pipeline`` times them while ``offsetlake pipeline run`` updates another
home against the same pair, again and again (bench_failover.py's second pipeline). Figures go to
stdout; note the load average it prints.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Final

from bench_failover import PairFlags, load
from offsetlake.contract.settings import PipelineSettings
from offsetlake.local.connect_server import WarmServer
from offsetlake.local.home import LocalHome
from offsetlake.local.pipeline_update import PipelineRunResult, run_pipeline
from offsetlake.local.processes import descendants
from offsetlake_dev import demo
from offsetlake_dev.local_cluster import running_clusters
from offsetlake_dev.simulate import MirrorSettings, MirrorSimulator

GOAL_S: Final = 30.0
_MARKERS: Final = {
    "loaded": "Loading pipeline spec",
    "session": "Creating Spark session",
    "graph": "Creating dataflow graph",
    "register": "Registering graph elements",
    "start": "Starting run",
    "done": "Run is COMPLETED",
}
PHASES: Final = ("launch", "session", "graph", "register", "run", "exit", "total")


class BenchmarkError(Exception):
    """An update failed or printed no progress: no figure is printed for it."""


@dataclass
class UpdateTimes:
    """Seconds since launch at which each marker line and each flow event arrived."""

    markers: dict[str, float] = field(default_factory=dict)
    running: dict[str, float] = field(default_factory=dict)
    finished: dict[str, float] = field(default_factory=dict)

    def feed(self, at: float, line: str) -> None:
        message = line.split(": ", 1)[-1]
        for name, marker in _MARKERS.items():
            if message.startswith(marker):
                self.markers.setdefault(name, at)
        if message.startswith("Flow "):
            flow = message.split()[1].strip("'").rsplit(".", 1)[-1]
            if " is RUNNING" in message:
                self.running.setdefault(flow, at)
            elif " has COMPLETED" in message or " has FAILED" in message:
                self.finished[flow] = at

    def phases(self, total_s: float) -> dict[str, float]:
        marks = self.markers
        missing = [name for name in _MARKERS if name not in marks]
        if missing:
            raise BenchmarkError(f"progress lines missing: {', '.join(missing)}")
        return {
            "launch": marks["loaded"],
            "session": marks["graph"] - marks["session"],
            "graph": marks["register"] - marks["graph"],
            "register": marks["start"] - marks["register"],
            "run": marks["done"] - marks["start"],
            "exit": total_s - marks["done"],
            "total": total_s,
        }

    def flows(self) -> dict[str, float]:
        return {
            flow: self.finished[flow] - started
            for flow, started in self.running.items()
            if flow in self.finished
        }


class ProcessCounter:
    """The most ``java`` and ``python`` processes seen at once below this process, and the Python
    processes started, by what they run (``-m`` module; a forked worker shows its daemon's), and the
    CPU time each used (user + system, from /proc), sampled every 0.2 s: a worker living less than
    that can be missed, and the CPU after a process's last sample is not seen, so the counts and
    CPU times are lower bounds. A process already running at the first sample (the kept-warm server
    and the Python workers earlier updates left it) counts only what it used meanwhile; it used to
    count its whole life for Python processes, so warm updates' Python CPU grew with each update."""

    def __init__(self, excluded: tuple[int, ...]) -> None:
        self._excluded = set(excluded)
        self._stop = threading.Event()
        self.most: dict[str, int] = {"java": 0, "python": 0}
        self.started: dict[int, str] = {}
        self._cpu: dict[int, float] = {}
        self._cpu_at_start: dict[int, float] = {}
        self._ticks = os.sysconf("SC_CLK_TCK")
        self._thread = threading.Thread(target=self._sample, name="process-counter", daemon=True)

    def __enter__(self) -> ProcessCounter:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def cpu_by_kind(self) -> dict[str, float]:
        """CPU seconds seen, by what each process runs (the JVMs together as ``java``)."""
        totals: dict[str, float] = {}
        for pid, seconds in self._cpu.items():
            what = self.started.get(pid, "?")
            totals[what] = totals.get(what, 0.0) + seconds - self._cpu_at_start.get(pid, 0.0)
        return totals

    def _cpu_seconds(self, pid: int) -> float:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / self._ticks

    def _sample(self) -> None:
        first = True
        while not self._stop.wait(0.2):
            counts = {"java": 0, "python": 0}
            for pid in descendants(os.getpid()):
                if pid in self._excluded:
                    continue
                try:
                    name = Path(f"/proc/{pid}/comm").read_text().strip()
                except OSError:
                    continue
                for kind in counts:
                    if name.startswith(kind):
                        counts[kind] += 1
                if pid not in self.started and name.startswith(("python", "java")):
                    self.started[pid] = _runs(pid) if name.startswith("python") else "java"
                    # A process older than the update (the kept-warm server and its Python workers)
                    # counts only the CPU it uses from now on.
                    self._cpu_at_start[pid] = self._cpu_seconds(pid) if first else 0.0
                self._cpu[pid] = self._cpu_seconds(pid) or self._cpu.get(pid, 0.0)
            first = False
            for kind, count in counts.items():
                self.most[kind] = max(self.most[kind], count)


def _runs(pid: int) -> str:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return "?"
    if "-m" in argv[:-1]:
        return argv[argv.index("-m") + 1]
    return Path(argv[1]).name if len(argv) > 1 and argv[1] else "python"


def replicate(settings: MirrorSettings) -> int:
    """The demo's topics and commit intervals, its four groups moved to the log end each interval;
    returns the records produced."""
    produced = 0
    with MirrorSimulator(settings) as simulator:
        simulator.create_topic(
            demo.ORDERS, demo.ORDERS_PARTITIONS, preexisting_target_records=demo.PREEXISTING_TARGET_RECORDS
        )
        simulator.create_topic(demo.PAYMENTS, demo.PAYMENTS_PARTITIONS)
        partitions = [(demo.ORDERS, p) for p in range(demo.ORDERS_PARTITIONS)] + [
            (demo.PAYMENTS, p) for p in range(demo.PAYMENTS_PARTITIONS)
        ]
        for replication_round in demo.ROUNDS:
            produced += simulator.produce(
                demo.ORDERS,
                replication_round.orders_per_partition,
                transaction_size=replication_round.transaction_size,
                filter_every=replication_round.filter_every,
            )
            produced += simulator.produce(demo.PAYMENTS, replication_round.payments_per_partition)
            simulator.replicate()
            simulator.commit()
            ends = {key: simulator.source_log_end(*key) for key in partitions}
            for group in demo.GROUPS:
                simulator.commit_source_group(group.name, ends)
            simulator.emit_checkpoints(group.name for group in demo.GROUPS)
    return produced


def timed_update(
    settings: PipelineSettings,
    home: Path,
    full: bool,
    warm: WarmServer | None,
    brokers: tuple[int, ...],
    *,
    log_copy: Path,
    spark_conf: dict[str, str],
) -> tuple[PipelineRunResult, UpdateTimes, dict[str, int]]:
    times = UpdateTimes()
    launched = time.monotonic()

    def echo(line: str) -> None:
        times.feed(time.monotonic() - launched, line)

    with ProcessCounter(brokers) as counter:
        result = run_pipeline(
            settings, LocalHome(home), full_refresh=full, echo=echo, server=warm, spark_conf=spark_conf
        )
    shutil.copyfile(result.log_path, log_copy)
    if not result.succeeded:
        raise BenchmarkError(f"update failed: {result.explanation} (log {result.log_path})")
    started = Counter(counter.started.values())
    print("  python processes started: " + ", ".join(f"{n} {what}" for what, n in started.most_common()))
    cpu = counter.cpu_by_kind()
    print(
        f"  CPU seen in the update's processes: {sum(cpu.values()):.1f}s in {result.seconds:.1f}s; "
        + ", ".join(f"{what} {seconds:.1f}s" for what, seconds in sorted(cpu.items(), key=lambda kv: -kv[1]))
    )
    return result, times, counter.most


@contextmanager
def optional_warm_server(enabled: bool, home: Path) -> Iterator[WarmServer | None]:
    if not enabled:
        yield None
        return
    started = time.monotonic()
    with WarmServer(LocalHome(home)) as server:
        server.start()
        print(f"warm Spark Connect server started in {time.monotonic() - started:.1f}s ({server.url})")
        yield server


def _row(label: str, values: dict[str, float]) -> str:
    return f"{label:<10}" + "".join(f"{values.get(phase, float('nan')):>9.1f}" for phase in PHASES)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=3, help="updates to time (medians are printed)")
    parser.add_argument("--kind", choices=("full", "incremental"), default="full")
    parser.add_argument("--warm", action="store_true", help="run the updates on one kept-warm server")
    parser.add_argument(
        "--logs-dir",
        type=Path,
        default=None,
        help="where each update's spark-pipelines log is kept (default: a fresh directory under /tmp)",
    )
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a runtime setting (repeatable): spark.sql.pipelines.execution.maxConcurrentFlows=4",
    )
    parser.add_argument(
        "--load",
        choices=("idle", "second-pipeline"),
        default="idle",
        help="second-pipeline: `offsetlake pipeline run` on another home against the same pair, again "
        "and again, while the updates are timed",
    )
    options = parser.parse_args(argv)
    conf = dict(entry.split("=", 1) for entry in options.conf)
    logs_dir = options.logs_dir or Path(tempfile.mkdtemp(prefix="bench-update-logs-"))
    logs_dir.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, _interrupt)

    print(
        f"bench_update: kind={options.kind} warm={options.warm} repeat={options.repeat} load={options.load} "
        f"commit={_commit()} cores={os.cpu_count()} load average at start {os.getloadavg()[0]:.2f}; "
        f"logs in {logs_dir}; conf {conf}"
    )
    with ExitStack() as stack:
        home = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="offsetlake-bench-update-")))
        pair = stack.enter_context(running_clusters(home, preferred_ports=None))
        brokers = tuple(cluster.pid for cluster in pair if cluster.pid is not None)
        mirror = MirrorSettings(
            source_alias=demo.SOURCE_ALIAS,
            target_alias=demo.TARGET_ALIAS,
            source_bootstrap=pair.source.bootstrap_servers,
            target_bootstrap=pair.target.bootstrap_servers,
            mapping_topic=demo.MAPPING_TOPIC,
            mapped_topics=frozenset({demo.PAYMENTS}),
        )
        print(f"workload: the demo's, {replicate(mirror)} records produced on the source")
        settings = demo.pipeline_settings(pair.source.bootstrap_servers, pair.target.bootstrap_servers)
        warm = stack.enter_context(optional_warm_server(options.warm, home))
        stack.enter_context(load(options.load, PairFlags(pair), cpu_hogs=0))
        if options.kind == "incremental":
            result, _, _ = timed_update(
                settings, home, True, warm, brokers, log_copy=logs_dir / "initial.log", spark_conf=conf
            )
            print(f"initial full update (not counted): {result.seconds:.1f}s")
        print(f"{'update':<10}" + "".join(f"{phase:>9}" for phase in PHASES) + "   most java/python  load")
        figures: list[dict[str, float]] = []
        flows: list[dict[str, float]] = []
        for number in range(1, options.repeat + 1):
            result, times, most = timed_update(
                settings,
                home,
                options.kind == "full",
                warm,
                brokers,
                log_copy=logs_dir / f"update-{number}.log",
                spark_conf=conf,
            )
            figures.append(times.phases(result.seconds))
            flows.append(times.flows())
            print(
                f"{_row(str(number), figures[-1])}   {most['java']}/{most['python']}  "
                f"{os.getloadavg()[0]:.2f}  {result.status}"
            )
    medians = {phase: statistics.median(f[phase] for f in figures) for phase in PHASES}
    print(_row("median", medians))
    print("flow RUNNING -> done, median s:")
    for flow in sorted({name for run in flows for name in run}):
        seconds = [run[flow] for run in flows if flow in run]
        print(f"  {flow:<32} {statistics.median(seconds):6.1f}")
    verdict = "met" if medians["total"] <= GOAL_S else "NOT met"
    print(
        f"median update {medians['total']:.1f}s (goal <= {GOAL_S:.0f}s: {verdict}); "
        f"load average at end {os.getloadavg()[0]:.2f}"
    )
    return 0


def _commit() -> str:
    """The checkout's commit, ``+dirty`` when tracked files differ from it."""
    repo = Path(__file__).resolve().parent

    def git(*arguments: str) -> str:
        return subprocess.run(
            ["git", "-C", str(repo), *arguments], check=False, capture_output=True, text=True
        ).stdout.strip()

    dirty = git("status", "--porcelain", "--untracked-files=no")
    return (git("rev-parse", "--short", "HEAD") or "unknown") + ("+dirty" if dirty else "")


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    """The brokers run detached: turn SIGTERM into an interrupt so running_clusters stops them."""
    raise KeyboardInterrupt(f"signal {signum}")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchmarkError as error:
        print(f"BENCHMARK FAILED: {error}", file=sys.stderr)
        sys.exit(1)
