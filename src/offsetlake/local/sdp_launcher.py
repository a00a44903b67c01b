"""pyspark's `spark-pipelines` CLI, creating the pipeline's schema first.

`spark-pipelines run` fails when the spec's database does not exist, and creating it from a
separate local Spark costs a second JVM start (20-30 s on two cores) before every run on a fresh
home. This entry point runs the stock CLI unchanged except that, once the CLI's own Spark Connect
session exists, it issues ``CREATE SCHEMA IF NOT EXISTS`` for the spec's database before the
dataflow graph is created. The runner launches it the way the `spark-pipelines` script launches
pyspark's CLI (``spark-class org.apache.spark.deploy.SparkPipelines <this file> run ...``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pyspark.pipelines import cli

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_create_dataflow_graph = cli.create_dataflow_graph


def create_schema_then_graph(
    spark: SparkSession,
    default_catalog: str | None,
    default_database: str | None,
    sql_conf: Mapping[str, str] | None,
) -> str:
    """``cli.create_dataflow_graph``, after making sure the default database exists."""
    if default_database:
        parts = [default_catalog, default_database] if default_catalog else [default_database]
        spark.sql(f"CREATE SCHEMA IF NOT EXISTS {'.'.join(f'`{part}`' for part in parts)}")
    return _create_dataflow_graph(
        spark, default_catalog=default_catalog, default_database=default_database, sql_conf=sql_conf
    )


if __name__ == "__main__":
    cli.create_dataflow_graph = create_schema_then_graph
    cli.main()
