"""How the transformations read Kafka: settings from the pipeline conf, reader choice, credentials.

Locally (``offsetlake.kafka.reader=offsetlake``) records come from our Python data source; on
Databricks ``builtin`` switches to Spark's ``kafka`` format with the same options and
``includeHeaders=true``, which yields the same columns. Credentials (SASL/SSL ``kafka.*``
options) come from the ``offsetlake.secret_scope`` Databricks secret scope and are only ever
passed to the reader, never logged or stored in a table.
"""

from __future__ import annotations

from functools import cache

from pyspark.sql import DataFrame, SparkSession

from offsetlake.pipeline.settings import PipelineSettings, SourceCluster


def pipeline_settings(spark: SparkSession) -> PipelineSettings:
    """The settings from the pipeline configuration (spark conf); raises ValueError naming a bad key."""
    return PipelineSettings.from_conf(lambda key: spark.conf.get(key, None))


@cache
def _secret_options(scope: str) -> tuple[tuple[str, str], ...]:
    from offsetlake.secrets import DatabricksSecrets, kafka_options_from_scope

    return tuple(kafka_options_from_scope(DatabricksSecrets(), scope).items())


def kafka_client_options(settings: PipelineSettings, bootstrap_servers: str) -> dict[str, str]:
    """``kafka.*`` reader options for one cluster: the secret scope's options, then its bootstrap."""
    options = dict(_secret_options(settings.secret_scope)) if settings.secret_scope else {}
    options["kafka.bootstrap.servers"] = bootstrap_servers
    return options


def kafka_stream(
    spark: SparkSession,
    settings: PipelineSettings,
    bootstrap_servers: str,
    *,
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
    if settings.kafka_reader == "builtin":
        return spark.readStream.format("kafka").options(**options, includeHeaders="true").load()
    return spark.readStream.format("offsetlake_kafka").options(**options).load()


def group_offsets_stream(spark: SparkSession, settings: PipelineSettings, source: SourceCluster) -> DataFrame:
    """One snapshot of the source cluster's committed group offsets per micro-batch."""
    options = kafka_client_options(settings, source.bootstrap_servers)
    options["groups.include"] = settings.groups_include
    options["groups.exclude"] = settings.groups_exclude
    return spark.readStream.format("offsetlake_group_offsets").options(**options).load()


def register_offsetlake_sources(spark: SparkSession) -> None:
    """Call at module level: pipeline query functions may not send commands to the server."""
    from offsetlake.kafka.spark_source import register_data_sources

    register_data_sources(spark)
