"""Spark-native decoding (pipeline/decoding/) agrees with the pure codecs on every fixture record.

Same decoded fields for good records; quarantined (decode_error set) exactly when the codec
raises, with the codec's message. One DataFrame per kind keeps this to a few small Spark jobs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pyspark.sql import functions as sf

from offsetlake.codecs import CodecError
from offsetlake.codecs.connect import decode_connect_offset, mirror_source_position
from offsetlake.codecs.mappings import mapping_decoder
from offsetlake.codecs.mm2 import decode_checkpoint, decode_offset_sync
from offsetlake.contract.tables import QUARANTINE
from offsetlake.pipeline.decoding import inputs
from offsetlake.pipeline.decoding.connect_spark import decode_connect_offsets
from offsetlake.pipeline.decoding.mappings_spark import decode_k2k_json_v1
from offsetlake.pipeline.decoding.mm2_spark import decode_checkpoints, decode_offset_syncs
from offsetlake.pipeline.decoding.wire_spark import DECODE_ERROR
from tests.fixture_records import FixtureRecord, load_fixture_records

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("generated_code")]


def _connect_offset_codec(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """The codec's record and MM2 source position as the Spark decoder's columns."""
    record = decode_connect_offset(key, value)
    position = mirror_source_position(record)
    return {
        "connector": record.connector,
        "tombstone": record.offset is None,
        "source_cluster": position.source_cluster if position else None,
        "topic": position.topic if position else None,
        "partition": position.partition if position else None,
        "upstream_offset": position.upstream_offset if position else None,
    }


# Spark column name -> codec dataclass attribute (or dict key), per kind.
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
    "connect_offset": (
        decode_connect_offsets,
        _connect_offset_codec,
        {name: name for name in ("connector", "tombstone", "source_cluster", "topic", "partition")}
        | {"upstream_offset": "upstream_offset"},
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
                expected = (
                    decoded_by_codec[attribute]
                    if isinstance(decoded_by_codec, dict)
                    else getattr(decoded_by_codec, attribute)
                )
                assert row[column] == expected, (record.id, column)
        else:
            assert row[DECODE_ERROR] is not None, f"{record.id}: codec raised {codec_error!r}"
            assert all(row[column] is None for column in fields), record.id
            assert record.error is not None and record.error in row[DECODE_ERROR], (
                record.id,
                row[DECODE_ERROR],
            )
            if kind != "k2k_mapping" and "malformed JSON" not in codec_error:
                assert row[DECODE_ERROR] == codec_error, record.id


@pytest.mark.parametrize("kind", sorted(CASES))
def test_silver_and_quarantine_shaped_queries_compile_over_a_file_source(
    spark: SparkSession, tmp_path: Path, kind: str
) -> None:
    """Like silver: a file or table source, then a filter on decode_error, with no codegen fallback.

    ``createDataFrame`` rows are decoded at optimization time (a local relation), so the test above
    never generates code. Over a file source, the optimizer pushes the ``decode_error`` filter below
    the projection and generates the whole expression again inside the filter. That is where an
    inlined decoder passes the JVM's 64 KB method limit.
    """
    spark_decoder, _, fields = CASES[kind]
    records = load_fixture_records(kind)
    path = str(tmp_path / kind)
    spark.createDataFrame(
        [(r.id, r.key, r.value) for r in records], "id STRING, key BINARY, value BINARY"
    ).write.parquet(path)
    decoded = spark_decoder(spark.read.parquet(path))
    spark.conf.set("spark.sql.codegen.fallback", "false")
    try:
        good = decoded.where(sf.col(DECODE_ERROR).isNull()).select("id", *fields).collect()
        bad = decoded.where(sf.col(DECODE_ERROR).isNotNull()).select("id", DECODE_ERROR).collect()
    finally:
        spark.conf.unset("spark.sql.codegen.fallback")
    assert sorted(row["id"] for row in good) == sorted(r.id for r in records if r.expected)
    errors = {row["id"]: row[DECODE_ERROR] for row in bad}
    assert sorted(errors) == sorted(r.id for r in records if r.error)
    assert all(record.error in errors[record.id] for record in records if record.error)


DECODED_INPUTS = {
    "checkpoint": inputs.CHECKPOINTS,
    "offset_sync": inputs.OFFSET_SYNCS,
    "connect_offset": inputs.CONNECT_OFFSETS,
    # The records' topic, bound to its source alias as offsetlake.mappings.topics binds it.
    "k2k_mapping": inputs.mappings("k2k-json-v1", {"mm2-topic": "east"}),
}


@pytest.mark.parametrize("kind", sorted(DECODED_INPUTS))
def test_one_decoding_pass_feeds_silver_and_quarantine_one_to_one(
    spark: SparkSession, tmp_path: Path, kind: str
) -> None:
    """Bronze rows of every fixture -> the stored decode result -> silver and quarantine, as the
    pipeline does: each record in exactly one of the two, malformed ones with their bytes and reason."""
    source = DECODED_INPUTS[kind]
    records = load_fixture_records(kind)
    bronze_ddl = ", ".join(f"`{name}` {kind_}" for name, kind_, _ in source.bronze.columns)
    extra = {"source_cluster": "east"} if "source_cluster" in source.bronze.column_names else {}
    raw = spark.createDataFrame(
        [
            {
                "key": r.key,
                "value": r.value,
                "topic": "mm2-topic",
                "partition": 0,
                "offset": offset,
                "timestamp": None,
                "timestampType": 0,
                "headers": [],
                "ingested_at": None,
                **extra,
            }
            for offset, r in enumerate(records)
        ],
        bronze_ddl,
    ).select(*[sf.col(name) for name in source.bronze.column_names])
    raw.write.parquet(str(tmp_path / "bronze"))
    inputs.decode_result(spark.read.parquet(str(tmp_path / "bronze")), source).write.parquet(
        str(tmp_path / "decoded")
    )
    stored = spark.read.parquet(str(tmp_path / "decoded"))
    assert [(f.name, f.dataType.simpleString()) for f in stored.schema] == [
        (name, kind_.lower()) for name, kind_, _ in source.decoded.columns
    ], "the decode result has its table's declared schema"

    silver = inputs.silver_rows(stored, source)
    quarantined = inputs.quarantine_rows(stored, source)
    assert silver.columns == source.silver.column_names and quarantined.columns == QUARANTINE.column_names
    good_offsets = sorted(row["kafka_offset"] for row in silver.collect())
    bad = {row["kafka_offset"]: row for row in quarantined.collect()}
    assert good_offsets == [offset for offset, r in enumerate(records) if r.expected]
    assert sorted(bad) == [offset for offset, r in enumerate(records) if r.error]
    for offset, record in enumerate(records):
        if record.error:
            row = bad[offset]
            assert (row["key"], row["value"]) == (record.key, record.value), record.id
            assert record.error in row["reason"], (record.id, row["reason"])
            assert (row["source_table"], row["kind"]) == (source.bronze.name, source.kind)
            known = "east" if source.source_cluster_from_bronze else None  # from bronze or the binding
            assert row["source_cluster"] == known, record.id
    kept_bytes = stored.where(sf.col("key").isNotNull() | sf.col("value").isNotNull())
    assert kept_bytes.where(sf.col(DECODE_ERROR).isNull()).count() == 0, (
        "raw bytes of good records are not copied"
    )


def test_first_invalid_utf8_byte_and_signed_integers_match_the_codec(spark: SparkSession) -> None:
    """Edge cases the fixtures touch only once: bad byte mid-string, negative INT16/32/64.

    Negative partitions and offsets are meaning errors now, so their decoded value shows in the
    message; equal messages prove the Spark decoder sign-extends like the codec.
    """
    from offsetlake.codecs.mm2 import Checkpoint, encode_checkpoint

    good_key, good_value = encode_checkpoint(Checkpoint("g", "t", 7, 1, 2, "m"))
    bad_group_key = b"\x00\x05ab\xe2\x82z" + good_key[3:]
    short_length_key = b"\xff\xfe"
    rows = [
        ("good", good_key, good_value),
        ("mid", bad_group_key, good_value),
        ("neg", short_length_key, b""),
        ("partition", *encode_checkpoint(Checkpoint("g", "t", -7, 1, 2, "m"))),
        ("upstream", *encode_checkpoint(Checkpoint("g", "t", 0, -1, 2, "m"))),
        ("downstream", *encode_checkpoint(Checkpoint("g", "t", 0, 1, -(2**63), "m"))),
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
    assert (decoded["good"]["partition"], decoded["good"]["upstream_offset"]) == (7, 1)
    assert decoded["partition"][DECODE_ERROR] == "checkpoint key: partition -7 is negative"
    assert decoded["upstream"][DECODE_ERROR] == "checkpoint value: upstreamOffset -1 is negative"
    assert decoded["downstream"][DECODE_ERROR] == f"checkpoint value: offset {-(2**63)} is negative"


TRICKY_TOPICS = [
    "",
    ".",
    "..",
    "...",
    "-",
    "_",
    "a.b_c-D9",
    "t" * 249,
    "t" * 250,
    "ü" * 250,  # too long counts characters, not UTF-8 bytes
    "ü" * 249,  # 249 characters, 498 bytes: too long is not the reason, the alphabet is
    "🚀" * 125,  # 125 characters (250 UTF-16 units in Java): the alphabet is the reason
    "orders\n",  # Java's $ would match before the final line break; \z does not
    "\norders",
    "ab\r\n",
    "a\u0000b",
    "a b",
    "100%",
    "%s",
    "%d",
    "it's",
    "a\\b",
    "ord\u00a0ers",  # no-break space
]


def test_topic_name_rules_match_the_codec_on_tricky_names(spark: SparkSession) -> None:
    """Spark's length and rlike against Python's len and fullmatch, on names where they could differ."""
    from offsetlake.codecs.mappings import OffsetMapping, encode_k2k_json_v1
    from offsetlake.codecs.mm2 import OffsetSync, encode_offset_sync

    syncs = [(str(i), *encode_offset_sync(OffsetSync(name, 0, 1, 2))) for i, name in enumerate(TRICKY_TOPICS)]
    mappings = [
        (str(i), None, encode_k2k_json_v1(OffsetMapping("orders", 0, 1, name, 0, 2))[1])
        for i, name in enumerate(TRICKY_TOPICS)
        if name  # an empty topic is a JSON-shape error in k2k-json-v1, covered by the fixtures
    ]
    for spark_decoder, codec_decoder, rows in (
        (decode_offset_syncs, decode_offset_sync, syncs),
        (decode_k2k_json_v1, mapping_decoder("k2k-json-v1"), mappings),
    ):
        spark.conf.set("spark.sql.codegen.fallback", "false")
        try:
            decoded = {
                row["id"]: row[DECODE_ERROR]
                for row in spark_decoder(
                    spark.createDataFrame(rows, "id STRING, key BINARY, value BINARY")
                ).collect()
            }
        finally:
            spark.conf.unset("spark.sql.codegen.fallback")
        for record_id, key, value in rows:
            _, codec_error = _codec_result(
                codec_decoder, FixtureRecord(record_id, "x", key, value, None, None)
            )
            assert decoded[record_id] == codec_error, (TRICKY_TOPICS[int(record_id)], decoded[record_id])
        accepted = {TRICKY_TOPICS[int(i)] for i, error in decoded.items() if error is None}
        assert accepted == {"...", "-", "_", "a.b_c-D9", "t" * 249}
