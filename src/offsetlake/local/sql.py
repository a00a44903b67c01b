"""Queries against the local pipeline tables (``offsetlake sql``), on the shared local metastore."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pyspark.errors import PySparkException

from offsetlake.errors import UsageError
from offsetlake.local.home import LOCAL_SCHEMA, LocalHome
from offsetlake.local.spark import get_local_spark

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class QueryError(UsageError):
    """A query Spark refused (syntax, unknown table or column): its error class and message."""


QueryResult = tuple[list[str], list[tuple[object, ...]]]
"""(column names, rows)."""


def sql_session(home: LocalHome) -> SparkSession:
    """The local session queries run in, with schema ``offsetlake`` current."""
    spark = get_local_spark(home, app_name="offsetlake-sql")
    spark.catalog.setCurrentDatabase(LOCAL_SCHEMA)
    return spark


def run_sql(spark: SparkSession, queries: Sequence[str]) -> list[QueryResult]:
    """Run each query in ``spark`` (a :func:`sql_session`); one (column names, rows) per query."""
    results = []
    for query in queries:
        try:
            frame = spark.sql(query)
            results.append((frame.columns, [tuple(row) for row in frame.collect()]))
        except PySparkException as error:
            raise QueryError(error.getMessage()) from None  # "[ERROR_CLASS] message"
    return results
