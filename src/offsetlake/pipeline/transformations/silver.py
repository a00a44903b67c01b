"""Silver: decoded, typed streaming tables, and the quarantine for records that do not decode.

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

from offsetlake.pipeline.decoding import inputs
from offsetlake.pipeline.decoding.inputs import DecodedInput, decode_result, quarantine_rows, silver_rows
from offsetlake.pipeline.expectations import expect_all
from offsetlake.pipeline.kafka_readers import pipeline_settings
from offsetlake.pipeline.tables import BRONZE_GROUP_OFFSETS, QUARANTINE, SILVER_GROUP_OFFSETS

spark = SparkSession.builder.getOrCreate()
settings = pipeline_settings(spark)

INPUTS: list[DecodedInput] = [inputs.CHECKPOINTS, inputs.OFFSET_SYNCS]
if settings.connect_offsets_topics:
    INPUTS.append(inputs.CONNECT_OFFSETS)
if settings.mappings_topics:
    INPUTS.append(inputs.mappings(settings.mappings_format, settings.mapping_topic_sources))


def _declare_decoded_and_silver(source: DecodedInput) -> None:
    decoded, silver = source.decoded, source.silver

    @dp.table(name=decoded.name, comment=decoded.comment, schema=decoded.schema_ddl)
    def decoded_table() -> DataFrame:
        return decode_result(spark.readStream.table(source.bronze.name), source)

    @dp.table(name=silver.name, comment=silver.comment, schema=silver.schema_ddl)
    @expect_all(dp, silver.name)
    def silver_table() -> DataFrame:
        return silver_rows(spark.readStream.table(decoded.name), source)


for _input in INPUTS:
    _declare_decoded_and_silver(_input)


@dp.table(
    name=SILVER_GROUP_OFFSETS.name,
    comment=SILVER_GROUP_OFFSETS.comment,
    schema=SILVER_GROUP_OFFSETS.schema_ddl,
    cluster_by=settings.apply_cluster_by,
)
@expect_all(dp, SILVER_GROUP_OFFSETS.name)
def silver_group_offsets() -> DataFrame:
    """Typed already by the data source; partitions without a commit never reach bronze."""
    return spark.readStream.table(BRONZE_GROUP_OFFSETS.name).select(*SILVER_GROUP_OFFSETS.column_names)


@dp.table(name=QUARANTINE.name, comment=QUARANTINE.comment, schema=QUARANTINE.schema_ddl)
def quarantine() -> DataFrame:
    """One flow for all kinds (see bronze.py on why not one append flow per kind)."""
    quarantined = [quarantine_rows(spark.readStream.table(source.decoded.name), source) for source in INPUTS]
    union = quarantined[0]
    for rows in quarantined[1:]:
        union = union.unionByName(rows)
    return union
