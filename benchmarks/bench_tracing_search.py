"""Benchmark: translating from K2K's record-tracing headers (offsetlake.kafka.tracing_reader).

Starts the local broker pair and fills ``--partitions`` partitions of one target topic with
``--records`` records each, laid out as K2K leaves them: ``--preexisting`` records without headers
first (data the target held before), then the traced records of source orders[p] with a gap every
7th source offset (filtered records, transaction markers), a record of another source partition
every 5th target offset. Then translates ``--positions`` distinct committed positions per partition
(spread over the whole source range: ``--partitions`` x ``--positions`` group-partitions) in one
call, as the pipeline's driver searches one snapshot, ``--repeat`` times. It prints, per
group-partition, the probes (positioned reads) and the records read sequentially, the time, the
whole call, and how many answers differ from the brute-force rule (largest traced source offset
<= U, + 1 when not exact). Beside it, ``--alone`` positions each searched in a call of its own (one
search per group-partition, as before the batched search; timed without the call's consumer
set-up, as the old per-search figure was) give the ratio.

Usage: .venv/bin/python benchmarks/bench_tracing_search.py [--partitions 10] [--records 100000]
       [--preexisting 1000] [--positions 1000] [--repeat 3] [--concurrency 4] [--alone 20]
"""

from __future__ import annotations

import argparse
import bisect
import os
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from offsetlake.k2k.tracing import TracingHeaderNames
from offsetlake.kafka.tracing_reader import (
    SearchLimits,
    TracingRequest,
    TracingResult,
    translate_from_tracing_headers,
)
from offsetlake_dev.local_cluster import running_clusters

TOPIC = "east.orders"


@dataclass(frozen=True)
class Traced:
    """One partition's traced records of its own source partition, for the brute-force rule."""

    sources: list[int]
    targets: list[int]

    def expected(self, upstream: int) -> int | None:
        index = bisect.bisect_right(self.sources, upstream) - 1
        if index < 0:
            return None
        return self.targets[index] if self.sources[index] == upstream else self.targets[index] + 1


def fill(bootstrap: str, partitions: int, records: int, preexisting: int) -> list[Traced]:
    """Every partition's records, produced in large batches; its traced records of orders[p]."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, partitions)])[TOPIC].result(timeout=30)
    time.sleep(1)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 50,
            "batch.num.messages": 10_000,
            "batch.size": 4_000_000,
        }
    )
    filled: list[Traced] = []
    for partition in range(partitions):
        traced = Traced([], [])
        source, other = 0, 0
        for target in range(records):
            if target < preexisting:
                headers = None
            elif target % 5 == 0:
                headers = [
                    ("k2k_topic", b"payments"),
                    ("k2k_partition", str(partition).encode()),
                    ("k2k_offset", str(other).encode()),
                ]
                other += 1
            else:
                if source % 7 == 6:
                    source += 1  # a source offset that never reaches the target
                headers = [
                    ("k2k_topic", b"orders"),
                    ("k2k_partition", str(partition).encode()),
                    ("k2k_offset", str(source).encode()),
                ]
                traced.sources.append(source)
                traced.targets.append(target)
                source += 1
            if target == records - 1:
                producer.flush(120)  # Tansu: the last batch must hold one record for ListOffsets "latest"
            producer.produce(TOPIC, value=b"x" * 100, partition=partition, headers=headers)
            if target % 10_000 == 0:
                producer.poll(0)
        producer.flush(120)
        filled.append(traced)
    return filled


def share(results: list[TracingResult]) -> tuple[int, int, int, list[float]]:
    """Probes, records read sequentially, group-partitions, and each partition's seconds."""
    costs = {
        (r.request.target_topic, r.request.target_partition, r.request.source_partition): r.cost
        for r in results
    }
    probes, scanned = sum(c.probes for c in costs.values()), sum(c.scanned for c in costs.values())
    return probes, scanned, len(results), [c.seconds for c in costs.values()]


def measure(bootstrap: str, options: argparse.Namespace) -> int:
    """Fill the partitions, search them, print the figures; the number of wrong answers."""
    started = time.monotonic()
    filled = fill(bootstrap, options.partitions, options.records, options.preexisting)
    filled_s = time.monotonic() - started
    total = options.partitions * options.records
    print(
        f"filled {options.partitions} x {options.records:,} = {total:,} records in {filled_s:.1f}s",
        flush=True,
    )
    requests = [
        TracingRequest(TOPIC, partition, "orders", partition, upstream)
        for partition, traced in enumerate(filled)
        for upstream in random.sample(range(traced.sources[-1] + 2), options.positions)
    ]
    config = {"bootstrap.servers": bootstrap}
    limits = SearchLimits(timeout_s=options.timeout, concurrency=options.concurrency)
    names = TracingHeaderNames()
    calls, wrong, reasons = [], 0, 0
    probes = scanned = positions = 0
    partition_s: list[float] = []
    for _ in range(options.repeat):
        started = time.monotonic()
        results = translate_from_tracing_headers(config, requests, names, limits)
        calls.append(time.monotonic() - started)
        probes, scanned, positions, seconds = share(results)
        partition_s += seconds
        wrong += sum(
            result.translation.downstream_offset
            != filled[result.request.target_partition].expected(result.request.upstream_offset)
            for result in results
        )
        reasons += sum(result.translation.reason is not None for result in results)
        print(f"  call: {calls[-1]:.2f}s", flush=True)
    call_s = statistics.median(calls)
    runs = ", ".join(f"{call:.2f}" for call in calls)
    print(
        f"group-partitions per call: {positions:,} ({options.partitions} partitions x {options.positions:,})"
    )
    print(f"call ({options.concurrency} at once): median {call_s:.2f}s; runs {runs}")
    print(f"per group-partition: {call_s / positions * 1000:.2f} ms")
    print(
        f"per partition (its time, a sequential read's wait for its turn included): "
        f"median {statistics.median(partition_s):.2f}s, max {max(partition_s):.2f}s"
    )
    print(
        f"per group-partition: {probes / positions:.3f} probes, {scanned / positions:,.1f} records read "
        f"sequentially ({probes:,} probes, {scanned:,} records in all)"
    )
    alone = [random.choice(requests) for _ in range(options.alone)]
    alone_s, alone_probes = [], []
    for request in alone:
        [result] = translate_from_tracing_headers(config, [request], names, limits)
        alone_s.append(result.seconds)  # from the search's start: its consumer's set-up left out
        alone_probes.append(result.cost.probes)
        wrong += result.translation.downstream_offset != filled[request.target_partition].expected(
            request.upstream_offset
        )
    if alone:
        alone_ms = statistics.median(alone_s) * 1000
        print(
            f"alone ({len(alone)} group-partitions, one call each): median {alone_ms:.1f} ms, "
            f"probes median {statistics.median(alone_probes):.0f}; "
            f"alone / together per group-partition: {alone_ms / (call_s / positions * 1000):.0f}x"
        )
    print(f"answers with a reason: {reasons}; differing from the brute-force rule: {wrong}")
    return wrong


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--records", type=int, default=100_000, help="records per partition")
    parser.add_argument("--preexisting", type=int, default=1000)
    parser.add_argument("--positions", type=int, default=1000, help="distinct positions per partition")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--alone", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=SearchLimits().timeout_s, help="seconds a partition")
    options = parser.parse_args(argv)
    random.seed(7)
    print(f"load average at start: {os.getloadavg()[0]:.2f}", flush=True)
    with (
        tempfile.TemporaryDirectory(prefix="offsetlake-bench-tracing-") as directory,
        running_clusters(Path(directory), preferred_ports=None) as pair,
    ):
        wrong = measure(pair.target.bootstrap_servers, options)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
