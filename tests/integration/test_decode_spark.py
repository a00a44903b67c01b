"""Spark-native decoding (pipeline/decode.py) agrees with the pure codecs on every fixture record.

Same decoded fields for good records; quarantined (decode_error set) exactly when the codec
raises, with the codec's message. One DataFrame per kind keeps this to a few small Spark jobs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from offsetlake.codecs import CodecError
from offsetlake.codecs.mappings import mapping_decoder
from offsetlake.codecs.mm2 import decode_checkpoint, decode_offset_sync
from offsetlake.pipeline.decode import (
    DECODE_ERROR,
    decode_checkpoints,
    decode_k2k_json_v1,
    decode_offset_syncs,
)
from tests.fixture_records import FixtureRecord, load_fixture_records

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = pytest.mark.spark

# Spark column name -> codec dataclass attribute, per kind.
CASES: dict[str, tuple[Callable[[DataFrame], DataFrame], Callable[..., Any], dict[str, str]]] = {
    "checkpoint": (
        decode_checkpoints,
        decode_checkpoint,
        {
            "consumer_group": "group",
            "topic": "topic",
            "partition": "partition",
            "upstream_offset": "upstream_offset",
            "downstream_offset": "downstream_offset",
            "metadata": "metadata",
        },
    ),
    "offset_sync": (
        decode_offset_syncs,
        decode_offset_sync,
        {
            "topic": "topic",
            "partition": "partition",
            "upstream_offset": "upstream_offset",
            "downstream_offset": "downstream_offset",
        },
    ),
    "k2k_mapping": (
        decode_k2k_json_v1,
        mapping_decoder("k2k-json-v1"),
        {name: name for name in ("source_topic", "source_partition", "source_offset")}
        | {name: name for name in ("target_topic", "target_partition", "target_offset")},
    ),
}


def _codec_result(decoder: Callable[..., Any], record: FixtureRecord) -> tuple[Any, str | None]:
    try:
        return decoder(record.key, record.value), None
    except CodecError as error:
        return None, str(error)


@pytest.mark.parametrize("kind", sorted(CASES))
def test_spark_decoding_equals_the_pure_codec_on_every_fixture(spark: SparkSession, kind: str) -> None:
    spark_decoder, codec_decoder, fields = CASES[kind]
    records = load_fixture_records(kind)
    assert any(r.error for r in records) and any(r.expected for r in records), "fixtures cover both"
    raw = spark.createDataFrame(
        [(r.id, r.key, r.value) for r in records], "id STRING, key BINARY, value BINARY"
    )
    # No silent fallback to interpreted evaluation: a pipeline stream fails when codegen does.
    spark.conf.set("spark.sql.codegen.fallback", "false")
    try:
        decoded = {row["id"]: row for row in spark_decoder(raw).collect()}
    finally:
        spark.conf.unset("spark.sql.codegen.fallback")

    for record in records:
        row = decoded[record.id]
        decoded_by_codec, codec_error = _codec_result(codec_decoder, record)
        if codec_error is None:
            assert row[DECODE_ERROR] is None, record.id
            for column, attribute in fields.items():
                assert row[column] == getattr(decoded_by_codec, attribute), (record.id, column)
        else:
            assert row[DECODE_ERROR] is not None, f"{record.id}: codec raised {codec_error!r}"
            assert all(row[column] is None for column in fields), record.id
            assert record.error is not None and record.error in row[DECODE_ERROR], (
                record.id,
                row[DECODE_ERROR],
            )
            if kind != "k2k_mapping":  # JSON parser messages differ by design (see decode.py)
                assert row[DECODE_ERROR] == codec_error, record.id


def test_first_invalid_utf8_byte_and_signed_integers_match_the_codec(spark: SparkSession) -> None:
    """Edge cases the fixtures touch only once: bad byte mid-string, negative INT16/32/64."""
    from offsetlake.codecs.mm2 import Checkpoint, encode_checkpoint

    good_key, good_value = encode_checkpoint(Checkpoint("g", "t", -7, -1, -(2**63), "m"))
    bad_group_key = b"\x00\x05ab\xe2\x82z" + good_key[3:]
    short_length_key = b"\xff\xfe"
    rows = [
        ("good", good_key, good_value),
        ("mid", bad_group_key, good_value),
        ("neg", short_length_key, b""),
    ]
    decoded = {
        row["id"]: row
        for row in decode_checkpoints(
            spark.createDataFrame(rows, "id STRING, key BINARY, value BINARY")
        ).collect()
    }
    for record_id, key, value in rows:
        _, codec_error = _codec_result(
            decode_checkpoint, FixtureRecord(record_id, "checkpoint", key, value, None, None)
        )
        assert decoded[record_id][DECODE_ERROR] == codec_error, record_id
    assert (decoded["good"]["partition"], decoded["good"]["upstream_offset"]) == (-7, -1)
    assert decoded["good"]["downstream_offset"] == -(2**63)
