"""The local Spark used by the CLI, the apply job and tests: one warehouse, one metastore.

Pipeline runs, `offsetlake sql` and the apply job are separate processes, so tables must outlive
a session: a Derby-backed Hive metastore and a warehouse directory under the local home give
that. On Databricks none of this is used; the runtime's session and Unity Catalog are.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from offsetlake.config import local_home

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

LOCAL_SCHEMA = "offsetlake"
# Errors only: Spark's default profile prints every WARN between the CLI's progress lines.
LOG4J2_CONFIG = Path(__file__).resolve().parent / "log4j2.properties"


def local_spark_conf(home: Path | None = None) -> dict[str, str]:
    """Static Spark settings every local process must share to see the same tables."""
    home = home or local_home()
    return {
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(home / "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={home / 'metastore_db'};create=true"
        ),
        "spark.driver.extraJavaOptions": (
            f"-Dderby.system.home={home} -Dlog4j2.configurationFile={LOG4J2_CONFIG.as_uri()}"
        ),
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "4",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
    }


def get_local_spark(home: Path | None = None, app_name: str = "offsetlake") -> SparkSession:
    """A local[2] session on the shared warehouse, with the `offsetlake` schema present."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[2]").appName(app_name)
    for key, value in local_spark_conf(home).items():
        builder = builder.config(key, value)
    spark = builder.enableHiveSupport().getOrCreate()
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS {LOCAL_SCHEMA}")
    return spark
