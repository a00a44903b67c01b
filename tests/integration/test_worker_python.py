"""Spark's own Python workers, started through the launcher, import PySpark from the installed
package (bytecode cached), with none of Spark's archives on their path."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _where_pyspark_comes_from() -> str:
    import pyspark

    archives = [entry for entry in sys.path if entry.endswith((".zip", ".jar")) and os.path.exists(entry)]
    return json.dumps({"pyspark": pyspark.__file__, "archives": archives, "python": sys.executable})


class _WhereReader(DataSourceReader):
    def read(self, partition: InputPartition) -> Iterator[tuple[str]]:
        yield (_where_pyspark_comes_from(),)


class _WhereSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "offsetlake_test_where"

    def schema(self) -> str:
        return "seen string"

    def reader(self, schema: object) -> DataSourceReader:
        return _WhereReader()


def test_a_udf_and_a_data_source_worker_import_the_installed_pyspark(spark: SparkSession) -> None:
    from pyspark.sql import functions as sf

    where = sf.udf(_where_pyspark_comes_from, "string")
    spark.dataSource.register(_WhereSource)
    seen = [
        spark.range(1).select(where().alias("seen")).first()["seen"],
        spark.read.format("offsetlake_test_where").load().first()["seen"],
    ]
    installed = Path(__import__("pyspark").__file__).resolve()
    for worker in map(json.loads, seen):
        assert Path(worker["pyspark"]).resolve() == installed, worker
        assert worker["archives"] == [], worker
        assert Path(worker["python"]).resolve() == Path(sys.executable).resolve(), worker
