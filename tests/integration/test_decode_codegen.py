"""The decoders' generated code stays small enough for the JVM to compile it.

HotSpot never JIT-compiles a method over 8,000 bytes of bytecode (``-XX:+DontCompileHugeMethods``,
its default): a whole-stage generated class with one such method runs every row in the bytecode
interpreter, and the checkpoint decode was 10,756 bytes in one method (73,760 records/s against a
bare read of 2.1 M). A property of the generated code, not of the machine: checked by compiling
it, never by timing it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from offsetlake.pipeline.decoding.mm2_spark import decode_checkpoints, decode_offset_syncs

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("generated_code")]

HUGE_METHOD_BYTES = 8000


def largest_generated_method(frame: DataFrame) -> int:
    """Bytecode size of the largest method of the whole-stage generated class of ``frame``'s plan."""
    executed = frame._jdf.queryExecution().executedPlan()
    assert executed.getClass().getSimpleName() == "WholeStageCodegenExec", executed.toString()
    compiler = frame.sparkSession._jvm.org.apache.spark.sql.catalyst.expressions.codegen.CodeGenerator
    return int(compiler.compile(executed.doCodeGen()._2())._2().maxMethodCodeSize())


@pytest.mark.parametrize("decode", [decode_checkpoints, decode_offset_syncs])
def test_every_generated_method_of_a_decode_is_jit_compilable(
    spark: SparkSession, decode: Callable[[DataFrame], DataFrame], tmp_path: Path
) -> None:
    # Read from Parquet, as the flows read bronze (a local relation would be folded at planning).
    spark.createDataFrame([(b"\x00", b"\x00")], "key binary, value binary").write.parquet(str(tmp_path / "b"))
    bronze = spark.read.parquet(str(tmp_path / "b"))
    assert largest_generated_method(decode(bronze)) <= HUGE_METHOD_BYTES
