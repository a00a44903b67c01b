"""quarantine: the records of every decoded input that did not decode, with their raw bytes.

Decoding is Spark-native (offsetlake.pipeline.decoding, no per-row Python UDF) and happens once per
bronze record: one streaming flow per input writes its ``decoded_*`` table, and the silver table
and quarantine are streaming tables filtered from it on ``decode_error``
(offsetlake.pipeline.decoding.inputs), so every bronze record lands in exactly one of the two and
nothing is dropped or fails the update. On Databricks each silver table also declares warn-only
expectations (offsetlake.pipeline.expectations): counted in the event log, never dropping a row.
"""

from __future__ import annotations

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession

from offsetlake.contract.tables import QUARANTINE
from offsetlake.pipeline.decoding import inputs
from offsetlake.pipeline.decoding.inputs import DecodedInput, quarantine_rows
from offsetlake.pipeline.kafka_readers import pipeline_settings
from offsetlake.pipeline.landing import union

spark = SparkSession.builder.getOrCreate()
settings = pipeline_settings(spark)

INPUTS: list[DecodedInput] = [inputs.CHECKPOINTS, inputs.OFFSET_SYNCS]
if settings.connect_offsets_topics:
    INPUTS.append(inputs.CONNECT_OFFSETS)
if settings.mappings_topics:
    INPUTS.append(inputs.mappings(settings.mappings_format, settings.mapping_topic_sources))


@dp.table(name=QUARANTINE.name, comment=QUARANTINE.comment, schema=QUARANTINE.schema_ddl)
def quarantine() -> DataFrame:
    """One flow for all kinds (offsetlake.pipeline.landing.union on why not one append flow per kind)."""
    return union([quarantine_rows(spark.readStream.table(source.decoded.name), source) for source in INPUTS])
