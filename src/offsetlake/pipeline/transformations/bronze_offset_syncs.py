"""bronze_offset_syncs: MM2's offset syncs, read on each source cluster (location ``source``) or on
the target by pattern (location ``target``); see offsetlake.pipeline.landing."""

from __future__ import annotations

from pyspark import pipelines as dp
from pyspark.sql import DataFrame
from pyspark.sql import functions as sf

from offsetlake.contract.tables import BRONZE_OFFSET_SYNCS
from offsetlake.mirror.clusters import ClusterEndpoint
from offsetlake.pipeline.kafka_readers import kafka_stream
from offsetlake.pipeline.landing import (
    alias_from_topic,
    bronze_session,
    bronze_table,
    landed,
    per_source_cluster,
)

spark, settings = bronze_session()
policy = settings.policy


def _offset_syncs_on(source: ClusterEndpoint) -> DataFrame:
    if settings.target_alias:
        topic = policy.offset_syncs_topic(settings.target_alias)
        records = kafka_stream(spark, settings, source.bootstrap_servers, role="source", subscribe=topic)
    else:
        pattern = policy.offset_syncs_topic_pattern()
        records = kafka_stream(
            spark, settings, source.bootstrap_servers, role="source", subscribe_pattern=pattern
        )
    return landed(records, sf.lit(source.alias))


if settings.offset_syncs_location == "source":
    per_source_cluster(dp, BRONZE_OFFSET_SYNCS, settings, _offset_syncs_on)
else:

    @bronze_table(dp, BRONZE_OFFSET_SYNCS, settings)
    def bronze_offset_syncs() -> DataFrame:
        pattern = policy.offset_syncs_topic_pattern()
        records = kafka_stream(
            spark, settings, settings.target_bootstrap_servers, role="target", subscribe_pattern=pattern
        )
        return landed(records, alias_from_topic(pattern))
