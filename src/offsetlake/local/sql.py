"""Queries against the local pipeline tables (``offsetlake sql``), on the shared local metastore."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pyspark.errors import PySparkException

from offsetlake.errors import UsageError
from offsetlake.local.spark import LOCAL_SCHEMA, get_local_spark


class QueryError(UsageError):
    """A query Spark refused (syntax, unknown table or column): its error class and message."""


QueryResult = tuple[list[str], list[tuple[object, ...]]]
"""(column names, rows)."""


def run_sql(queries: Sequence[str], home: Path | None = None) -> list[QueryResult]:
    """Run each query in schema ``offsetlake``; one (column names, rows) per query."""
    spark = get_local_spark(home, app_name="offsetlake-sql")
    spark.catalog.setCurrentDatabase(LOCAL_SCHEMA)
    results = []
    for query in queries:
        try:
            frame = spark.sql(query)
            results.append((frame.columns, [tuple(row) for row in frame.collect()]))
        except PySparkException as error:
            raise QueryError(error.getMessage()) from None  # "[ERROR_CLASS] message"
    return results
