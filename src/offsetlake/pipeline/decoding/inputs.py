"""One decoding pass per bronze input, feeding both its silver table and quarantine.

Decoding (the ``*_spark`` modules beside this one) is the costly step of silver. Each bronze
stream is decoded by exactly one streaming flow into its decode-result table (``decoded_*`` in
tables.py): silver's columns, ``decode_error``, and the raw key and value of malformed records
only (bronze keeps every record's bytes; quarantine needs only the bad ones'). The silver table
and quarantine are streaming tables filtered from it on ``decode_error``, so every bronze record
lands in exactly one of them. A temporary view would not save the second decode: every flow that
reads a view evaluates its query again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from pyspark.sql import DataFrame
from pyspark.sql import functions as sf

from offsetlake.contract.tables import (
    BRONZE_CHECKPOINTS,
    BRONZE_CONNECT_OFFSETS,
    BRONZE_MAPPINGS,
    BRONZE_OFFSET_SYNCS,
    DECODED_CHECKPOINTS,
    DECODED_CONNECT_OFFSETS,
    DECODED_MAPPINGS,
    DECODED_OFFSET_SYNCS,
    SILVER_CHECKPOINTS,
    SILVER_CONNECT_OFFSETS,
    SILVER_MAPPINGS,
    SILVER_OFFSET_SYNCS,
    TableSpec,
)
from offsetlake.pipeline.decoding.connect_spark import decode_connect_offsets
from offsetlake.pipeline.decoding.mappings_spark import MAPPING_DECODERS
from offsetlake.pipeline.decoding.mm2_spark import decode_checkpoints, decode_offset_syncs
from offsetlake.pipeline.decoding.wire_spark import DECODE_ERROR
from offsetlake.pipeline.frames import add_columns

_RAW_NAMES: Final = {"topic": "topic_raw", "partition": "partition_raw"}
"""Bronze's topic/partition renamed, freeing the names for the decoded fields."""
_COORDINATES: Final = {
    "kafka_topic": "topic_raw",
    "kafka_partition": "partition_raw",
    "kafka_offset": "offset",
}


@dataclass(frozen=True)
class DecodedInput:
    """A bronze table, how its records decode, and the tables the one decoding pass feeds."""

    bronze: TableSpec
    decoded: TableSpec
    silver: TableSpec
    decode: Callable[[DataFrame], DataFrame]
    kind: str
    """Quarantine's ``kind``: the format the records were expected in."""
    timestamp_column: str
    """Silver's name for the Kafka record timestamp (quarantine's ``kafka_timestamp``)."""
    source_cluster_from_bronze: bool
    """The source alias is known from the record's topic (its name, or the mapping topic's binding);
    otherwise quarantine's source_cluster is NULL."""


CHECKPOINTS: Final = DecodedInput(
    BRONZE_CHECKPOINTS,
    DECODED_CHECKPOINTS,
    SILVER_CHECKPOINTS,
    decode_checkpoints,
    "checkpoint",
    "checkpoint_timestamp",
    source_cluster_from_bronze=True,
)
OFFSET_SYNCS: Final = DecodedInput(
    BRONZE_OFFSET_SYNCS,
    DECODED_OFFSET_SYNCS,
    SILVER_OFFSET_SYNCS,
    decode_offset_syncs,
    "offset_sync",
    "sync_timestamp",
    source_cluster_from_bronze=True,
)
CONNECT_OFFSETS: Final = DecodedInput(
    BRONZE_CONNECT_OFFSETS,
    DECODED_CONNECT_OFFSETS,
    SILVER_CONNECT_OFFSETS,
    decode_connect_offsets,
    "connect_offset",
    "offset_timestamp",
    source_cluster_from_bronze=False,
)


def mappings(mappings_format: str, topic_sources: Mapping[str, str]) -> DecodedInput:
    """Record-level mappings in ``offsetlake.mappings.format`` (its name is the quarantine kind);
    ``topic_sources`` binds each mapping topic to its source alias (a mapping names no cluster)."""
    decode_format = MAPPING_DECODERS[mappings_format]

    def decode(raw: DataFrame) -> DataFrame:
        source_cluster = sf.lit(None).cast("string")
        for topic, alias in sorted(topic_sources.items()):
            source_cluster = sf.when(sf.col("topic_raw") == topic, sf.lit(alias)).otherwise(source_cluster)
        return add_columns(decode_format(raw), {"source_cluster": source_cluster})

    return DecodedInput(
        BRONZE_MAPPINGS,
        DECODED_MAPPINGS,
        SILVER_MAPPINGS,
        decode,
        mappings_format,
        "mapping_timestamp",
        source_cluster_from_bronze=True,
    )


def decode_result(raw: DataFrame, source: DecodedInput) -> DataFrame:
    """Bronze rows of ``source`` decoded once, shaped as its ``decoded_*`` table."""
    # A select, not withColumnsRenamed: see frames.py for why.
    renamed = raw.select(
        *[sf.col(name).alias(_RAW_NAMES.get(name, name)) for name in source.bronze.column_names]
    )
    coordinates = {name: sf.col(raw_name) for name, raw_name in _COORDINATES.items()}
    decoded = add_columns(
        source.decode(renamed), {**coordinates, source.timestamp_column: sf.col("timestamp")}
    )
    malformed = sf.col(DECODE_ERROR).isNotNull()
    return decoded.select(
        *source.silver.column_names,
        DECODE_ERROR,
        sf.when(malformed, sf.col("key")).alias("key"),
        sf.when(malformed, sf.col("value")).alias("value"),
    )


def silver_rows(decoded: DataFrame, source: DecodedInput) -> DataFrame:
    """The records that decoded, as ``source.silver``."""
    return decoded.where(sf.col(DECODE_ERROR).isNull()).select(*source.silver.column_names)


def quarantine_rows(decoded: DataFrame, source: DecodedInput) -> DataFrame:
    """The records that did not decode, with their bytes and reason, as quarantine."""
    source_cluster = sf.col("source_cluster") if source.source_cluster_from_bronze else sf.lit(None)
    return decoded.where(sf.col(DECODE_ERROR).isNotNull()).select(
        sf.lit(source.bronze.name).alias("source_table"),
        sf.lit(source.kind).alias("kind"),
        source_cluster.cast("string").alias("source_cluster"),
        "kafka_topic",
        "kafka_partition",
        "kafka_offset",
        sf.col(source.timestamp_column).alias("kafka_timestamp"),
        "key",
        "value",
        sf.col(DECODE_ERROR).alias("reason"),
        "ingested_at",
    )
