"""How the transformations read Kafka: settings from the pipeline conf, reader choice, credentials.

Locally (``offsetlake.kafka.reader=offsetlake``) records come from our Python data source; on
Databricks ``builtin`` switches to Spark's ``kafka`` format with the same options and
``includeHeaders=true``, which yields the same columns, for the TARGET cluster's topics only.

Source clusters are always read with our data sources, in their ``onUnreachable=skip`` mode: the
day a source cluster is lost is the day a failover runs, and a dead source must then cost at most
``offsetlake.cluster.timeout.ms`` and add no rows, instead of failing the flow. Spark's
``kafka`` reader has no such mode (its flow fails, and the update skips everything downstream
of it). Credentials (SASL/SSL ``kafka.*`` options) come from the ``offsetlake.secret_scope``
Databricks secret scope and are only ever passed to the reader, never logged or stored in a table.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Literal

from pyspark.sql import DataFrame, SparkSession

from offsetlake.contract.settings import TARGET_BOOTSTRAP, PipelineSettings
from offsetlake.data_sources.options import TARGET_OPTION_PREFIX
from offsetlake.k2k.routing import TracingRoute
from offsetlake.mirror.clusters import ClusterEndpoint

ClusterRole = Literal["source", "target"]


def pipeline_settings(spark: SparkSession) -> PipelineSettings:
    """The settings from the pipeline configuration (spark conf); raises ValueError naming a bad key.

    Read in one call (``getAll``): every transformation file reads them at import, and one
    ``spark.conf.get`` per key is a server round trip each under Spark Connect (28 files × 26 keys).
    A session whose ``getAll`` lacks the one required key (a runtime that lists only Spark's own
    settings there) is read key by key, as before.
    """
    every = spark.conf.getAll
    if TARGET_BOOTSTRAP in every:
        return PipelineSettings.from_mapping(every)
    return PipelineSettings.from_conf(lambda key: spark.conf.get(key, None))


@cache
def _secret_options(scope: str) -> tuple[tuple[str, str], ...]:
    from offsetlake.kafka.secrets import DatabricksSecrets, kafka_options_from_scope

    return tuple(kafka_options_from_scope(DatabricksSecrets(), scope).items())


@cache
def _properties_options(path: str) -> tuple[tuple[str, str], ...]:
    from offsetlake.kafka.secrets import kafka_options_from_properties

    return tuple(kafka_options_from_properties(Path(path)).items())


def kafka_client_options(settings: PipelineSettings, bootstrap_servers: str) -> dict[str, str]:
    """``kafka.*`` reader options for one cluster: the local properties file's (when the runner names
    one), the secret scope's, then its bootstrap."""
    from offsetlake.kafka.secrets import PROPERTIES_ENV

    options = dict(_properties_options(os.environ[PROPERTIES_ENV])) if os.environ.get(PROPERTIES_ENV) else {}
    if settings.secret_scope:
        options.update(_secret_options(settings.secret_scope))
    options["kafka.bootstrap.servers"] = bootstrap_servers
    return options


def kafka_stream(
    spark: SparkSession,
    settings: PipelineSettings,
    bootstrap_servers: str,
    *,
    role: ClusterRole,
    subscribe: str | None = None,
    subscribe_pattern: str | None = None,
) -> DataFrame:
    """All records of the matching topics from the earliest retained offset, as a stream."""
    if (subscribe is None) == (subscribe_pattern is None):
        raise ValueError("pass exactly one of subscribe or subscribe_pattern")
    options = kafka_client_options(settings, bootstrap_servers)
    options["startingOffsets"] = "earliest"
    if subscribe is not None:
        options["subscribe"] = subscribe
    else:
        options["subscribePattern"] = subscribe_pattern or ""
    if settings.kafka_reader == "builtin" and role == "target":
        # Spark's reader retries each offset lookup fetchOffset.numRetries times (default 3), each
        # waiting up to the client's default.api.timeout.ms (60 s): about 3 minutes before a dead
        # target fails the flow. Bound it by the cluster timeout, one attempt.
        timeout = str(settings.cluster_timeout_ms)
        options.setdefault("kafka.default.api.timeout.ms", timeout)
        options.setdefault("kafka.request.timeout.ms", timeout)
        options.setdefault("fetchOffset.numRetries", "1")
        return spark.readStream.format("kafka").options(**options, includeHeaders="true").load()
    return spark.readStream.format("offsetlake_kafka").options(**_bounded(settings, options)).load()


def group_offsets_stream(
    spark: SparkSession, settings: PipelineSettings, source: ClusterEndpoint
) -> DataFrame:
    """One snapshot of the source cluster's committed group offsets per micro-batch."""
    options = kafka_client_options(settings, source.bootstrap_servers)
    options.update({"groups.include": settings.groups_include, "groups.exclude": settings.groups_exclude})
    return spark.readStream.format("offsetlake_group_offsets").options(**_bounded(settings, options)).load()


def k2k_tracing_stream(spark: SparkSession, settings: PipelineSettings, route: TracingRoute) -> DataFrame:
    """One snapshot of ``route``'s source cluster per micro-batch, each committed position searched on
    the target through K2K's tracing headers, on the driver (data_sources/offsetlake_k2k_tracing.py)."""
    (source,) = [source for source in settings.sources if source.alias == route.alias]
    options = kafka_client_options(settings, source.bootstrap_servers)
    target = kafka_client_options(settings, settings.target_bootstrap_servers)
    options.update({f"{TARGET_OPTION_PREFIX}{name}": value for name, value in target.items()})
    options.update(
        {
            "groups.include": settings.groups_include,
            "groups.exclude": settings.groups_exclude,
            "alias": route.alias,
            "route": route.template,
            "headers": settings.k2k_tracing_headers.text(),
        }
    )
    return spark.readStream.format("offsetlake_k2k_tracing").options(**_bounded(settings, options)).load()


def log_offsets_stream(spark: SparkSession, settings: PipelineSettings, source: ClusterEndpoint) -> DataFrame:
    """One snapshot of the source cluster's log start and log end offsets per micro-batch."""
    options = kafka_client_options(settings, source.bootstrap_servers)
    options.update({"topics.include": settings.topics_include, "topics.exclude": settings.topics_exclude})
    return spark.readStream.format("offsetlake_log_offsets").options(**_bounded(settings, options)).load()


def cluster_health_stream(
    spark: SparkSession, settings: PipelineSettings, alias: str, role: ClusterRole, bootstrap_servers: str
) -> DataFrame:
    """One reachability check of the cluster per micro-batch (table cluster_health)."""
    options = kafka_client_options(settings, bootstrap_servers)
    options.update(cluster=alias, role=role, timeoutMs=str(settings.cluster_timeout_ms))
    return spark.readStream.format("offsetlake_cluster_health").options(**options).load()


def _bounded(settings: PipelineSettings, options: dict[str, str]) -> dict[str, str]:
    """``options`` for an offsetlake data source: a cluster that does not answer within the one
    cluster timeout adds no rows this micro-batch instead of failing the flow."""
    return {**options, "onUnreachable": "skip", "timeoutMs": str(settings.cluster_timeout_ms)}


def reads_records_with_offsetlake(settings: PipelineSettings) -> bool:
    """Whether any stream reads Kafka records with ``offsetlake_kafka`` (source clusters always do)."""
    return settings.kafka_reader == "offsetlake" or settings.offset_syncs_location == "source"


def register_offsetlake_sources(spark: SparkSession, settings: PipelineSettings) -> None:
    """Call at module level: pipeline query functions may not send commands to the server. Only the
    sources these settings use are registered."""
    from offsetlake.data_sources import register_data_sources

    register_data_sources(
        spark,
        kafka_records=reads_records_with_offsetlake(settings),
        k2k_tracing=bool(settings.k2k_tracing_routes),
    )
