"""Bronze: raw MM2 checkpoints, offset syncs, K2K mappings and source group-offset snapshots.

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

from pyspark import pipelines as dp
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as sf

from offsetlake.mirror.clusters import ClusterEndpoint as SourceCluster
from offsetlake.pipeline.frames import add_columns
from offsetlake.pipeline.kafka_readers import (
    cluster_health_stream,
    group_offsets_stream,
    k2k_tracing_stream,
    kafka_stream,
    log_offsets_stream,
    pipeline_settings,
    register_offsetlake_sources,
)
from offsetlake.pipeline.tables import (
    BRONZE_CHECKPOINTS,
    BRONZE_CONNECT_OFFSETS,
    BRONZE_GROUP_OFFSETS,
    BRONZE_MAPPINGS,
    BRONZE_OFFSET_SYNCS,
    CLUSTER_HEALTH,
    K2K_TRACING_LOOKUPS,
    SOURCE_LOG_OFFSETS,
    TableSpec,
)

spark = SparkSession.builder.getOrCreate()
settings = pipeline_settings(spark)
policy = settings.policy
properties = settings.bronze_table_properties
register_offsetlake_sources(spark, settings)


def _landed(records: DataFrame, source_cluster: Column | None) -> DataFrame:
    columns = {"ingested_at": sf.current_timestamp()}
    if source_cluster is not None:
        columns = {"source_cluster": source_cluster, **columns}
    return add_columns(records, columns)


def _alias_from_topic(pattern: str) -> Column:
    return sf.regexp_extract(sf.col("topic"), pattern, 1)


def _bronze_table(spec: TableSpec) -> Callable[[Callable[[], DataFrame]], None]:
    return dp.table(name=spec.name, comment=spec.comment, schema=spec.schema_ddl, table_properties=properties)


def _per_source_cluster(
    spec: TableSpec,
    records_of: Callable[[SourceCluster], DataFrame],
    sources: tuple[SourceCluster, ...] = settings.sources,
) -> None:
    """One table fed from every source cluster (of ``sources``): one append flow each, or one union query."""
    if settings.bronze_flows == "union":
        _bronze_table(spec)(lambda: _union([records_of(source) for source in sources]))
        return
    dp.create_streaming_table(
        name=spec.name, comment=spec.comment, schema=spec.schema_ddl, table_properties=properties
    )
    for source in sources:
        flow = f"{spec.name}_from_{source.alias.replace('-', '_')}"
        dp.append_flow(target=spec.name, name=flow)(partial(records_of, source))


@_bronze_table(BRONZE_CHECKPOINTS)
def bronze_checkpoints() -> DataFrame:
    pattern = policy.checkpoints_topic_pattern()
    records = kafka_stream(
        spark, settings, settings.target_bootstrap_servers, role="target", subscribe_pattern=pattern
    )
    return _landed(records, _alias_from_topic(pattern))


def _offset_syncs_on(source: SourceCluster) -> DataFrame:
    if settings.target_alias:
        topic = policy.offset_syncs_topic(settings.target_alias)
        records = kafka_stream(spark, settings, source.bootstrap_servers, role="source", subscribe=topic)
    else:
        pattern = policy.offset_syncs_topic_pattern()
        records = kafka_stream(
            spark, settings, source.bootstrap_servers, role="source", subscribe_pattern=pattern
        )
    return _landed(records, sf.lit(source.alias))


def _union(frames: list[DataFrame]) -> DataFrame:
    """One streaming query per table, not one append flow per cluster: concurrent streams appending
    to one table race on a Parquet table's sink log (locally), where one query's batch is lost."""
    union = frames[0]
    for frame in frames[1:]:
        union = union.unionByName(frame)
    return union


if settings.offset_syncs_location == "source":
    _per_source_cluster(BRONZE_OFFSET_SYNCS, _offset_syncs_on)
else:

    @_bronze_table(BRONZE_OFFSET_SYNCS)
    def bronze_offset_syncs() -> DataFrame:
        pattern = policy.offset_syncs_topic_pattern()
        records = kafka_stream(
            spark, settings, settings.target_bootstrap_servers, role="target", subscribe_pattern=pattern
        )
        return _landed(records, _alias_from_topic(pattern))


_per_source_cluster(
    BRONZE_GROUP_OFFSETS,
    lambda source: _landed(group_offsets_stream(spark, settings, source), sf.lit(source.alias)),
)


if settings.k2k_tracing_routes:
    # Each snapshot searched on the target through K2K's tracing headers, on the driver (the data
    # source's planning); a live read like the snapshots above, so it is bronze's to keep.
    _routes = {route.alias: route for route in settings.k2k_tracing_routes}
    _per_source_cluster(
        K2K_TRACING_LOOKUPS,
        lambda source: k2k_tracing_stream(spark, settings, _routes[source.alias]),
        tuple(source for source in settings.sources if source.alias in _routes),
    )


@_bronze_table(CLUSTER_HEALTH)
def cluster_health() -> DataFrame:
    target_alias = settings.target_alias or "target"
    checks = [
        cluster_health_stream(spark, settings, target_alias, "target", settings.target_bootstrap_servers)
    ]
    checks += [
        cluster_health_stream(spark, settings, source.alias, "source", source.bootstrap_servers)
        for source in settings.sources
    ]
    return _union(checks)


if settings.mappings_topics:

    @_bronze_table(BRONZE_MAPPINGS)
    def bronze_mappings() -> DataFrame:
        records = kafka_stream(
            spark,
            settings,
            settings.target_bootstrap_servers,
            role="target",
            subscribe=",".join(sorted(settings.mapping_topic_sources)),
        )
        return _landed(records, None)


_per_source_cluster(
    SOURCE_LOG_OFFSETS,
    lambda source: _landed(log_offsets_stream(spark, settings, source), sf.lit(source.alias)),
)


if settings.connect_offsets_topics:

    @_bronze_table(BRONZE_CONNECT_OFFSETS)
    def bronze_connect_offsets() -> DataFrame:
        records = kafka_stream(
            spark,
            settings,
            settings.target_bootstrap_servers,
            role="target",
            subscribe_pattern=settings.connect_offsets_topics,
        )
        return _landed(records, None)
