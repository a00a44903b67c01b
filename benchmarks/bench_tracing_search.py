"""Benchmark: translating from K2K's record-tracing headers (offsetlake.kafka.tracing_reader).

Starts the local broker pair, fills one target partition with ``--records`` records laid out as K2K
leaves them: ``--preexisting`` records without headers first (data the target held before), then
the traced records of source orders[0] with a gap every 7th source offset (filtered records,
transaction markers), a record of another source partition every 5th target offset. Then looks up
``--lookups`` committed positions spread over the whole source range, in one call (one consumer,
as the pipeline's driver searches one snapshot), ``--repeat`` times, and prints the median seconds per
search, the probes per search (against log2 of the partition), the whole call, and whether every
answer equals the brute-force rule (largest traced source offset <= U, + 1 when not exact).

Usage: .venv/bin/python benchmarks/bench_tracing_search.py [--records 100000] [--preexisting 1000]
       [--lookups 200] [--repeat 3]
"""

from __future__ import annotations

import argparse
import bisect
import math
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from offsetlake.k2k.tracing import TracingHeaderNames
from offsetlake.kafka.tracing_reader import TracingRequest, translate_from_tracing_headers
from offsetlake_dev.local_cluster import running_clusters

TOPIC = "east.orders"


def fill(bootstrap: str, records: int, preexisting: int) -> list[tuple[int, int]]:
    """The partition's records; returns (source offset, target offset) of the traced orders[0] ones."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1)])[TOPIC].result(timeout=30)
    time.sleep(1)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 5000})
    traced: list[tuple[int, int]] = []
    source, other = 0, 0
    for target in range(records):
        if target < preexisting:
            headers = None
        elif target % 5 == 0:
            headers = [("k2k_topic", b"orders"), ("k2k_partition", b"1"), ("k2k_offset", str(other).encode())]
            other += 1
        else:
            if source % 7 == 6:
                source += 1  # a source offset that never reaches the target
            headers = [
                ("k2k_topic", b"orders"),
                ("k2k_partition", b"0"),
                ("k2k_offset", str(source).encode()),
            ]
            traced.append((source, target))
            source += 1
        if target == records - 1:
            producer.flush(60)  # Tansu: the last batch must hold one record for ListOffsets "latest"
        producer.produce(TOPIC, value=b"x" * 100, partition=0, headers=headers)
        if target % 10_000 == 0:
            producer.poll(0)
    producer.flush(60)
    return traced


def expected(traced: list[tuple[int, int]], upstream: int) -> int | None:
    sources = [source for source, _ in traced]
    index = bisect.bisect_right(sources, upstream) - 1
    if index < 0:
        return None
    source, target = traced[index]
    return target if source == upstream else target + 1


def measure(bootstrap: str, options: argparse.Namespace) -> int:
    """Fill the partition, search it, print the figures; the number of wrong answers."""
    started = time.monotonic()
    traced = fill(bootstrap, options.records, options.preexisting)
    filled_s = time.monotonic() - started
    print(f"filled {options.records:,} records ({len(traced):,} of orders[0]) in {filled_s:.1f}s")
    uppers = [random.randint(0, traced[-1][0] + 1) for _ in range(options.lookups)]
    requests = [TracingRequest(TOPIC, 0, "orders", 0, upstream) for upstream in uppers]
    calls, per_search, probes, wrong = [], [], [], 0
    for _ in range(options.repeat):
        started = time.monotonic()
        results = translate_from_tracing_headers(
            {"bootstrap.servers": bootstrap}, requests, TracingHeaderNames()
        )
        calls.append(time.monotonic() - started)
        per_search += [result.seconds for result in results]
        probes += [result.translation.probes for result in results]
        wrong += sum(
            result.translation.downstream_offset != expected(traced, result.request.upstream_offset)
            for result in results
        )
    distinct = len(set(uppers))
    print(f"lookups per call: {options.lookups} ({distinct} distinct positions, each searched once)")
    runs = ", ".join(f"{call:.2f}" for call in calls)
    print(f"call (one consumer, {distinct} searches): median {statistics.median(calls):.2f}s; runs {runs}")
    p90 = statistics.quantiles(per_search, n=10)[-1]
    print(f"per search: median {statistics.median(per_search) * 1000:.1f} ms, p90 {p90 * 1000:.1f} ms")
    print(
        f"probes per search: median {statistics.median(probes):.0f}, max {max(probes)} "
        f"(log2 of {options.records:,} records = {math.log2(options.records):.1f})"
    )
    print(f"answers differing from the brute-force rule: {wrong}")
    return wrong


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--preexisting", type=int, default=1000)
    parser.add_argument("--lookups", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args(argv)
    random.seed(7)
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    with (
        tempfile.TemporaryDirectory(prefix="offsetlake-bench-tracing-") as directory,
        running_clusters(Path(directory), preferred_ports=None) as pair,
    ):
        wrong = measure(pair.target.bootstrap_servers, options)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
