"""Silver: decoded, typed streaming tables, and the quarantine for records that do not decode.

Decoding is Spark-native (offsetlake.pipeline.decode, no per-row Python UDF). Each bronze stream
is decoded twice, once by the silver flow (good records) and once by a quarantine flow (records
with a decode_error); the split is on the same deterministic expression, so every bronze record
lands in exactly one of the two and nothing is dropped or fails the update.
"""

from __future__ import annotations

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as sf

from offsetlake.pipeline.decode import (
    DECODE_ERROR,
    MAPPING_DECODERS,
    decode_checkpoints,
    decode_connect_offsets,
    decode_offset_syncs,
)
from offsetlake.pipeline.frames import add_columns
from offsetlake.pipeline.sources import pipeline_settings
from offsetlake.pipeline.tables import (
    BRONZE_CHECKPOINTS,
    BRONZE_CONNECT_OFFSETS,
    BRONZE_GROUP_OFFSETS,
    BRONZE_MAPPINGS,
    BRONZE_OFFSET_SYNCS,
    QUARANTINE,
    SILVER_CHECKPOINTS,
    SILVER_CONNECT_OFFSETS,
    SILVER_GROUP_OFFSETS,
    SILVER_MAPPINGS,
    SILVER_OFFSET_SYNCS,
    TableSpec,
)

spark = SparkSession.builder.getOrCreate()
settings = pipeline_settings(spark)

_COORDINATES = {
    "kafka_topic": sf.col("topic_raw"),
    "kafka_partition": sf.col("partition_raw"),
    "kafka_offset": sf.col("offset"),
}


def _raw_coordinates_renamed(raw: DataFrame, bronze: TableSpec) -> DataFrame:
    """Free the names topic/partition for the decoded fields (a select: see frames.py for why)."""
    renamed = {"topic": "topic_raw", "partition": "partition_raw"}
    return raw.select(*[sf.col(name).alias(renamed.get(name, name)) for name in bronze.column_names])


def _decoded_checkpoints() -> DataFrame:
    raw = spark.readStream.table(BRONZE_CHECKPOINTS.name)
    return decode_checkpoints(_raw_coordinates_renamed(raw, BRONZE_CHECKPOINTS))


def _decoded_offset_syncs() -> DataFrame:
    raw = spark.readStream.table(BRONZE_OFFSET_SYNCS.name)
    return decode_offset_syncs(_raw_coordinates_renamed(raw, BRONZE_OFFSET_SYNCS))


def _decoded_mappings() -> DataFrame:
    raw = spark.readStream.table(BRONZE_MAPPINGS.name)
    decoder = MAPPING_DECODERS[settings.mappings_format]
    return decoder(_raw_coordinates_renamed(raw, BRONZE_MAPPINGS))


def _decoded_connect_offsets() -> DataFrame:
    raw = spark.readStream.table(BRONZE_CONNECT_OFFSETS.name)
    return decode_connect_offsets(_raw_coordinates_renamed(raw, BRONZE_CONNECT_OFFSETS))


def _good(decoded: DataFrame, table: TableSpec, timestamp_column: str) -> DataFrame:
    named = add_columns(
        decoded.where(sf.col(DECODE_ERROR).isNull()), {**_COORDINATES, timestamp_column: sf.col("timestamp")}
    )
    return named.select(*table.column_names)


def _quarantined(
    decoded: DataFrame, source_table: str, kind: str, has_source_cluster: bool = True
) -> DataFrame:
    source_cluster = sf.col("source_cluster") if has_source_cluster else sf.lit(None).cast("string")
    return decoded.where(sf.col(DECODE_ERROR).isNotNull()).select(
        sf.lit(source_table).alias("source_table"),
        sf.lit(kind).alias("kind"),
        source_cluster.alias("source_cluster"),
        sf.col("topic_raw").alias("kafka_topic"),
        sf.col("partition_raw").alias("kafka_partition"),
        sf.col("offset").alias("kafka_offset"),
        sf.col("timestamp").alias("kafka_timestamp"),
        "key",
        "value",
        sf.col(DECODE_ERROR).alias("reason"),
        "ingested_at",
    )


@dp.table(
    name=SILVER_CHECKPOINTS.name, comment=SILVER_CHECKPOINTS.comment, schema=SILVER_CHECKPOINTS.schema_ddl
)
def silver_checkpoints() -> DataFrame:
    return _good(_decoded_checkpoints(), SILVER_CHECKPOINTS, "checkpoint_timestamp")


@dp.table(
    name=SILVER_OFFSET_SYNCS.name, comment=SILVER_OFFSET_SYNCS.comment, schema=SILVER_OFFSET_SYNCS.schema_ddl
)
def silver_offset_syncs() -> DataFrame:
    return _good(_decoded_offset_syncs(), SILVER_OFFSET_SYNCS, "sync_timestamp")


@dp.table(
    name=SILVER_GROUP_OFFSETS.name,
    comment=SILVER_GROUP_OFFSETS.comment,
    schema=SILVER_GROUP_OFFSETS.schema_ddl,
)
def silver_group_offsets() -> DataFrame:
    """Typed already by the data source; partitions without a commit never reach bronze."""
    return spark.readStream.table(BRONZE_GROUP_OFFSETS.name).select(*SILVER_GROUP_OFFSETS.column_names)


@dp.table(name=QUARANTINE.name, comment=QUARANTINE.comment, schema=QUARANTINE.schema_ddl)
def quarantine() -> DataFrame:
    """One flow for all kinds (see bronze.py on why not one append flow per kind)."""
    quarantined = _quarantined(_decoded_checkpoints(), BRONZE_CHECKPOINTS.name, "checkpoint").unionByName(
        _quarantined(_decoded_offset_syncs(), BRONZE_OFFSET_SYNCS.name, "offset_sync")
    )
    if settings.connect_offsets_topics:
        quarantined = quarantined.unionByName(
            _quarantined(
                _decoded_connect_offsets(),
                BRONZE_CONNECT_OFFSETS.name,
                "connect_offset",
                has_source_cluster=False,
            )
        )
    if settings.mappings_topics:
        quarantined = quarantined.unionByName(
            _quarantined(
                _decoded_mappings(), BRONZE_MAPPINGS.name, settings.mappings_format, has_source_cluster=False
            )
        )
    return quarantined


if settings.mappings_topics:

    @dp.table(name=SILVER_MAPPINGS.name, comment=SILVER_MAPPINGS.comment, schema=SILVER_MAPPINGS.schema_ddl)
    def silver_mappings() -> DataFrame:
        return _good(_decoded_mappings(), SILVER_MAPPINGS, "mapping_timestamp")


if settings.connect_offsets_topics:

    @dp.table(
        name=SILVER_CONNECT_OFFSETS.name,
        comment=SILVER_CONNECT_OFFSETS.comment,
        schema=SILVER_CONNECT_OFFSETS.schema_ddl,
    )
    def silver_connect_offsets() -> DataFrame:
        return _good(_decoded_connect_offsets(), SILVER_CONNECT_OFFSETS, "offset_timestamp")
