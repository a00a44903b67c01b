"""decoded_mappings (when ``offsetlake.mappings.topics`` is set): every bronze_mappings record
decoded once in ``offsetlake.mappings.format``, bound to the source alias of its mapping topic;
silver_mappings and quarantine are filtered from it on ``decode_error`` (see quarantine.py)."""

from __future__ import annotations

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession

from offsetlake.pipeline.decoding import inputs
from offsetlake.pipeline.decoding.inputs import decode_result
from offsetlake.pipeline.generated_code import every_record_conf
from offsetlake.pipeline.kafka_readers import pipeline_settings

spark = SparkSession.builder.getOrCreate()
settings = pipeline_settings(spark)

if settings.mappings_topics:
    source = inputs.mappings(settings.mappings_format, settings.mapping_topic_sources)

    @dp.table(
        name=source.decoded.name,
        comment=source.decoded.comment,
        schema=source.decoded.schema_ddl,
        spark_conf=every_record_conf(spark.conf.getAll),
    )
    def decoded_mappings() -> DataFrame:
        return decode_result(spark.readStream.table(source.bronze.name), source)
