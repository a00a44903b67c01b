"""Benchmark: does a refresh cost follow the new data as gold's history grows? Rounds of MM2 output.

Each round moves every group: on the source cluster every group commits a new offset on every
partition (``--groups`` x ``--topics`` x ``--partitions`` group-partitions) and MM2's offset-syncs
topic gets one sync per partition; on the target MM2 checkpoints every group-partition. Then one
pipeline update (``run_pipeline``: snapshot, checkpoints, syncs, translation, gold). ``--rounds``
(at least 5) such rounds run on one Tansu pair in a temporary home.

Per round it prints the update time (spark-pipelines, start-up included and apart), each flow
from RUNNING to done, the gold flows' sum and the peak memory of the process tree (brokers left
out). At the end: per flow and in total, the ratio last round / second round (goal <= 1.2, first
bar 1.5; the first round also creates every table, so the second is the baseline). After the last
round the tables are counted: bronze/silver hold every checkpoint, translation_observations one
per checkpoint and one per snapshotted group-partition, offset_history one version per group-
partition, method and round, latest_offsets one row per group-partition.

Usage: .venv/bin/python benchmarks/bench_gold_scale.py [--groups 10000] [--topics 10]
       [--partitions 10] [--rounds 5] [--logs-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import FrameType
from typing import Final

from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench_pipeline import (
    BenchmarkError,
    CheckpointWorkload,
    PipelineFigures,
    create_checkpoints_topic,
    produce_checkpoints,
    timed_pipeline_run,
)
from offsetlake.codecs.mm2 import OffsetSync, encode_offset_sync
from offsetlake.local.clusters import local_pipeline_settings
from offsetlake.local.home import HOME_ENV, LocalHome
from offsetlake_dev.local_cluster import running_clusters

TIMEOUT_S: Final = 120.0
GOAL_RATIO: Final = 1.2
FIRST_BAR_RATIO: Final = 1.5
GOLD_FLOWS: Final = ("translation_observations", "offset_versions", "offset_history", "latest_offsets")
COMMIT_CONCURRENCY: Final = 16


def source_topics(workload: CheckpointWorkload) -> list[str]:
    return [f"orders-{topic:02d}" for topic in range(workload.topics)]


def commit_round(bootstrap: str, workload: CheckpointWorkload, round_: int) -> float:
    """Every group commits, on every partition, the upstream offset its checkpoint of this round has."""
    started = time.perf_counter()
    admin = AdminClient({"bootstrap.servers": bootstrap})
    per_group = workload.topics * workload.partitions
    first = round_ * workload.keys

    def commit(group: int) -> None:
        offsets = []
        names = source_topics(workload)
        for topic_partition in range(per_group):
            checkpoint = workload.checkpoint(first + group * per_group + topic_partition)
            topic = names[topic_partition // workload.partitions]
            offsets.append(TopicPartition(topic, checkpoint.partition, checkpoint.upstream_offset))
        request = ConsumerGroupTopicPartitions(f"bench-group-{group:05d}", offsets)
        for future in admin.alter_consumer_group_offsets([request], request_timeout=TIMEOUT_S).values():
            future.result(timeout=TIMEOUT_S)

    with ThreadPoolExecutor(COMMIT_CONCURRENCY) as pool:
        list(pool.map(commit, range(workload.groups)))
    return time.perf_counter() - started


def produce_syncs(bootstrap: str, topic: str, workload: CheckpointWorkload, round_: int) -> None:
    """One sync per source partition at this round's lowest upstream offset (offset syncs are sparse)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    upstream = (round_ + 1) * 1_000
    for name in source_topics(workload):
        for partition in range(workload.partitions):
            key, value = encode_offset_sync(OffsetSync(name, partition, upstream, upstream - 3))
            producer.produce(topic, value, key, partition=0)
            producer.flush(TIMEOUT_S)  # one record per batch: Tansu's log end is right only then


def count(home: Path) -> dict[str, int]:
    tables = (
        "bronze_checkpoints",
        "silver_checkpoints",
        "quarantine",
        "translation_observations",
        "offset_history",
        "latest_offsets",
    )
    query = "SELECT " + ", ".join(f"(SELECT count(*) FROM offsetlake.{name}) AS {name}" for name in tables)
    completed = subprocess.run(
        [sys.executable, "-m", "offsetlake.cli", "sql", "--json", query],
        env={**os.environ, HOME_ENV: str(home)},
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise BenchmarkError(f"counting the tables failed:\n{completed.stderr[-3000:]}")
    document = json.loads(completed.stdout.strip().splitlines()[-1])[0]
    return dict(zip(document["columns"], document["rows"][0], strict=True))


def check_counts(home: Path, workload: CheckpointWorkload, rounds: int) -> None:
    keys = workload.keys
    expected = {
        "bronze_checkpoints": keys * rounds,
        "silver_checkpoints": keys * rounds,
        "quarantine": 0,
        # Every checkpoint, and every snapshotted group-partition translated by a sync, each round.
        "translation_observations": 2 * keys * rounds,
        # Every round changes every translation of both methods.
        "offset_history": 2 * keys * rounds,
        "latest_offsets": keys,
    }
    counts = count(home)
    if counts != expected:
        raise BenchmarkError(f"tables hold {counts}, expected {expected}")
    print(f"  tables checked: {counts}")


def gold_seconds(figures: PipelineFigures) -> float:
    running = figures.running_seconds()
    return sum(running.get(flow, 0.0) for flow in GOLD_FLOWS)


def report_ratios(rounds: list[PipelineFigures]) -> None:
    second, last = rounds[1], rounds[-1]
    flows = sorted(set(second.running_seconds()) | set(last.running_seconds()))
    print("\n  flow RUNNING -> done, s, by round:")
    for flow in flows:
        times = [figures.running_seconds().get(flow, 0.0) for figures in rounds]
        print(f"    {flow:32s} " + " ".join(f"{t:5.0f}" for t in times))
    for label, value in (
        ("update (spark-pipelines)", lambda f: f.result.seconds),
        ("gold flows (sum)", gold_seconds),
    ):
        first_s, last_s = value(second), value(last)
        ratio = last_s / first_s if first_s else float("inf")
        verdict = (
            "MET" if ratio <= GOAL_RATIO else ("first bar met" if ratio <= FIRST_BAR_RATIO else "NOT MET")
        )
        print(
            f"RESULT {label}: round 2 {first_s:.1f} s, round {len(rounds)} {last_s:.1f} s, "
            f"last/second = {ratio:.2f} (goal <= {GOAL_RATIO}, first bar {FIRST_BAR_RATIO}: {verdict})"
        )
    print(f"RESULT peak memory of the process tree: {max(f.peak.peak_mib for f in rounds):.0f} MiB")
    print(f"RESULT median update time: {statistics.median(f.result.seconds for f in rounds):.1f} s")


def run(options: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="offsetlake-bench-gold-scale-") as temporary:
        home = Path(temporary)
        with running_clusters(home, preferred_ports=None) as pair:
            settings = local_pipeline_settings(LocalHome(home))
            workload = CheckpointWorkload.for_pipeline(settings, options)
            source, target = settings.sources[0].bootstrap_servers, settings.target_bootstrap_servers
            create_checkpoints_topic(target, workload.topic)
            admin = AdminClient({"bootstrap.servers": source})
            syncs_topic = settings.policy.offset_syncs_topic(settings.target_alias)
            topics = [NewTopic(name, workload.partitions) for name in source_topics(workload)]
            for future in admin.create_topics([*topics, NewTopic(syncs_topic, 1)]).values():
                future.result(timeout=TIMEOUT_S)
            rounds: list[PipelineFigures] = []
            for round_ in range(options.rounds):
                commit_s = commit_round(source, workload, round_)
                produce_syncs(source, syncs_topic, workload, round_)
                produce_s = produce_checkpoints(target, workload, round_ * workload.keys, workload.keys)
                print(
                    f"\n== round {round_ + 1}: committed {workload.keys:,} offsets in {commit_s:.1f} s, "
                    f"produced {workload.keys:,} checkpoints in {produce_s:.1f} s"
                )
                figures = timed_pipeline_run(f"round {round_ + 1}", home, pair, options)
                print(f"    gold flows (sum of RUNNING -> done): {gold_seconds(figures):.0f} s")
                rounds.append(figures)
            check_counts(home, workload, options.rounds)
    report_ratios(rounds)


def at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        number = int(text.replace("_", ""))
        if number < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {number}")
        return number

    return parse


def parse_options(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--groups", type=at_least(1), default=10_000)
    parser.add_argument("--topics", type=at_least(1), default=10, help="source topics each group reads")
    parser.add_argument("--partitions", type=at_least(1), default=10, help="partitions per topic")
    parser.add_argument("--rounds", type=at_least(5), default=5)
    parser.add_argument(
        "--logs-dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / f"offsetlake-bench-gold-scale-{time.strftime('%Y%m%dT%H%M%S')}",
    )
    parser.add_argument("--verbose", action="store_true", help="print the pipeline's progress events")
    return parser.parse_args(argv)


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    """The brokers run detached: turn SIGTERM into an interrupt so running_clusters stops them."""
    raise KeyboardInterrupt(f"signal {signum}")


def main() -> int:
    options = parse_options()
    signal.signal(signal.SIGTERM, _interrupt)
    options.logs_dir.mkdir(parents=True, exist_ok=True)
    keys = options.groups * options.topics * options.partitions
    print(
        f"bench_gold_scale: groups={options.groups:,} topics={options.topics} "
        f"partitions={options.partitions} "
        f"({keys:,} group-partitions) rounds={options.rounds}; cores={os.cpu_count()}, "
        f"load average at start {os.getloadavg()[0]:.1f}"
    )
    try:
        run(options)
    except BenchmarkError as error:
        print(f"BENCHMARK FAILED: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
