"""decoded_connect_offsets (when ``offsetlake.connect_offsets.topics`` is set): every
bronze_connect_offsets record decoded once; silver_connect_offsets and quarantine are filtered from
it on ``decode_error`` (see quarantine.py)."""

from __future__ import annotations

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession

from offsetlake.pipeline.decoding import inputs
from offsetlake.pipeline.decoding.inputs import decode_result
from offsetlake.pipeline.generated_code import every_record_conf
from offsetlake.pipeline.kafka_readers import pipeline_settings

spark = SparkSession.builder.getOrCreate()
settings = pipeline_settings(spark)
source = inputs.CONNECT_OFFSETS

if settings.connect_offsets_topics:

    @dp.table(
        name=source.decoded.name,
        comment=source.decoded.comment,
        schema=source.decoded.schema_ddl,
        spark_conf=every_record_conf(spark.conf.getAll),
    )
    def decoded_connect_offsets() -> DataFrame:
        return decode_result(spark.readStream.table(source.bronze.name), source)
