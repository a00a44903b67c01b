"""Benchmark: plan, apply and verify 5,000 groups x 8 partitions on a local target broker.

Starts its own Tansu pair in a temporary home, so it never touches a developer's clusters. The
same work runs twice, on disjoint group names: once with the concurrent executor and once one
group at a time, and the ratio is printed. Gold offsets are built in memory (no Spark), so the
figures are those of the Kafka side: reading the target, planning, altering and reading back.

Usage: .venv/bin/python benchmarks/bench_apply.py [--groups 5000] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import random
import resource
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from offsetlake.apply.executor import Outcome, execute_plan
from offsetlake.apply.planner import Action, GoldOffset, Guards, build_plan
from offsetlake.apply.target_state import read_target_state
from offsetlake_dev.local_cluster import running_clusters

PARTITIONS = 8
TOPICS = 50
RECORDS_PER_PARTITION = 4
TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Figures:
    groups: int
    partitions: int
    read_target_s: float
    plan_s: float
    apply_verify_s: float
    verified: int

    @property
    def total_s(self) -> float:
        return self.read_target_s + self.plan_s + self.apply_verify_s

    @property
    def groups_per_s(self) -> float:
        return self.groups / self.total_s


def prepare_topics(bootstrap: str) -> list[str]:
    """TOPICS topics of PARTITIONS partitions, each holding RECORDS_PER_PARTITION records."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [f"bench-{index:03d}" for index in range(TOPICS)]
    for future in admin.create_topics([NewTopic(topic, PARTITIONS) for topic in topics]).values():
        future.result(timeout=TIMEOUT_S)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for topic in topics:
        for partition in range(PARTITIONS):
            for _ in range(RECORDS_PER_PARTITION):
                producer.produce(topic, b"x", partition=partition)
                # Tansu quirk: ListOffsets "latest" is wrong after a multi-record batch.
                producer.flush(TIMEOUT_S)
    return topics


def gold_offsets(prefix: str, groups: int, topics: list[str], now: datetime) -> list[GoldOffset]:
    """Each group consumed one topic; translations land anywhere in [0, log end]."""
    rng = random.Random(prefix)
    return [
        GoldOffset(
            "bench-source",
            f"{prefix}-{group:05d}",
            topics[group % len(topics)],
            partition,
            rng.randint(0, RECORDS_PER_PARTITION),
            now - timedelta(seconds=30),
            "checkpoint",
        )
        for group in range(groups)
        for partition in range(PARTITIONS)
    ]


def run(admin: AdminClient, offsets: list[GoldOffset], concurrency: int) -> Figures:
    started = time.perf_counter()
    target = read_target_state(
        admin, {offset.key for offset in offsets}, timeout_s=TIMEOUT_S, concurrency=concurrency
    )
    read_s = time.perf_counter() - started

    started = time.perf_counter()
    plan = build_plan(offsets, target, Guards(reference_time=datetime.now(UTC)))
    plan_s = time.perf_counter() - started
    unexpected = {row.action for row in plan} - {Action.APPLY, Action.NOOP}
    if unexpected:
        raise RuntimeError(f"benchmark plan has unexpected actions {unexpected}")

    started = time.perf_counter()
    results = execute_plan(admin, plan, run_id="bench", timeout_s=TIMEOUT_S, concurrency=concurrency)
    apply_s = time.perf_counter() - started
    verified = sum(result.outcome is Outcome.APPLIED for result in results)
    if verified != len(results):
        failed = next(result for result in results if result.outcome is not Outcome.APPLIED)
        raise RuntimeError(f"{len(results) - verified} partitions not verified, e.g. {failed}")
    groups = len({offset.consumer_group for offset in offsets})
    return Figures(groups, len(plan), read_s, plan_s, apply_s, verified)


def report(label: str, figures: Figures) -> None:
    print(
        f"{label:<28} {figures.groups} groups / {figures.partitions} partitions: "
        f"read target {figures.read_target_s:6.2f} s, plan {figures.plan_s:5.2f} s, "
        f"apply+verify {figures.apply_verify_s:6.2f} s ({figures.verified} verified) -> "
        f"{figures.groups_per_s:7.1f} groups/s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--groups", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=16)
    options = parser.parse_args()

    with (
        tempfile.TemporaryDirectory(prefix="offsetlake-bench-") as home,
        running_clusters(Path(home), preferred_ports=None) as pair,
    ):
        bootstrap = pair.target.bootstrap_servers
        started = time.perf_counter()
        topics = prepare_topics(bootstrap)
        ready_s = time.perf_counter() - started
        print(f"target {bootstrap}: {TOPICS} topics x {PARTITIONS} partitions ready in {ready_s:.1f} s")
        admin = AdminClient({"bootstrap.servers": bootstrap})
        now = datetime.now(UTC)
        concurrent = run(
            admin, gold_offsets("bench-concurrent", options.groups, topics, now), options.concurrency
        )
        report(f"concurrent ({options.concurrency} at once)", concurrent)
        sequential = run(admin, gold_offsets("bench-sequential", options.groups, topics, now), 1)
        report("sequential (1 at a time)", sequential)
    print(f"speed-up concurrent / sequential: {concurrent.groups_per_s / sequential.groups_per_s:.1f}x")
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
