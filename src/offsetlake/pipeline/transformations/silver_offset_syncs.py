"""silver_offset_syncs: the records of decoded_offset_syncs that decoded, typed; on Databricks with
warn-only expectations (offsetlake.pipeline.expectations), counted in the event log, never dropping a row."""

from __future__ import annotations

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession

from offsetlake.pipeline.decoding import inputs
from offsetlake.pipeline.decoding.inputs import silver_rows
from offsetlake.pipeline.expectations import expect_all

spark = SparkSession.builder.getOrCreate()

source = inputs.OFFSET_SYNCS


@dp.table(name=source.silver.name, comment=source.silver.comment, schema=source.silver.schema_ddl)
@expect_all(dp, source.silver.name)
def silver_offset_syncs() -> DataFrame:
    return silver_rows(spark.readStream.table(source.decoded.name), source)
