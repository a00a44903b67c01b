"""Spark twin of ``codecs/mm2.py``: MM2 checkpoints and offset syncs decoded as Column expressions."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as sf

from offsetlake.codecs import semantics
from offsetlake.codecs.mm2 import CHECKPOINT_VALUE_VERSION
from offsetlake.pipeline.decoding.semantics_spark import meaning_error
from offsetlake.pipeline.decoding.wire_spark import WireParser, missing, staged, with_decoded


def decode_checkpoints(df: DataFrame, key: str = "key", value: str = "value") -> DataFrame:
    """Checkpoint key (group, topic, partition) and value (version 0, upstream, downstream, metadata)."""
    key_parser = WireParser(sf.col(key), "checkpoint key", missing("key"))
    group = key_parser.string("group")
    topic = key_parser.string("topic")
    partition = key_parser.int32("partition")
    key_parser.end()

    value_parser = WireParser(sf.col(value), "checkpoint value", missing("value"))
    value_parser.version(CHECKPOINT_VALUE_VERSION)
    upstream_offset = value_parser.int64("upstreamOffset")
    downstream_offset = value_parser.int64("offset")
    metadata = value_parser.string("metadata")
    value_parser.end()

    return with_decoded(
        staged(df, key_parser, value_parser),
        {
            "consumer_group": group,
            "topic": topic,
            "partition": partition,
            "upstream_offset": upstream_offset,
            "downstream_offset": downstream_offset,
            "metadata": metadata,
        },
        sf.coalesce(
            key_parser.checks.first(),
            value_parser.checks.first(),
            meaning_error(
                semantics.CHECKPOINT_RULES,
                {
                    "group": group,
                    "topic": topic,
                    "partition": partition,
                    "upstream_offset": upstream_offset,
                    "downstream_offset": downstream_offset,
                },
            ),
        ),
    )


def decode_offset_syncs(df: DataFrame, key: str = "key", value: str = "value") -> DataFrame:
    """OffsetSync key (upstream topic, partition) and 16-byte value (upstream, downstream)."""
    key_parser = WireParser(sf.col(key), "offset sync key", missing("key"))
    topic = key_parser.string("topic")
    partition = key_parser.int32("partition")
    key_parser.end()

    value_parser = WireParser(sf.col(value), "offset sync value", missing("value"))
    upstream_offset = value_parser.int64("upstreamOffset")
    downstream_offset = value_parser.int64("offset")
    value_parser.end()

    return with_decoded(
        staged(df, key_parser, value_parser),
        {
            "topic": topic,
            "partition": partition,
            "upstream_offset": upstream_offset,
            "downstream_offset": downstream_offset,
        },
        sf.coalesce(
            key_parser.checks.first(),
            value_parser.checks.first(),
            meaning_error(
                semantics.OFFSET_SYNC_RULES,
                {
                    "topic": topic,
                    "partition": partition,
                    "upstream_offset": upstream_offset,
                    "downstream_offset": downstream_offset,
                },
            ),
        ),
    )
