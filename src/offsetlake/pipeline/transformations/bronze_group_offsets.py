"""bronze_group_offsets: one snapshot of the committed offsets on each source cluster per update
(see offsetlake.pipeline.landing)."""

from __future__ import annotations

from pyspark import pipelines as dp
from pyspark.sql import functions as sf

from offsetlake.contract.tables import BRONZE_GROUP_OFFSETS
from offsetlake.pipeline.kafka_readers import group_offsets_stream
from offsetlake.pipeline.landing import bronze_session, landed, per_source_cluster

spark, settings = bronze_session()

per_source_cluster(
    dp,
    BRONZE_GROUP_OFFSETS,
    settings,
    lambda source: landed(group_offsets_stream(spark, settings, source), sf.lit(source.alias)),
)
