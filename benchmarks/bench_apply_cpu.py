"""Benchmark: where apply + verify's time goes at issue 50's scale, in CPU seconds of the client and
of the target broker.

Issue 50 asks apply + verify of 46,000 group-partitions (10,000 groups) in 3 s on loopback. The
executor sends three requests a group (the group's state read again right before its alter, the
alter, the read-back; Kafka has no multi-group OffsetCommit and librdkafka sends one group per
DescribeGroups and OffsetFetch), and on this machine the client and the brokers share 2 cores: the
figure is bounded by the CPU both need, which this benchmark prints.

A private Tansu pair (temporary home); on its target ``--topics`` topics of 23 partitions between
them (5, 5, 5, 4, 4 as bench_failover_scale.py), group ``n`` has every partition of topic ``n mod
topics`` in its plan. Gold offsets are built in memory (no Spark). Per ``--rounds`` round, on new
group names: the whole executor (``execute_plan`` with the product's ``--concurrency``), then each
of its three requests alone over the same groups with the executor's pool (that many workers, a
batch of GROUPS_PER_BATCH groups each). Printed for each: wall time, this process's CPU (user +
system, librdkafka's threads included), the target broker's CPU (/proc/<pid>/stat), and CPU per
request. The first round meets an empty target; later rounds a target holding the earlier rounds'
groups (Tansu's requests cost more as it holds more groups). Everything runs with Python's cyclic
collector paused, as ``run_apply`` runs the executor (offsetlake.cyclic_gc; ``--collector running``
to compare).

Usage: .venv/bin/python benchmarks/bench_apply_cpu.py [--groups 10000] [--rounds 2] [--load second-pipeline]
       [--collector running]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import resource
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from confluent_kafka.admin import AdminClient

from bench_apply import RECORDS_PER_PARTITION as RECORDS
from bench_apply import prepare_topic_partitions
from bench_failover import PairFlags, _commit, load
from offsetlake import cyclic_gc
from offsetlake.apply.executor import GROUPS_PER_BATCH, Outcome, execute_plan
from offsetlake.apply.plan_columns import build_plan
from offsetlake.apply.planner import Guards, PlanRow
from offsetlake.apply.run import DEFAULT_CONCURRENCY
from offsetlake.apply.target_state import read_target_state
from offsetlake.contract.gold import GoldOffset
from offsetlake.kafka import admin as kafka_admin
from offsetlake.kafka import clients
from offsetlake.mirror.positions import CommittedOffset, TopicPartitionKey
from offsetlake_dev.local_cluster import running_clusters

PARTITIONS = (5, 5, 5, 4, 4)
TIMEOUT_S = 30.0
_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Cpu:
    wall_s: float
    client_s: float
    broker_s: float

    def line(self, label: str, requests: int) -> str:
        per_request = (self.client_s + self.broker_s) / max(1, requests) * 1000
        return (
            f"  {label:<40} wall {self.wall_s:5.2f} s; client CPU {self.client_s:5.2f} s, broker CPU "
            f"{self.broker_s:5.2f} s = {self.client_s + self.broker_s:5.2f} CPU-s over {requests:,} "
            f"requests ({per_request:.2f} ms a request)"
        )


def _broker_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def _client_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@contextmanager
def measured(broker_pid: int, into: list[Cpu]) -> Iterator[None]:
    wall, client, broker = time.perf_counter(), _client_cpu_s(), _broker_cpu_s(broker_pid)
    yield
    into.append(Cpu(time.perf_counter() - wall, _client_cpu_s() - client, _broker_cpu_s(broker_pid) - broker))


def plan_of(bootstrap: str, prefix: str, groups: int, topics: list[tuple[str, int]]) -> tuple[PlanRow, ...]:
    """Every group's partitions at an offset in [1, RECORDS], all of them alters."""
    now = datetime.now(UTC)
    offsets = [
        GoldOffset("east", f"{prefix}-{group:05d}", name, partition, 1 + (group + partition) % RECORDS,
                   now - timedelta(seconds=30), "checkpoint")
        for group in range(groups)
        for name, count in [topics[group % len(topics)]]
        for partition in range(count)
    ]  # fmt: skip
    with clients.admin({"bootstrap.servers": bootstrap}) as admin:
        target = read_target_state(admin, {offset.key for offset in offsets}, timeout_s=TIMEOUT_S)
    return build_plan(offsets, target, Guards(reference_time=now))


def each_request(
    bootstrap: str,
    plan: tuple[PlanRow, ...],
    step: Callable[[AdminClient, dict[str, dict[TopicPartitionKey, CommittedOffset]]], object],
) -> None:
    """``step`` over every group of ``plan``, batches of GROUPS_PER_BATCH on the executor's workers."""
    groups: dict[str, dict[TopicPartitionKey, CommittedOffset]] = {}
    for row in plan:
        groups.setdefault(row.consumer_group, {})[(row.topic, row.partition)] = CommittedOffset(
            row.planned_offset
        )
    names = sorted(groups)
    batches = [names[start : start + GROUPS_PER_BATCH] for start in range(0, len(names), GROUPS_PER_BATCH)]
    admins = [clients.new_admin({"bootstrap.servers": bootstrap}) for _ in range(DEFAULT_CONCURRENCY)]
    with ThreadPoolExecutor(DEFAULT_CONCURRENCY) as pool:
        list(
            pool.map(
                lambda numbered: step(
                    admins[numbered[0] % len(admins)], {name: groups[name] for name in numbered[1]}
                ),
                enumerate(batches),
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--load",
        choices=["idle", "second-pipeline"],
        default="idle",
        help="second-pipeline: `offsetlake pipeline run` on another home against the same pair, again "
        "and again, while every round is measured",
    )
    parser.add_argument(
        "--collector",
        choices=["paused", "running"],
        default="paused",
        help="Python's cyclic collector: paused, as run_apply runs the executor (the default), or running",
    )
    options = parser.parse_args()
    timeout = TIMEOUT_S
    steps: dict[str, Callable[[AdminClient, dict], object]] = {
        "state read again (DescribeGroups)": lambda admin, batch: kafka_admin.describe_groups(
            admin, list(batch), timeout_s=timeout
        ),
        "alter (OffsetCommit)": lambda admin, batch: kafka_admin.alter_committed_offsets_of_each(
            admin, batch, timeout_s=timeout
        ),
        "read-back (OffsetFetch)": lambda admin, batch: kafka_admin.list_committed_offsets_of_each(
            admin, {group: list(offsets) for group, offsets in batch.items()}, timeout_s=timeout
        ),
    }
    with (
        tempfile.TemporaryDirectory(prefix="offsetlake-bench-") as home,
        running_clusters(Path(home), preferred_ports=None) as pair,
        load(options.load, PairFlags(pair), cpu_hogs=0),
        cyclic_gc.paused() if options.collector == "paused" else contextlib.nullcontext(),
    ):
        bootstrap, broker = pair.target.bootstrap_servers, pair.target.pid
        if broker is None:
            raise RuntimeError("the local target broker has no PID")
        topics = prepare_topic_partitions(bootstrap, PARTITIONS)
        print(
            f"apply + verify, CPU: {options.groups:,} groups, {len(topics)} topics "
            f"({'+'.join(map(str, PARTITIONS))} partitions), concurrency {DEFAULT_CONCURRENCY}, "
            f"{GROUPS_PER_BATCH} groups a batch; collector {options.collector}; load {options.load}; "
            f"commit {_commit()}; "
            f"{os.cpu_count()} cores; load average {' '.join(f'{value:.2f}' for value in os.getloadavg())}"
        )
        for round_number in range(options.rounds):
            plan = plan_of(bootstrap, f"round{round_number}", options.groups, topics)
            groups = len({row.consumer_group for row in plan})
            figures: list[Cpu] = []
            with measured(broker, figures):
                execution = execute_plan(
                    functools.partial(clients.new_admin, {"bootstrap.servers": bootstrap}),
                    plan,
                    timeout_s=TIMEOUT_S,
                    concurrency=DEFAULT_CONCURRENCY,
                )
            verified = sum(result.outcome is Outcome.APPLIED for result in execution.results)
            print(
                f"round {round_number + 1} ({groups:,} groups, {len(plan):,} group-partitions, "
                f"{verified:,} verified; the target held {round_number * groups:,} groups before):"
            )
            print(figures[0].line("execute_plan (all three)", 3 * groups))
            for label, step in steps.items():
                with measured(broker, figures):
                    each_request(bootstrap, plan, step)
                print(figures[-1].line(label + " alone", groups))


if __name__ == "__main__":
    main()
