"""Benchmark: plan, apply and verify 5,000 groups x 8 partitions on a local target broker.

Starts its own Tansu pair in a temporary home, so it never touches a developer's clusters. The
same work runs twice, on disjoint group names: once with the concurrent executor and once one
group at a time, and the ratio is printed. Gold offsets are built in memory (no Spark), so the
figures are those of the Kafka side: reading the target, planning, altering and reading back.

Then the target stops answering: ``--stall-groups`` groups (default 300) are applied with
``--stall-timeout`` seconds per request (default 5) two at a time, and the broker is paused
(SIGSTOP, resumed with SIGCONT afterwards) once the 30th group is committed. Printed per round:
seconds from the pause to the executor's return, and the outcomes; then the median. Goal (issue
"one bad row never blocks a failover"): about two request timeouts, never one timeout per group.

Then the network: a third broker behind offsetlake_dev.latency_proxy, which delays every byte by
``--delays-ms`` each way (default 0, 2 and 20 ms), takes ``--network-groups`` groups x
``--network-partitions`` partitions (default 1,000 x 100; the issue's scale is 10,000 x 100). Per
delay: reading the target (committed offsets ``READS_IN_FLIGHT`` groups at a time, as the apply job
reads them) and planning, then apply + read-back verify with ``--network-concurrency`` groups at
once, against one group at a time on ``--sequential-sample`` groups (the sequential rate is measured
on the sample and extrapolated: at 20 ms, 10,000 groups one by one take tens of minutes).

Usage: .venv/bin/python benchmarks/bench_apply.py [--groups 5000] [--concurrency 16] [--rounds 3]
       [--delays-ms 0,2,20] [--network-groups 10000] [--network-partitions 100]
"""

from __future__ import annotations

import argparse
import functools
import os
import random
import resource
import signal
import statistics
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from offsetlake.apply.executor import Outcome, execute_plan
from offsetlake.apply.plan_columns import build_plan
from offsetlake.apply.planner import Action, Guards
from offsetlake.apply.target_state import read_target_state
from offsetlake.contract.gold import GoldOffset
from offsetlake.kafka import clients
from offsetlake_dev.latency_proxy import DelayedBroker, delayed_broker
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


def prepare_topics(bootstrap: str, topic_count: int = TOPICS, partitions: int = PARTITIONS) -> list[str]:
    """``topic_count`` topics of ``partitions`` partitions, each holding RECORDS_PER_PARTITION records."""
    return [name for name, _ in prepare_topic_partitions(bootstrap, [partitions] * topic_count)]


def prepare_topic_partitions(bootstrap: str, counts: Sequence[int]) -> list[tuple[str, int]]:
    """A topic per entry of ``counts`` (name, partitions), each partition holding RECORDS_PER_PARTITION
    records."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [(f"bench-{index:03d}", count) for index, count in enumerate(counts)]
    for future in admin.create_topics([NewTopic(topic, count) for topic, count in topics]).values():
        future.result(timeout=TIMEOUT_S)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for topic, count in topics:
        for partition in range(count):
            for _ in range(RECORDS_PER_PARTITION):
                producer.produce(topic, b"x", partition=partition)
                # Tansu quirk: ListOffsets "latest" is wrong after a multi-record batch.
                producer.flush(TIMEOUT_S)
    return topics


def gold_offsets(
    prefix: str, groups: int, topics: list[str], now: datetime, partitions: int = PARTITIONS
) -> list[GoldOffset]:
    """Each group consumed one topic; translations land anywhere in [1, log end] (never 0, so
    every partition of a new group is an alter: the benchmark measures alters, not no-ops)."""
    rng = random.Random(prefix)
    return [
        GoldOffset(
            "bench-source",
            f"{prefix}-{group:05d}",
            topics[group % len(topics)],
            partition,
            rng.randint(1, RECORDS_PER_PARTITION),
            now - timedelta(seconds=30),
            "checkpoint",
        )
        for group in range(groups)
        for partition in range(partitions)
    ]


def run(bootstrap: str, offsets: list[GoldOffset], concurrency: int) -> Figures:
    admin_config = {"bootstrap.servers": bootstrap}
    started = time.perf_counter()
    with clients.admin(admin_config) as admin:
        target = read_target_state(admin, {offset.key for offset in offsets}, timeout_s=TIMEOUT_S)
    read_s = time.perf_counter() - started

    started = time.perf_counter()
    plan = build_plan(offsets, target, Guards(reference_time=datetime.now(UTC)))
    plan_s = time.perf_counter() - started
    unexpected = {row.action for row in plan} - {Action.APPLY, Action.NOOP}
    if unexpected:
        raise RuntimeError(f"benchmark plan has unexpected actions {unexpected}")

    started = time.perf_counter()
    results = execute_plan(
        functools.partial(clients.new_admin, admin_config), plan, timeout_s=TIMEOUT_S, concurrency=concurrency
    ).results
    apply_s = time.perf_counter() - started
    verified = sum(result.outcome is Outcome.APPLIED for result in results)
    if verified != len(results):
        failed = next(result for result in results if result.outcome is not Outcome.APPLIED)
        raise RuntimeError(f"{len(results) - verified} partitions not verified, e.g. {failed}")
    groups = len({offset.consumer_group for offset in offsets})
    return Figures(groups, len(plan), read_s, plan_s, apply_s, verified)


def network(options: argparse.Namespace, logs_dir: Path) -> None:
    """Concurrent against sequential apply through the latency proxy, per delay."""
    topic_count = max(1, min(options.network_groups, 10))
    with delayed_broker(logs_dir) as broker:
        started = time.perf_counter()
        topics = prepare_topics(broker.bootstrap_servers, topic_count, options.network_partitions)
        print(
            f"\nnetwork: target behind a latency proxy ({broker.bootstrap_servers}): {topic_count} topics x "
            f"{options.network_partitions} partitions ready in {time.perf_counter() - started:.1f} s"
        )
        now = datetime.now(UTC)
        for delay_ms in options.delays_ms:
            network_round(options, broker, topics, now, delay_ms)


def network_round(
    options: argparse.Namespace, broker: DelayedBroker, topics: list[str], now: datetime, delay_ms: float
) -> None:
    broker.proxy.delay_s = delay_ms / 1000
    bootstrap, partitions = broker.bootstrap_servers, options.network_partitions
    offsets = gold_offsets(f"net-{delay_ms:g}ms", options.network_groups, topics, now, partitions)
    concurrent = run(bootstrap, offsets, options.network_concurrency)
    sample = gold_offsets(f"net-seq-{delay_ms:g}ms", options.sequential_sample, topics, now, partitions)
    sequential = run(bootstrap, sample, 1)
    per_group_concurrent = concurrent.apply_verify_s / concurrent.groups
    per_group_sequential = sequential.apply_verify_s / sequential.groups
    print(
        f"delay {delay_ms:g} ms each way: {concurrent.groups} groups x {partitions} partitions "
        f"({concurrent.partitions} group-partitions): read target + plan "
        f"{concurrent.read_target_s + concurrent.plan_s:.1f} s (read {concurrent.read_target_s:.1f}, "
        f"plan {concurrent.plan_s:.1f}); apply+verify {concurrent.apply_verify_s:.1f} s with "
        f"{options.network_concurrency} at once; one at a time {per_group_sequential * 1000:.1f} ms/group "
        f"on {sequential.groups} groups (all {concurrent.groups}: "
        f"~{per_group_sequential * concurrent.groups:.0f} s); "
        f"speed-up {per_group_sequential / per_group_concurrent:.1f}x"
    )


def report(label: str, figures: Figures) -> None:
    print(
        f"{label:<28} {figures.groups} groups / {figures.partitions} partitions: "
        f"read target {figures.read_target_s:6.2f} s, plan {figures.plan_s:5.2f} s, "
        f"apply+verify {figures.apply_verify_s:6.2f} s ({figures.verified} verified) -> "
        f"{figures.groups_per_s:7.1f} groups/s"
    )


def stall(
    bootstrap: str, broker_pid: int, offsets: list[GoldOffset], timeout_s: float
) -> tuple[float, Counter[str]]:
    """Seconds from pausing the target mid-apply to the executor's return, and the outcomes."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    target = read_target_state(admin, {offset.key for offset in offsets}, timeout_s=TIMEOUT_S)
    plan = build_plan(offsets, target, Guards(reference_time=datetime.now(UTC)))
    watched = sorted({offset.consumer_group for offset in offsets})[30]
    paused_at: list[float] = []
    watcher_admin = AdminClient({"bootstrap.servers": bootstrap})

    def pause_when_committed() -> None:
        topic = next(offset.topic for offset in offsets if offset.consumer_group == watched)
        request = ConsumerGroupTopicPartitions(watched, [TopicPartition(topic, 0)])
        while True:
            listed = watcher_admin.list_consumer_group_offsets([request])[watched].result(timeout=TIMEOUT_S)
            if any(tp.offset >= 0 for tp in listed.topic_partitions):
                os.kill(broker_pid, signal.SIGSTOP)
                paused_at.append(time.monotonic())
                return
            time.sleep(0.05)

    watcher = threading.Thread(target=pause_when_committed, daemon=True)
    watcher.start()
    try:
        execution = execute_plan(
            functools.partial(clients.new_admin, {"bootstrap.servers": bootstrap}),
            plan,
            timeout_s=timeout_s,
            concurrency=2,
        )
        returned_at = time.monotonic()
        watcher.join(timeout=5)
    finally:
        os.kill(broker_pid, signal.SIGCONT)
    if not paused_at:
        raise RuntimeError("the apply finished before the target was paused; use more --stall-groups")
    return returned_at - paused_at[0], Counter(result.outcome.value for result in execution.results)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--groups", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--stall-groups", type=int, default=300)
    parser.add_argument("--stall-timeout", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--delays-ms", type=lambda text: [float(part) for part in text.split(",")], default=[0.0, 2.0, 20.0]
    )
    parser.add_argument("--network-groups", type=int, default=1000)
    parser.add_argument("--network-partitions", type=int, default=100)
    parser.add_argument("--network-concurrency", type=int, default=64)
    parser.add_argument("--sequential-sample", type=int, default=50)
    parser.add_argument("--skip-local", action="store_true", help="only the network scenario")
    options = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="offsetlake-bench-") as home:
        if not options.skip_local:
            local(options, Path(home))
        network(options, Path(home) / "logs")
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


def local(options: argparse.Namespace, home: Path) -> None:
    """Concurrent against sequential on loopback, then the stalled target."""
    with running_clusters(home, preferred_ports=None) as pair:
        bootstrap = pair.target.bootstrap_servers
        started = time.perf_counter()
        topics = prepare_topics(bootstrap)
        ready_s = time.perf_counter() - started
        print(f"target {bootstrap}: {TOPICS} topics x {PARTITIONS} partitions ready in {ready_s:.1f} s")
        now = datetime.now(UTC)
        concurrent = run(
            bootstrap, gold_offsets("bench-concurrent", options.groups, topics, now), options.concurrency
        )
        report(f"concurrent ({options.concurrency} at once)", concurrent)
        sequential = run(bootstrap, gold_offsets("bench-sequential", options.groups, topics, now), 1)
        report("sequential (1 at a time)", sequential)
        print(f"speed-up concurrent / sequential: {concurrent.groups_per_s / sequential.groups_per_s:.1f}x")
        broker_pid = pair.target.pid
        if broker_pid is None:
            raise RuntimeError("the local target broker has no PID to pause")
        stalls = []
        for round_number in range(options.rounds):
            stalled = gold_offsets(f"bench-stall-{round_number}", options.stall_groups, topics, now)
            seconds, outcomes = stall(bootstrap, broker_pid, stalled, options.stall_timeout)
            stalls.append(seconds)
            print(
                f"target paused mid-apply (round {round_number + 1}): returned {seconds:.1f} s after the "
                f"pause (--timeout {options.stall_timeout:g}); outcomes {dict(sorted(outcomes.items()))}"
            )
        print(
            f"median {statistics.median(stalls):.1f} s from pause to return = "
            f"{statistics.median(stalls) / options.stall_timeout:.1f} request timeouts"
        )


if __name__ == "__main__":
    main()
