"""decoded_offset_syncs: every bronze_offset_syncs record decoded once, Spark-native; silver_offset_syncs
and quarantine are filtered from it on ``decode_error`` (see quarantine.py)."""

from __future__ import annotations

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession

from offsetlake.pipeline.decoding import inputs
from offsetlake.pipeline.decoding.inputs import decode_result
from offsetlake.pipeline.generated_code import every_record_conf

spark = SparkSession.builder.getOrCreate()

source = inputs.OFFSET_SYNCS


@dp.table(
    name=source.decoded.name,
    comment=source.decoded.comment,
    schema=source.decoded.schema_ddl,
    spark_conf=every_record_conf(spark.conf.getAll),
)
def decoded_offset_syncs() -> DataFrame:
    return decode_result(spark.readStream.table(source.bronze.name), source)
