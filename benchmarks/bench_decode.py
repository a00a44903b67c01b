"""Benchmark: silver's decoding pass alone, over synthetic bronze rows in Parquet (no broker).

The pipeline ingest benchmark mixes Kafka reads, decoding, silver, quarantine and gold; this one
isolates the step that dominated it: ``inputs.decode_result`` (the very function the
``decoded_*`` flows run) over ``--records`` bronze rows per kind, written to Spark's ``noop``
sink so nothing but reading and decoding is timed. Rows are encoded by the pure codecs, as MM2
writes them, with one malformed record in every ``INVALID_EVERY`` (truncated key, unknown
version, illegal topic, tombstone, negative offset); the quarantine count is checked once so a
decoder that lets bad records through fails the benchmark instead of printing a figure.

Printed per kind: records/s (median of ``--rounds``), the same for a bare read of the Parquet,
and facts about the physical plan: whether the decode projection is whole-stage generated, and
whether any Python evaluation (BatchEvalPython, ArrowEvalPython) or higher-order function
(``transform`` and friends, which fall back to interpreted evaluation) is in it, and the bytecode
size of the largest generated method: over HUGE_METHOD_BYTES the JVM never compiles it, and every
row of the stage runs in the bytecode interpreter. ``--conf`` sets Spark SQL settings for the
rounds (to compare, e.g., ``spark.sql.codegen.hugeMethodLimit=8000``). ``--jit optimising``
starts the session with C2 as well, as a pipeline update over a large backlog does
(offsetlake.local.jit); the default is the local sessions' C1 alone.

Usage: .venv/bin/python benchmarks/bench_decode.py [--records 1000000] [--rounds 3]
       [--kinds checkpoint,offset_sync] [--show-plan] [--conf KEY=VALUE ...] [--jit optimising]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Final

import pyarrow as pa
import pyarrow.parquet as pq

from offsetlake.codecs.mm2 import Checkpoint, OffsetSync, encode_checkpoint, encode_offset_sync
from offsetlake.local.home import LocalHome
from offsetlake.local.jit import Jit
from offsetlake.local.spark import get_local_spark, stop_local_spark
from offsetlake.pipeline.decoding import inputs
from offsetlake.pipeline.decoding.inputs import DecodedInput
from offsetlake.pipeline.decoding.wire_spark import DECODE_ERROR

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

INVALID_EVERY: Final = 10_000
"""One malformed record per this many: enough to exercise quarantine, few as in production."""
ROWS_PER_FILE: Final = 250_000
"""Several Parquet files, so both local cores read in parallel."""
HUGE_METHOD_BYTES: Final = 8000
"""HotSpot's ``HugeMethodLimit``, also Spark's suggested ``spark.sql.codegen.hugeMethodLimit``."""
_HIGHER_ORDER: Final = re.compile(r"\b(transform|filter|exists|forall|aggregate|zip_with|reduce)\(|lambda")


def _checkpoint(index: int) -> tuple[bytes | None, bytes | None]:
    malformed = index % INVALID_EVERY
    key, value = encode_checkpoint(
        Checkpoint(
            f"group-{index % 1000:04d}",
            f"orders-{index % 5}",
            index % 2,
            -1 if malformed == 4 else index,
            index + 7,
            "",
        )
    )
    if malformed == 1:
        return key[:5], value
    if malformed == 2:
        return key, b"\x00\x01" + value[2:]
    if malformed == 3:
        return encode_checkpoint(Checkpoint("g", "bad topic", 0, 1, 2, ""))[0], value
    if malformed == 5:
        return key, None
    return key, value


def _offset_sync(index: int) -> tuple[bytes | None, bytes | None]:
    malformed = index % INVALID_EVERY
    key, value = encode_offset_sync(
        OffsetSync(f"orders-{index % 5}", index % 8, -1 if malformed == 4 else index, index + 3)
    )
    if malformed == 1:
        return key[:3], value
    if malformed == 2:
        return key, value + b"\x00"
    if malformed == 3:
        return encode_offset_sync(OffsetSync("..", 0, 1, 2))[0], value
    if malformed == 5:
        return key, None
    return key, value


@dataclass(frozen=True)
class Kind:
    source: DecodedInput
    record: Callable[[int], tuple[bytes | None, bytes | None]]
    malformed_per_block: int


KINDS: Final = {
    "checkpoint": Kind(inputs.CHECKPOINTS, _checkpoint, 5),
    "offset_sync": Kind(inputs.OFFSET_SYNCS, _offset_sync, 5),
}


def expected_malformed(kind: Kind, records: int) -> int:
    full, rest = divmod(records, INVALID_EVERY)
    return full * kind.malformed_per_block + sum(1 for i in range(1, 6) if i < rest)


def write_bronze(kind: Kind, records: int, path: Path) -> None:
    """``records`` bronze rows of ``kind`` as Parquet files with the bronze table's columns."""
    path.mkdir(parents=True)
    ingested = datetime(2026, 1, 1, tzinfo=UTC)
    schema = pa.schema(
        [
            ("key", pa.binary()),
            ("value", pa.binary()),
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("offset", pa.int64()),
            ("timestamp", pa.timestamp("us", tz="UTC")),
            ("timestampType", pa.int32()),
            ("headers", pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
            ("source_cluster", pa.string()),
            ("ingested_at", pa.timestamp("us", tz="UTC")),
        ]
    )
    for start in range(0, records, ROWS_PER_FILE):
        indexes = range(start, min(start + ROWS_PER_FILE, records))
        keys, values = zip(*(kind.record(i) for i in indexes), strict=True)
        count = len(indexes)
        table = pa.table(
            {
                "key": pa.array(keys, pa.binary()),
                "value": pa.array(values, pa.binary()),
                "topic": pa.array(["source.checkpoints.internal"] * count),
                "partition": pa.array([0] * count, pa.int32()),
                "offset": pa.array(indexes, pa.int64()),
                "timestamp": pa.array([ingested] * count, pa.timestamp("us", tz="UTC")),
                "timestampType": pa.array([0] * count, pa.int32()),
                "headers": pa.array([[]] * count, schema.field("headers").type),
                "source_cluster": pa.array(["source"] * count),
                "ingested_at": pa.array([ingested] * count, pa.timestamp("us", tz="UTC")),
            },
            schema=schema,
        )
        pq.write_table(table, path / f"part-{start // ROWS_PER_FILE:03d}.parquet")


def timed_noop(frame: DataFrame) -> float:
    started = time.perf_counter()
    frame.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - started


def plan_facts(frame: DataFrame) -> tuple[dict[str, object], str]:
    """What the executed plan does per row: generated code, Python, higher-order functions."""
    plan = frame._jdf.queryExecution().executedPlan().toString()
    lines = plan.splitlines()
    project_lines = [line for line in lines if "Project" in line]
    facts: dict[str, object] = {
        "whole-stage codegen stages": len(set(re.findall(r"\*\((\d+)\)", plan))),
        "decode Project whole-stage generated": bool(project_lines)
        and all(re.search(r"\*\(\d+\) Project", line) for line in project_lines),
        "Python evaluation (BatchEvalPython/ArrowEvalPython)": bool(
            re.search(r"BatchEvalPython|ArrowEvalPython|PythonUDF", plan)
        ),
        "higher-order functions": bool(_HIGHER_ORDER.search(plan)),
    }
    largest = largest_generated_method(frame)
    facts["largest generated method (bytes of bytecode)"] = largest
    facts[f"every generated method JIT-compilable (<= {HUGE_METHOD_BYTES})"] = (
        largest is not None and largest <= HUGE_METHOD_BYTES
    )
    return facts, plan


def largest_generated_method(frame: DataFrame) -> int | None:
    """Bytecode size of the largest method of the plan's first whole-stage generated class. HotSpot
    does not JIT-compile a method over HUGE_METHOD_BYTES (``-XX:+DontCompileHugeMethods``, the
    default): such a stage runs every row in the bytecode interpreter."""
    executed = frame._jdf.queryExecution().executedPlan()
    if executed.getClass().getSimpleName() != "WholeStageCodegenExec":
        return None
    source = executed.doCodeGen()._2()
    compiler = frame.sparkSession._jvm.org.apache.spark.sql.catalyst.expressions.codegen.CodeGenerator
    return int(compiler.compile(source)._2().maxMethodCodeSize())


def bench_kind(
    spark: SparkSession, name: str, kind: Kind, path: Path, *, rounds: int, show_plan: bool
) -> None:
    def decoded() -> DataFrame:
        return inputs.decode_result(spark.read.parquet(str(path)), kind.source)

    quarantined = decoded().where(f"{DECODE_ERROR} IS NOT NULL").count()
    records = spark.read.parquet(str(path)).count()
    wanted = expected_malformed(kind, records)
    if quarantined != wanted:
        raise SystemExit(f"{name}: {quarantined} records quarantined, expected {wanted}")

    bare = [timed_noop(spark.read.parquet(str(path))) for _ in range(rounds)]
    decode = [timed_noop(decoded()) for _ in range(rounds)]
    facts, plan = plan_facts(decoded())
    bare_s, decode_s = statistics.median(bare), statistics.median(decode)
    print(f"\n{name}: {records:,} records, {quarantined} quarantined (as expected)")
    print(f"  bare Parquet read : median {bare_s:6.2f} s  ({records / bare_s:>12,.0f} records/s)")
    print(
        f"  decode pass       : median {decode_s:6.2f} s  ({records / decode_s:>12,.0f} records/s)  "
        f"rounds {', '.join(f'{s:.2f}' for s in decode)}"
    )
    for fact, value in facts.items():
        print(f"  {fact}: {value}")
    if show_plan:
        print(plan)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--kinds", default="checkpoint,offset_sync", help=f"of {', '.join(KINDS)}")
    parser.add_argument("--show-plan", action="store_true", help="print the executed physical plan")
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark SQL setting for the rounds (repeatable): spark.sql.codegen.hugeMethodLimit=8000",
    )
    parser.add_argument("--jit", choices=[jit.value for jit in Jit], default=Jit.QUICK.value)
    args = parser.parse_args()
    chosen = [name.strip() for name in args.kinds.split(",")]
    if unknown := set(chosen) - set(KINDS):
        parser.error(f"unknown kinds: {', '.join(sorted(unknown))}")

    print(f"cores={os.cpu_count()}, JIT {args.jit}, load average at start {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="bench-decode-") as temp:
        root = Path(temp)
        started = time.perf_counter()
        for name in chosen:
            write_bronze(KINDS[name], args.records, root / "bronze" / name)
        print(f"bronze Parquet written in {time.perf_counter() - started:.1f} s")
        spark = get_local_spark(
            home=LocalHome.resolve(root / "home"), app_name="bench-decode", jit=Jit(args.jit)
        )
        for setting in args.conf:
            key, _, value = setting.partition("=")
            spark.conf.set(key, value)
            print(f"conf {key}={value}")
        try:
            for name in chosen:
                bench_kind(
                    spark,
                    name,
                    KINDS[name],
                    root / "bronze" / name,
                    rounds=args.rounds,
                    show_plan=args.show_plan,
                )
        finally:
            stop_local_spark()
    print(f"\nload average at end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
