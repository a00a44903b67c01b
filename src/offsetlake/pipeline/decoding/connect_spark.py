"""Spark twin of ``codecs/connect.py``: Kafka Connect source-offset records decoded as Column expressions."""

from __future__ import annotations

from typing import Final

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf

from offsetlake.codecs import semantics
from offsetlake.pipeline.decoding.json_text_spark import StagedJson, python_type_name
from offsetlake.pipeline.decoding.semantics_spark import meaning_error
from offsetlake.pipeline.decoding.wire_spark import Checks, missing, valid_utf8_prefix_bytes, with_decoded
from offsetlake.pipeline.frames import add_columns


class _ConnectJson(StagedJson):
    """One part (key or value) of a Connect offset record as staged JSON columns ``_<prefix>_*``."""

    def member_stage(self, members: dict[str, str]) -> dict[str, Column]:
        """``name -> JSON path`` members of the document, each with its variant type."""
        stage: dict[str, Column] = {}
        for name, path in members.items():
            found = sf.variant_get(self.col("doc"), path, "variant")
            stage[f"_{self._prefix}_{name}"] = found
            stage[f"_{self._prefix}_{name}_type"] = sf.schema_of_variant(found)
        return stage

    def parse_checks(self, checks: Checks) -> None:
        text = self.col("text")
        checks.add(
            ~sf.is_valid_utf8(text),
            sf.format_string(f"{self._part}: invalid UTF-8 at byte %d", valid_utf8_prefix_bytes(text)),
        )
        malformed = self.col("wrapped").isNull() | ~self.col("single")
        checks.add(malformed, sf.lit(f"{self._part}: malformed JSON"))


_JSON_INTEGER_TYPES: Final = ("BIGINT", "INT", "SMALLINT", "TINYINT")


def _typed_member(json_part: _ConnectJson, name: str, kind: str) -> Column:
    """The member as ``kind`` when its JSON type is the one MM2 writes, else NULL."""
    json_type = json_part.col(f"{name}_type")
    is_kind = json_type.isin(*_JSON_INTEGER_TYPES) if kind == "bigint" else json_type == "STRING"
    return sf.when(is_kind, sf.try_variant_get(json_part.col(name), "$", kind))


def _key_checks(key: str, key_json: _ConnectJson) -> Checks:
    """A key's checks, in codecs.connect's order: present, JSON, ``[connector, {partition}]``."""
    checks = Checks()
    checks.add(sf.col(key).isNull(), sf.lit(f"connect offset key: {missing('key')}"))
    key_json.parse_checks(checks)
    key_type = key_json.col("doc_type")
    key_length = sf.json_array_length(sf.to_json(key_json.col("doc")))
    checks.add(
        ~key_type.startswith("ARRAY") | (key_length != 2),
        sf.format_string(
            "connect offset key: expected a JSON array [connector, {partition}], got %s%s",
            python_type_name(key_type),
            sf.when(key_type.startswith("ARRAY"), sf.format_string(" of length %d", key_length)).otherwise(
                ""
            ),
        ),
    )
    checks.add(
        key_json.col("connector_type") != "STRING",
        sf.format_string(
            "connect offset key: connector must be a JSON string, got %s",
            python_type_name(key_json.col("connector_type")),
        ),
    )
    checks.add(
        ~key_json.col("partition_type").startswith("OBJECT"),
        sf.format_string(
            "connect offset key: source partition must be a JSON object, got %s",
            python_type_name(key_json.col("partition_type")),
        ),
    )
    return checks


def _value_checks(value_json: _ConnectJson) -> tuple[Checks, Column]:
    """A present value's checks (JSON, an object or null) and its document's variant type."""
    value_checks = Checks()
    value_json.parse_checks(value_checks)
    value_type = value_json.col("doc_type")
    value_checks.add(
        ~value_type.startswith("OBJECT") & (value_type != "VOID"),
        sf.format_string(
            "connect offset value: source offset must be a JSON object or null, got %s",
            python_type_name(value_type),
        ),
    )
    return value_checks, value_type


def decode_connect_offsets(df: DataFrame, key: str = "key", value: str = "value") -> DataFrame:
    """``codecs.connect.decode_connect_offset`` plus ``mirror_source_position``, as Spark columns.

    Decoded: ``connector``, ``source_partition`` / ``source_offset`` (the JSON documents; object
    keys sorted, as a VARIANT renders them), ``tombstone`` (no value or JSON ``null``), and for
    MirrorSourceConnector's ``{cluster, partition, topic}`` keys ``source_cluster``, ``topic``,
    ``partition`` and ``upstream_offset`` (NULL when reset). Divergences from Python's ``json`` are
    json_text_spark's module docstring's (duplicate keys, integers beyond INT64).
    """
    key_json = _ConnectJson(sf.col(key), "connect offset key", "ck")
    value_json = _ConnectJson(sf.col(value), "connect offset value", "cv")
    stages = [
        {**key_json.parse_stage(), **value_json.parse_stage()},
        {**key_json.document_stage(), **value_json.document_stage()},
        {
            **key_json.member_stage({"connector": "$[0]", "partition": "$[1]"}),
            **value_json.member_stage({"offset": "$.offset"}),
        },
        key_json.member_stage(
            {"p_cluster": "$[1].cluster", "p_topic": "$[1].topic", "p_partition": "$[1].partition"}
        ),
    ]
    staged = df
    for stage in stages:
        staged = add_columns(staged, stage)

    checks = _key_checks(key, key_json)
    value_present = sf.col(value).isNotNull()
    value_checks, value_type = _value_checks(value_json)
    tombstone = sf.col(value).isNull() | (value_type == "VOID")
    partition = _typed_member(key_json, "p_partition", "bigint")
    topic = _typed_member(key_json, "p_topic", "string")
    offset = sf.when(~tombstone, _typed_member(value_json, "offset", "bigint"))
    cluster = _typed_member(key_json, "p_cluster", "string")
    # Staged: the meaning checks read each value several times (see semantics_spark.meaning_error).
    typed = {"_c_partition": partition, "_c_topic": topic, "_c_offset": offset, "_c_cluster": cluster}
    staged = add_columns(staged, typed)
    partition, topic, offset, cluster = (sf.col(name) for name in typed)
    error = sf.coalesce(
        checks.first(),
        sf.when(value_present, value_checks.first()),
        meaning_error(
            semantics.CONNECT_OFFSET_RULES, {"partition": partition, "topic": topic, "offset": offset}
        ),
    )
    is_mirror_source = cluster.isNotNull() & topic.isNotNull() & partition.isNotNull()
    fields = {
        "connector": sf.try_variant_get(key_json.col("connector"), "$", "string"),
        "source_partition": sf.to_json(key_json.col("partition")),
        "source_offset": sf.when(~tombstone, sf.to_json(value_json.col("doc"))),
        "tombstone": tombstone,
        "source_cluster": sf.when(is_mirror_source, cluster),
        "topic": sf.when(is_mirror_source, topic),
        "partition": sf.when(is_mirror_source, partition.cast("int")),
        "upstream_offset": sf.when(is_mirror_source, offset),
    }
    return with_decoded(staged, fields, error)
