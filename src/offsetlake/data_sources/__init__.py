"""Every PySpark Python data source offsetlake registers, one module per format name.

- ``offsetlake_kafka``: Kafka records, as Spark's built-in ``kafka`` source reads them;
- ``offsetlake_group_offsets``: snapshots of the source cluster's committed group offsets;
- ``offsetlake_log_offsets``: snapshots of the source topics' log start and log end offsets;
- ``offsetlake_cluster_health``: one reachability check of a cluster per update;
- ``offsetlake_k2k_tracing``: group snapshots searched on the target through K2K's tracing headers.

``options`` holds the option parsing they share (the one cluster timeout ``timeoutMs``) and
``spark_compat`` the streaming API across PySpark versions. What reads Kafka without Spark lives
in :mod:`offsetlake.kafka`. The sources are imported when registered, so importing this package
(or ``options``) does not import PySpark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.datasource import DataSource

__all__ = ["register_data_sources"]


def register_data_sources(
    spark: SparkSession, *, kafka_records: bool = True, k2k_tracing: bool = False
) -> None:
    """Register ``offsetlake_group_offsets``, ``offsetlake_cluster_health``, ``offsetlake_log_offsets``,
    unless ``kafka_records`` is False (Spark's own ``kafka`` reader reads the records)
    ``offsetlake_kafka``, and with ``k2k_tracing`` ``offsetlake_k2k_tracing``; safe to call repeatedly."""
    from offsetlake.data_sources.offsetlake_cluster_health import ClusterHealthDataSource
    from offsetlake.data_sources.offsetlake_group_offsets import GroupOffsetsDataSource
    from offsetlake.data_sources.offsetlake_log_offsets import LogOffsetsDataSource

    sources: list[type[DataSource]] = [GroupOffsetsDataSource, ClusterHealthDataSource, LogOffsetsDataSource]
    if kafka_records:
        from offsetlake.data_sources.offsetlake_kafka import KafkaDataSource

        sources.insert(0, KafkaDataSource)
    if k2k_tracing:
        from offsetlake.data_sources.offsetlake_k2k_tracing import TracingDataSource

        sources.append(TracingDataSource)
    for source in sources:
        spark.dataSource.register(source)
