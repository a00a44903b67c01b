"""bronze_connect_offsets (when ``offsetlake.connect_offsets.topics`` is set): the Kafka Connect
offsets topics on the target, tombstones included (see offsetlake.pipeline.landing)."""

from __future__ import annotations

from pyspark import pipelines as dp
from pyspark.sql import DataFrame

from offsetlake.contract.tables import BRONZE_CONNECT_OFFSETS
from offsetlake.pipeline.kafka_readers import kafka_stream
from offsetlake.pipeline.landing import bronze_session, bronze_table, landed

spark, settings = bronze_session()

if settings.connect_offsets_topics:

    @bronze_table(dp, BRONZE_CONNECT_OFFSETS, settings)
    def bronze_connect_offsets() -> DataFrame:
        records = kafka_stream(
            spark,
            settings,
            settings.target_bootstrap_servers,
            role="target",
            subscribe_pattern=settings.connect_offsets_topics,
        )
        return landed(records, None)
