"""source_log_offsets: each source partition's log start and end, one snapshot per update (see
offsetlake.pipeline.landing)."""

from __future__ import annotations

from pyspark import pipelines as dp
from pyspark.sql import functions as sf

from offsetlake.contract.tables import SOURCE_LOG_OFFSETS
from offsetlake.pipeline.kafka_readers import log_offsets_stream
from offsetlake.pipeline.landing import bronze_session, landed, per_source_cluster

spark, settings = bronze_session()

per_source_cluster(
    dp,
    SOURCE_LOG_OFFSETS,
    settings,
    lambda source: landed(log_offsets_stream(spark, settings, source), sf.lit(source.alias)),
)
