"""bronze_mappings (when ``offsetlake.mappings.topics`` is set): the record-level mapping topics on
the target; their binding to source aliases is applied when they are decoded (see
offsetlake.pipeline.landing)."""

from __future__ import annotations

from pyspark import pipelines as dp
from pyspark.sql import DataFrame

from offsetlake.contract.tables import BRONZE_MAPPINGS
from offsetlake.pipeline.kafka_readers import kafka_stream
from offsetlake.pipeline.landing import bronze_session, bronze_table, landed

spark, settings = bronze_session()

if settings.mappings_topics:

    @bronze_table(dp, BRONZE_MAPPINGS, settings)
    def bronze_mappings() -> DataFrame:
        records = kafka_stream(
            spark,
            settings,
            settings.target_bootstrap_servers,
            role="target",
            subscribe=",".join(sorted(settings.mapping_topic_sources)),
        )
        return landed(records, None)
