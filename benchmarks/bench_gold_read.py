"""Benchmark: reading gold without a JVM (offsetlake.local.warehouse_gold.LocalGoldStore).

Writes a synthetic ``latest_offsets`` of ``--groups`` x ``--topics`` x ``--partitions`` rows
(default 10,000 x 10 x 10 = 1,000,000 group-partitions) with pyarrow into a temporary warehouse,
laid out as local Spark lays it out (``<home>/warehouse/offsetlake.db/latest_offsets/part-*.parquet``,
``--files`` files, timestamps INT96 as Spark writes them by default, or ``--timestamps micros``),
and an ``offset_history`` with one current row per group-partition and method
(``--methods``, default 1: what an --as-of restore reads). Then, ``--repeat`` times each (median
printed, and every run):

- ``latest_offsets()``: every row to GoldOffsets (what `offsetlake plan|apply|failover` reads);
- ``latest_offsets(Selection(groups=<one group>))``: a literal group, pushed to the scan;
- ``offsets_as_of(now)``: offset_history rows valid now, one chosen per group-partition;
- ``count_translations()``.

Also the time to the Arrow table alone (``dataset.to_table``), so the share of building the
Python objects shows, the load average at start and end, and the peak RSS of this process.

Usage: .venv/bin/python benchmarks/bench_gold_read.py [--groups 10000] [--topics 10]
       [--partitions 10] [--files 4] [--timestamps int96|micros] [--methods 1] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from offsetlake.apply.planner import Selection
from offsetlake.contract.tables import LATEST_OFFSETS, OFFSET_HISTORY
from offsetlake.local.home import LocalHome
from offsetlake.local.warehouse_gold import LocalGoldStore, open_table
from offsetlake.mirror.precedence import METHODS

NOW = datetime.now(UTC).replace(microsecond=0)


def gold_columns(groups: int, topics: int, partitions: int, method: str, int96: bool) -> dict[str, pa.Array]:
    """offset_history's columns (latest_offsets' first ones) for every group-partition."""
    rows = groups * topics * partitions
    index = pa.array(range(rows), pa.int64())
    group = pc.divide(index, topics * partitions)  # integer division
    topic_partition = pc.divide(index, partitions)
    topic = pc.subtract(topic_partition, pc.multiply(group, topics))
    partition = pc.subtract(index, pc.multiply(topic_partition, partitions))
    names = pc.binary_join_element_wise("app-", pc.cast(group, pa.string()), "")
    topic_names = pc.binary_join_element_wise("orders-", pc.cast(topic, pa.string()), "")
    # Snapshots every minute for the last hour: few distinct instants, as gold has.
    micros = pc.subtract(
        int(NOW.timestamp() * 1_000_000), pc.multiply(pc.bit_wise_and(index, 63), 60_000_000)
    )
    stamp = pa.timestamp("us", tz=None if int96 else "UTC")
    moments = micros.cast(pa.timestamp("us")).cast(stamp)
    return {
        "source_cluster": pa.array(["east"] * rows),
        "consumer_group": names,
        "topic": topic_names,
        "partition": partition.cast(pa.int32()),
        "downstream_offset": pc.multiply(index, 3),
        "upstream_offset": pc.multiply(index, 4),
        "method": pa.array([method] * rows),
        "metadata": pa.array([""] * rows),
        "source_timestamp": moments,
        "valid_from": moments,
        "valid_to": pa.nulls(rows, stamp),
    }


def write_table(directory: Path, table: pa.Table, files: int, int96: bool) -> None:
    directory.mkdir(parents=True)
    per_file = -(-table.num_rows // files)
    for number in range(files):
        part = table.slice(number * per_file, per_file)
        pq.write_table(
            part, directory / f"part-{number:05d}-bench.snappy.parquet", use_deprecated_int96_timestamps=int96
        )
    (directory / "_SUCCESS").touch()


def timed(label: str, repeat: int, work: Callable[[], object]) -> object:
    """Wall and CPU seconds of ``work`` (CPU: this process's, threads included; on a busy machine
    the wall time is the CPU time stretched by the load)."""
    seconds, cpu, result = [], [], None
    for _ in range(repeat):
        started, started_cpu = time.perf_counter(), time.process_time()
        result = work()
        seconds.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
    runs = ", ".join(f"{s:.2f}" for s in seconds)
    size = f" -> {len(result)} rows" if isinstance(result, list) else f" -> {result}"
    print(
        f"{label:<46} median {statistics.median(seconds):6.2f} s, CPU {statistics.median(cpu):6.2f} s"
        f"  (runs: {runs}){size}",
        flush=True,
    )
    return result


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--topics", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--timestamps", choices=("int96", "micros"), default="int96")
    parser.add_argument("--methods", type=int, default=1, choices=(1, 2, 3))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    int96 = args.timestamps == "int96"
    rows = args.groups * args.topics * args.partitions
    print(
        f"bench_gold_read: {args.groups} groups x {args.topics} topics x {args.partitions} partitions = "
        f"{rows:,} group-partitions; {args.files} files; timestamps {args.timestamps}; "
        f"{args.methods} method(s) in offset_history; repeat {args.repeat}; "
        f"load average {os.getloadavg()[0]:.1f}; python {sys.version.split()[0]}, pyarrow {pa.__version__}"
    )
    with tempfile.TemporaryDirectory(prefix="bench-gold-read-") as temporary:
        home = LocalHome(Path(temporary))
        schema_dir = home.schema_dir
        started = time.perf_counter()
        history = gold_columns(args.groups, args.topics, args.partitions, METHODS[-1], int96)
        latest = pa.table(
            history
            | {
                "methods_disagree": pa.array([False] * rows),
                "last_observed_at": history["source_timestamp"],
            }
        )
        assert latest.column_names == LATEST_OFFSETS.column_names
        write_table(schema_dir / LATEST_OFFSETS.name, latest, args.files, int96)
        methods = [pa.table(history)] + [
            pa.table(gold_columns(args.groups, args.topics, args.partitions, method, int96))
            for method in METHODS[: args.methods - 1]
        ]
        history_table = pa.concat_tables(methods)
        assert history_table.column_names == OFFSET_HISTORY.column_names
        write_table(schema_dir / OFFSET_HISTORY.name, history_table, args.files, int96)
        size = sum(path.stat().st_size for path in (schema_dir / LATEST_OFFSETS.name).iterdir())
        print(f"written in {time.perf_counter() - started:.1f} s; latest_offsets {size / 2**20:.1f} MiB")
        del latest, history, history_table, methods

        store = LocalGoldStore(home)
        dataset = open_table(schema_dir / LATEST_OFFSETS.name)
        assert dataset is not None
        timed("latest_offsets as an Arrow table only", args.repeat, lambda: dataset.to_table().num_rows)
        timed("LocalGoldStore.latest_offsets()", args.repeat, store.latest_offsets)
        timed(
            "latest_offsets(Selection(groups='app-42'))",
            args.repeat,
            lambda: store.latest_offsets(Selection(groups="app-42")),
        )
        as_of = NOW + timedelta(seconds=1)
        timed("LocalGoldStore.offsets_as_of(now)", args.repeat, lambda: store.offsets_as_of(as_of))
        timed("LocalGoldStore.count_translations()", args.repeat, store.count_translations)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:.0f} MiB; load average at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
