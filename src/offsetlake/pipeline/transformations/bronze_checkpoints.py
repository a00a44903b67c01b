"""bronze_checkpoints: every MM2 checkpoints topic on the target, by pattern; the alias from the
topic name (how bronze lands Kafka: offsetlake.pipeline.landing)."""

from __future__ import annotations

from pyspark import pipelines as dp
from pyspark.sql import DataFrame

from offsetlake.contract.tables import BRONZE_CHECKPOINTS
from offsetlake.pipeline.kafka_readers import kafka_stream
from offsetlake.pipeline.landing import alias_from_topic, bronze_session, bronze_table, landed

spark, settings = bronze_session()


@bronze_table(dp, BRONZE_CHECKPOINTS, settings)
def bronze_checkpoints() -> DataFrame:
    pattern = settings.policy.checkpoints_topic_pattern()
    records = kafka_stream(
        spark, settings, settings.target_bootstrap_servers, role="target", subscribe_pattern=pattern
    )
    return landed(records, alias_from_topic(pattern))
