"""Benchmark: the offset pipeline (bronze -> silver -> gold) on MM2 checkpoints from a local broker.

Two questions, each answered on its own Tansu pair in a temporary home (never a developer's):

1. Ingest: how long does one pipeline update take to land, decode and aggregate ``--records``
   checkpoints, next to a bare confluent-kafka read of the same topic in the same run? Target:
   flows / bare <= 2, the flows being the first to the last flow event (start-up reported apart).
2. Refresh: does an update cost grow with the new records rather than with the history? Run A
   loads ``--history`` checkpoints, then times the update that picks up ``--new`` more (the
   median of ``--repeat`` such updates); run B does the same after 10 x ``--history``.
   Target: B / A <= 1.5.

Pipeline time is the spark-pipelines process, start-up included (what an update costs; also printed
as pipeline / bare); the runner's set-up before it (writing the spec) is printed apart and left out.

Each pipeline run also reports the peak memory of the whole process tree (this process, the
spark-pipelines client, its Spark Connect JVM and Python workers; the brokers are left out
because they hold the records in memory). After each scenario the tables are counted, so a figure
is only printed for a run that really landed every record. Figures go to stdout.

Usage: .venv/bin/python benchmarks/bench_pipeline.py [--records 1000000] [--history 100000]
       [--new 10000] [--repeat 1] [--skip-ingest] [--skip-refresh] [--logs-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from types import FrameType
from typing import Final

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from _measure import PeakTreeMemory
from offsetlake.codecs.mm2 import Checkpoint, encode_checkpoint
from offsetlake.contract.settings import PipelineSettings
from offsetlake.local.clusters import local_pipeline_settings
from offsetlake.local.home import HOME_ENV, LocalHome
from offsetlake.local.pipeline_update import PipelineRunResult, run_pipeline
from offsetlake.mirror.policy import ReplicationPolicy
from offsetlake_dev.local_cluster import ClusterPair, running_clusters

INGEST_TARGET_RATIO: Final = 2.0
REFRESH_TARGET_RATIO: Final = 1.5
HISTORY_GROWTH: Final = 10
TIMEOUT_S: Final = 60.0
BARE_READ_BATCH: Final = 10_000
HISTORY_SENSITIVE_FLOWS: Final = (
    "decoded_checkpoints",
    "silver_checkpoints",
    "offset_history",
    "latest_offsets",
)
"""Streaming silver should not care about history; the gold materialized views recompute from it."""
UPSTREAM_STEP: Final = 1_000
"""How far each group's committed offset moves between two of its checkpoints."""

_FLOW_EVENT = re.compile(
    r"^(?P<at>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d): Flow '?(?P<flow>[^' ]+)'? (?:is|has) (?P<state>[A-Z_]+)\."
)

PRODUCER_CONFIG: Final = {
    "linger.ms": 100,
    "batch.size": 1_000_000,
    "compression.type": "none",
    "queue.buffering.max.messages": 500_000,
    "queue.buffering.max.kbytes": 1_048_576,
}


class BenchmarkError(RuntimeError):
    """The benchmark's own set-up or a sanity check failed (not a slow pipeline)."""


@dataclass(frozen=True)
class CheckpointWorkload:
    """Checkpoints as MM2 would emit them: groups x topics x partitions keys, offsets rising per key.

    Record ``index`` is the (index // keys)-th checkpoint of key ``index % keys``, so any range of
    indexes continues the same history, and every checkpoint of a key moves its downstream offset.
    """

    policy: ReplicationPolicy
    source_alias: str
    groups: int
    topics: int
    partitions: int

    @classmethod
    def for_pipeline(cls, settings: PipelineSettings, options: argparse.Namespace) -> CheckpointWorkload:
        """Checkpoints of the pipeline's (first) source alias, named by its replication policy."""
        alias = settings.sources[0].alias
        return cls(settings.policy, alias, options.groups, options.topics, options.partitions)

    @property
    def topic(self) -> str:
        return self.policy.checkpoints_topic(self.source_alias)

    @property
    def keys(self) -> int:
        return self.groups * self.topics * self.partitions

    def checkpoint(self, index: int) -> Checkpoint:
        round_, key = divmod(index, self.keys)
        group, topic_partition = divmod(key, self.topics * self.partitions)
        topic, partition = divmod(topic_partition, self.partitions)
        upstream_offset = (round_ + 1) * UPSTREAM_STEP + key % UPSTREAM_STEP
        replication_lag = key % 97  # downstream offsets trail upstream ones by a per-key amount
        return Checkpoint(
            group=f"bench-group-{group:05d}",
            topic=self.policy.format_remote_topic(self.source_alias, f"orders-{topic:02d}"),
            partition=partition,
            upstream_offset=upstream_offset,
            downstream_offset=upstream_offset - replication_lag,
            metadata="",
        )

    def records(self, start: int, count: int) -> Iterator[tuple[bytes, bytes]]:
        for index in range(start, start + count):
            yield encode_checkpoint(self.checkpoint(index))


@dataclass(frozen=True)
class PipelineFigures:
    label: str
    result: PipelineRunResult
    wall_s: float
    """run_pipeline as a whole: also its set-up before spark-pipelines starts."""
    launched_at: datetime
    """When spark-pipelines started, naive local time like the pipeline's progress events."""
    log_copy: Path
    peak: PeakTreeMemory

    def startup_and_flows_seconds(self) -> tuple[float, float]:
        """Start-up until the first flow event, then the first to the last flow event (1 s resolution)."""
        flows = self.result.flows
        first = min(flow.started_at for flow in flows)
        last = max(flow.finished_at for flow in flows)
        return (first - self.launched_at).total_seconds(), (last - first).total_seconds()

    def phases(self) -> str:
        """Where the time went: start-up, the flows, shutdown."""
        if not self.result.flows:
            return "no flow events"
        startup_s, flows_s = self.startup_and_flows_seconds()
        return (
            f"runner set-up {self.wall_s - self.result.seconds:.0f} s, then spark-pipelines: start-up "
            f"until the first flow event {startup_s:.0f} s, flows {flows_s:.0f} s, "
            f"after the last flow event {self.result.seconds - startup_s - flows_s:.0f} s"
        )

    def running_seconds(self) -> dict[str, float]:
        """Per flow, from RUNNING to its last event (the runner's flow times also count QUEUED)."""
        running_from: dict[str, datetime] = {}
        last_event: dict[str, datetime] = {}
        for line in self.log_copy.read_text(errors="replace").splitlines():
            event = _FLOW_EVENT.match(line)
            if event is None:
                continue
            at = datetime.strptime(event["at"], "%Y-%m-%d %H:%M:%S")
            flow = event["flow"].rsplit(".", 1)[-1]
            if event["state"] == "RUNNING":
                running_from.setdefault(flow, at)
            last_event[flow] = at
        return {flow: (last_event[flow] - started).total_seconds() for flow, started in running_from.items()}


def create_checkpoints_topic(bootstrap: str, topic: str) -> None:
    """One partition, as MM2 creates it. Not compacted: the benchmark must read every record it wrote."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1)])[topic].result(timeout=TIMEOUT_S)


def log_end_offset(bootstrap: str, topic: str) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.list_offsets({TopicPartition(topic, 0): OffsetSpec.latest()}, request_timeout=TIMEOUT_S)
    return next(iter(futures.values())).result(timeout=TIMEOUT_S).offset


def produce_checkpoints(bootstrap: str, workload: CheckpointWorkload, start: int, count: int) -> float:
    """Produce checkpoints ``start .. start+count-1`` (= their offsets) in large batches; seconds taken."""
    topic = workload.topic
    failures: list[str] = []

    def on_delivery(error: KafkaError | None, _message: object) -> None:
        if error is not None:
            failures.append(error.str())

    started = time.perf_counter()
    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_CONFIG})
    for key, value in workload.records(start, count - 1):
        while True:
            try:
                producer.produce(topic, value, key, partition=0, on_delivery=on_delivery)
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.1)
        producer.poll(0)
    producer.flush(TIMEOUT_S)
    # Tansu quirk: ListOffsets "latest" is wrong for a partition whose last batch holds several
    # records, and the pipeline plans its reads from it. The last record goes alone in its own batch.
    key, value = next(workload.records(start + count - 1, 1))
    producer.produce(topic, value, key, partition=0, on_delivery=on_delivery)
    if producer.flush(TIMEOUT_S):
        raise BenchmarkError(f"records to {topic} still undelivered after {TIMEOUT_S:g} s")
    if failures:
        raise BenchmarkError(f"{len(failures)} records to {topic} failed, e.g. {failures[0]}")
    end = log_end_offset(bootstrap, topic)
    if end != start + count:
        raise BenchmarkError(f"{topic} log end is {end} after producing up to offset {start + count}")
    return time.perf_counter() - started


def bare_read(bootstrap: str, topic: str, end_offset: int) -> tuple[int, float]:
    """Read [0, end_offset) with a plain assigned consumer, touching every key and value; (bytes, s)."""
    started = time.perf_counter()
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"offsetlake-bench-bare-{uuid.uuid4()}",  # never joined or committed
            "enable.auto.commit": False,
        }
    )
    payload_bytes = 0
    position = 0
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + TIMEOUT_S
        while position < end_offset:
            if time.monotonic() > deadline:
                raise BenchmarkError(f"bare read of {topic} stalled at offset {position} of {end_offset}")
            for message in consumer.consume(num_messages=BARE_READ_BATCH, timeout=1.0):
                error = message.error()
                if error is not None:
                    raise BenchmarkError(f"bare read of {topic} failed at offset {position}: {error.str()}")
                payload_bytes += len(message.key()) + len(message.value())
                position = message.offset() + 1
                deadline = time.monotonic() + TIMEOUT_S
    finally:
        consumer.close()
    return payload_bytes, time.perf_counter() - started


def timed_pipeline_run(
    label: str, home: Path, pair: ClusterPair, options: argparse.Namespace
) -> PipelineFigures:
    """One pipeline update with peak-memory sampling and a copy of its log; a failed run is raised."""
    brokers = tuple(cluster.pid for cluster in pair if cluster.pid is not None)
    with PeakTreeMemory(excluded=brokers) as peak:
        started = time.perf_counter()
        result = run_pipeline(
            local_pipeline_settings(LocalHome(home)), LocalHome(home), echo=print if options.verbose else None
        )
        wall_s = time.perf_counter() - started
    launched_at = datetime.now() - timedelta(seconds=result.seconds)
    log_copy = options.logs_dir / f"{label.replace(' ', '-')}.log"
    shutil.copyfile(result.log_path, log_copy)
    figures = PipelineFigures(label, result, wall_s, launched_at, log_copy, peak)
    report_run(figures)
    if not result.succeeded:
        tail = "\n".join(log_copy.read_text(errors="replace").splitlines()[-40:])
        raise BenchmarkError(f"pipeline run '{label}' failed: {result.explanation}\nlast lines:\n{tail}")
    return figures


def report_run(figures: PipelineFigures) -> None:
    result = figures.result
    verdict = "succeeded" if result.succeeded else "FAILED"
    print(
        f"  pipeline run [{figures.label}] {verdict}: spark-pipelines {result.seconds:.1f} s "
        f"({result.explanation})"
    )
    print(f"    {figures.phases()}")
    running = sorted(figures.running_seconds().items(), key=lambda item: -item[1])
    print(f"    flow RUNNING -> done, s: {', '.join(f'{flow} {s:.0f}' for flow, s in running) or 'none'}")
    print(f"    peak memory of the process tree (PSS; java RSS): {figures.peak.describe()}")
    print(f"    log: {figures.log_copy}")


def count_tables(home: Path) -> dict[str, int]:
    """Row counts of the tables the benchmark checks, via `offsetlake sql` in its own process
    (the local Derby metastore allows one Spark process at a time)."""
    tables = ("bronze_checkpoints", "silver_checkpoints", "quarantine", "offset_history", "latest_offsets")
    query = "SELECT " + ", ".join(f"(SELECT count(*) FROM offsetlake.{name}) AS {name}" for name in tables)
    completed = subprocess.run(
        [sys.executable, "-m", "offsetlake.cli", "sql", "--json", query],
        env={**os.environ, HOME_ENV: str(home)},
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise BenchmarkError(f"counting the pipeline tables failed:\n{completed.stderr[-3000:]}")
    document = json.loads(completed.stdout.strip().splitlines()[-1])[0]
    return dict(zip(document["columns"], document["rows"][0], strict=True))


def check_landed(home: Path, workload: CheckpointWorkload, records: int) -> None:
    """Every checkpoint in bronze and silver, none quarantined, one history row each, one latest per key."""
    counts = count_tables(home)
    expected = {
        "bronze_checkpoints": records,
        "silver_checkpoints": records,
        "quarantine": 0,
        "offset_history": records,
        "latest_offsets": min(records, workload.keys),
    }
    if counts != expected:
        raise BenchmarkError(f"pipeline tables hold {counts}, expected {expected}")
    print(f"  tables checked: {counts}")


def verdict(ratio: float, target: float) -> str:
    return f"target <= {target:g}: {'MET' if ratio <= target else 'NOT MET'}"


def ingest_benchmark(options: argparse.Namespace) -> None:
    print(f"\n== ingest: {options.records:,} checkpoints, pipeline vs bare confluent-kafka read")
    with tempfile.TemporaryDirectory(prefix="offsetlake-bench-ingest-") as temporary:
        home = Path(temporary)
        with running_clusters(home, preferred_ports=None) as pair:
            settings = local_pipeline_settings(LocalHome(home))
            workload = CheckpointWorkload.for_pipeline(settings, options)
            target = settings.target_bootstrap_servers
            create_checkpoints_topic(target, workload.topic)
            produce_s = produce_checkpoints(target, workload, 0, options.records)
            print(f"  produced {options.records:,} records to {workload.topic} in {produce_s:.1f} s")
            payload_bytes, bare_s = bare_read(target, workload.topic, options.records)
            print(
                f"  bare read: {options.records:,} records ({payload_bytes / 2**20:.1f} MiB of keys+values) "
                f"in {bare_s:.1f} s ({options.records / bare_s:,.0f} records/s)"
            )
            figures = timed_pipeline_run("ingest", home, pair, options)
            check_landed(home, workload, options.records)
    pipeline_s = figures.result.seconds
    startup_s, flows_s = figures.startup_and_flows_seconds()
    ratio = flows_s / bare_s
    print(
        f"RESULT ingest {options.records:,} records: pipeline {pipeline_s:.1f} s "
        f"(start-up {startup_s:.0f} s, flows {flows_s:.0f} s), bare read {bare_s:.1f} s, "
        f"flows/bare = {ratio:.1f} ({verdict(ratio, INGEST_TARGET_RATIO)}), "
        f"pipeline/bare = {pipeline_s / bare_s:.1f}; "
        f"peak memory {figures.peak.peak_mib:.0f} MiB"
    )


def refresh_run(label: str, history: int, options: argparse.Namespace) -> list[PipelineFigures]:
    """Fresh home: land ``history`` checkpoints, then ``--repeat`` times add ``--new`` more and time
    the update that reads them."""
    new = options.new
    print(f"\n== refresh {label}: {history:,} history, then {options.repeat} x {new:,} new checkpoints")
    refreshes: list[PipelineFigures] = []
    with tempfile.TemporaryDirectory(prefix=f"offsetlake-bench-refresh-{label}-") as temporary:
        home = Path(temporary)
        with running_clusters(home, preferred_ports=None) as pair:
            settings = local_pipeline_settings(LocalHome(home))
            workload = CheckpointWorkload.for_pipeline(settings, options)
            target = settings.target_bootstrap_servers
            create_checkpoints_topic(target, workload.topic)
            produce_checkpoints(target, workload, 0, history)
            timed_pipeline_run(f"{label} initial", home, pair, options)
            landed = history
            for round_ in range(1, options.repeat + 1):
                produce_checkpoints(target, workload, landed, new)
                landed += new
                refreshes.append(timed_pipeline_run(f"{label} refresh {round_}", home, pair, options))
            check_landed(home, workload, landed)
    return refreshes


def refresh_benchmark(options: argparse.Namespace) -> None:
    small = refresh_run("A", options.history, options)
    large = refresh_run("B", HISTORY_GROWTH * options.history, options)
    small_s = statistics.median(figures.result.seconds for figures in small)
    large_s = statistics.median(figures.result.seconds for figures in large)
    ratio = large_s / small_s
    for flow in HISTORY_SENSITIVE_FLOWS:
        small_flow = statistics.median(figures.running_seconds().get(flow, 0.0) for figures in small)
        large_flow = statistics.median(figures.running_seconds().get(flow, 0.0) for figures in large)
        print(f"  {flow} RUNNING -> done in the refresh (median): A {small_flow:.0f} s, B {large_flow:.0f} s")
    median = f"median of {options.repeat} " if options.repeat > 1 else ""
    print(
        f"RESULT refresh with {options.new:,} new records ({median}spark-pipelines time): "
        f"A (history {options.history:,}) {small_s:.1f} s, "
        f"B (history {HISTORY_GROWTH * options.history:,}) {large_s:.1f} s, "
        f"B/A = {ratio:.2f} ({verdict(ratio, REFRESH_TARGET_RATIO)}); peak memory "
        f"A {max(f.peak.peak_mib for f in small):.0f} MiB, B {max(f.peak.peak_mib for f in large):.0f} MiB"
    )


def positive_int(text: str) -> int:
    try:
        number = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {number}")
    return number


def parse_options(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--records", type=positive_int, default=1_000_000, help="checkpoints for the ingest run"
    )
    parser.add_argument("--history", type=positive_int, default=100_000, help="history of refresh run A")
    parser.add_argument("--new", type=positive_int, default=10_000, help="new checkpoints in each refresh")
    parser.add_argument(
        "--repeat", type=positive_int, default=1, help="refresh updates per run; their median is compared"
    )
    parser.add_argument("--groups", type=positive_int, default=1_000)
    parser.add_argument("--topics", type=positive_int, default=5, help="topics per group")
    parser.add_argument("--partitions", type=positive_int, default=2, help="partitions per topic")
    parser.add_argument("--skip-ingest", action="store_true")
    parser.add_argument("--skip-refresh", action="store_true")
    parser.add_argument(
        "--logs-dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / f"offsetlake-bench-pipeline-{time.strftime('%Y%m%dT%H%M%S')}",
        help="where each pipeline run's log is kept (the homes are temporary)",
    )
    parser.add_argument("--verbose", action="store_true", help="print the pipeline's progress events")
    options = parser.parse_args(argv)
    if options.skip_ingest and options.skip_refresh:
        parser.error("--skip-ingest and --skip-refresh together leave nothing to measure")
    return options


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    """The brokers run detached: turn SIGTERM into an interrupt so running_clusters stops them."""
    raise KeyboardInterrupt(f"signal {signum}")


def main() -> int:
    options = parse_options()
    signal.signal(signal.SIGTERM, _interrupt)
    options.logs_dir.mkdir(parents=True, exist_ok=True)
    print(
        f"bench_pipeline: records={options.records:,} history={options.history:,} new={options.new:,} "
        f"groups={options.groups:,} topics={options.topics} partitions={options.partitions} "
        f"({options.groups * options.topics * options.partitions:,} checkpoint keys); "
        f"cores={os.cpu_count()}, load average at start {os.getloadavg()[0]:.1f}"
    )
    try:
        if not options.skip_ingest:
            ingest_benchmark(options)
        if not options.skip_refresh:
            refresh_benchmark(options)
    except BenchmarkError as error:
        print(f"BENCHMARK FAILED: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
