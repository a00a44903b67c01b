"""DataFrame helpers that are safe inside pipeline query functions.

With Spark Connect, ``withColumn``/``withColumns``/``withColumnsRenamed``/``drop`` are resolved by
the server against the child plan when the flow is registered. That resolves a pipeline dataset
like ``bronze_checkpoints`` to the catalog table from the previous update, so the flow no longer
depends on the bronze flow and starts before bronze has landed this update's records (measured
with pyspark 4.2: silver then lags one update behind). A plain ``select`` stays unresolved until
the pipeline analyzes the graph, keeping the dependency.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import Column, DataFrame


def add_columns(df: DataFrame, columns: Mapping[str, Column]) -> DataFrame:
    """``df`` plus new columns (names must not exist in ``df``), as one lazily resolved select."""
    return df.select("*", *[column.alias(name) for name, column in columns.items()])
