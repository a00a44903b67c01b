"""How bronze lands Kafka: what every bronze transformation (transformations/bronze_*.py,
cluster_health.py, source_log_offsets.py, k2k_tracing_lookups.py) shares.

Streaming tables, append-only, nothing filtered or decoded: every record keeps its bytes, Kafka
coordinates and timestamp, plus ``source_cluster`` and ``ingested_at``. A second update reads only
records after the previous update's checkpointed offsets.

- Checkpoints: every ``<alias><sep>checkpoints<sep>internal`` topic on the target, discovered by
  pattern (several source aliases); ``source_cluster`` is the alias parsed from the topic name.
- Offset syncs, location ``source``: one stream per source cluster reading
  ``mm2-offset-syncs<sep><target alias><sep>internal`` there (any alias when
  ``offsetlake.target.alias`` is unset), unioned into one flow; ``source_cluster`` is that
  source's alias. Location ``target``: one stream on the target by pattern; the alias comes from
  the topic name.
- Mappings: the topics ``offsetlake.mappings.topics`` binds to source aliases, on the target (tables
  absent when off); the binding is applied when they are decoded (silver).
- Group offsets: one stream per source cluster (unioned), one snapshot per update.
- Connect offsets: topics matching ``offsetlake.connect_offsets.topics`` on the target (MM2's
  ``mm2-offsets.<source>.internal`` and ``connect-offsets`` by default; tables absent when empty).
- Source log offsets: each source's log start/end per partition, one snapshot per update (unioned).
- Cluster health: one reachability check per cluster (target and each source) per update.
- K2K tracing lookups (``offsetlake.k2k.tracing.topics``): per routed source, one snapshot per update
  whose committed positions are searched on the target through K2K's record-tracing headers, on the
  driver (data_sources/offsetlake_k2k_tracing.py); the k2k_tracing_headers method's input.

A source cluster that does not answer within ``offsetlake.cluster.timeout.ms`` adds no rows this
update (its streams read nothing) and the update goes on; see pipeline/sources.py.

Per source cluster (offset syncs at location ``source``, group offsets), ``offsetlake.bronze.flows``
decides: ``per_source`` (Databricks) gives each cluster its own append flow, so adding one needs no
full refresh, a dead one fails only its own flow, and bronze refuses a full refresh
(``pipelines.reset.allowed = false``: it is the only history beyond Kafka's retention); ``union``
(local) unions them into one query per table, because concurrent appends race on a Parquet
table's sink log, and adding or removing a cluster then needs a full refresh of bronze.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from types import ModuleType

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as sf

from offsetlake.contract.settings import PipelineSettings
from offsetlake.contract.tables import TableSpec
from offsetlake.mirror.clusters import ClusterEndpoint
from offsetlake.pipeline.frames import add_columns
from offsetlake.pipeline.kafka_readers import pipeline_settings, register_offsetlake_sources


def bronze_session() -> tuple[SparkSession, PipelineSettings]:
    """The session and settings of a bronze file, with the data sources its reads use registered
    (at module level: query functions may not send commands to the server)."""
    spark = SparkSession.builder.getOrCreate()
    settings = pipeline_settings(spark)
    register_offsetlake_sources(spark, settings)
    return spark, settings


def landed(records: DataFrame, source_cluster: Column | None) -> DataFrame:
    """Kafka records as bronze keeps them: ``source_cluster`` (when known here) and ``ingested_at``."""
    columns = {"ingested_at": sf.current_timestamp()}
    if source_cluster is not None:
        columns = {"source_cluster": source_cluster, **columns}
    return add_columns(records, columns)


def alias_from_topic(pattern: str) -> Column:
    """The source alias a topic name carries: ``pattern``'s first group."""
    return sf.regexp_extract(sf.col("topic"), pattern, 1)


def bronze_table(
    dp: ModuleType, spec: TableSpec, settings: PipelineSettings
) -> Callable[[Callable[[], DataFrame]], None]:
    """``dp.table`` for ``spec`` with bronze's table properties."""
    return dp.table(
        name=spec.name,
        comment=spec.comment,
        schema=spec.schema_ddl,
        table_properties=settings.bronze_table_properties,
    )


def per_source_cluster(
    dp: ModuleType,
    spec: TableSpec,
    settings: PipelineSettings,
    records_of: Callable[[ClusterEndpoint], DataFrame],
    sources: tuple[ClusterEndpoint, ...] | None = None,
) -> None:
    """One table fed from every source cluster (of ``sources``, default all): one append flow each,
    or one union query."""
    sources = settings.sources if sources is None else sources
    if settings.bronze_flows == "union":
        bronze_table(dp, spec, settings)(lambda: union([records_of(source) for source in sources]))
        return
    dp.create_streaming_table(
        name=spec.name,
        comment=spec.comment,
        schema=spec.schema_ddl,
        table_properties=settings.bronze_table_properties,
    )
    for source in sources:
        flow = f"{spec.name}_from_{source.alias.replace('-', '_')}"
        dp.append_flow(target=spec.name, name=flow)(partial(records_of, source))


def union(frames: list[DataFrame]) -> DataFrame:
    """One streaming query per table, not one append flow per cluster: concurrent streams appending
    to one table race on a Parquet table's sink log (locally), where one query's batch is lost."""
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result
