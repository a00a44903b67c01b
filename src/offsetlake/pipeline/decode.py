"""Spark-native decoding of MM2 checkpoints, offset syncs and K2K mappings (no per-row Python UDF).

The pure codecs in ``offsetlake.codecs`` are the specification; this module re-expresses them as
Catalyst expressions so decoding runs in the JVM at full speed inside streaming flows:

- Kafka protocol integers: ``hex`` + ``conv`` on ``substring`` of the binary. ``conv`` to base -10
  reads 16 hex digits as a signed INT64; INT16/INT32 are sign-extended with a shift pair.
- STRING: INT16 length then bytes; UTF-8 checked with ``is_valid_utf8`` (Spark 4). The reported
  byte of the first invalid sequence comes from ``make_valid_utf8``; it is exact unless the string
  holds a literal U+FFFD before the bad bytes, in which case it points at that earlier U+FFFD.
- K2K JSON: ``try_parse_json`` to a VARIANT, ``schema_of_variant`` for JSON types (so ``true``,
  ``1.5`` and ``"7"`` are rejected where an integer is required, like the codec does). Spark's
  parser ignores text after the first JSON value, so the document is parsed inside a wrapper
  array with a sentinel element and must come back as exactly [document, sentinel]. Divergences
  from Python's ``json``: a duplicate key is malformed here (Python keeps the last), integers
  beyond INT64 are rejected here, and the "malformed JSON" reason omits Python's parser detail.

Every decoder returns the input columns plus the decoded fields and ``decode_error``: NULL for a
good record, otherwise the same message the pure codec raises (checked on every fixture by
tests/integration/test_decode_spark.py). Callers split on it into silver and quarantine, so a
malformed record is kept with its reason and never fails the pipeline.

Meaning checks (``codecs/semantics.py``: legal topic names, non-empty group, no negative
partition or offset) come after every byte check of key and value, as in the codecs. They are
built from the codecs' own rule tables and message templates. The topic alphabet is matched with
``rlike`` anchored by ``\\z``: Java's ``$`` would also match before a final line break.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf

from offsetlake.codecs import semantics
from offsetlake.codecs.mm2 import CHECKPOINT_VALUE_VERSION
from offsetlake.pipeline.frames import add_columns

DECODE_ERROR: Final = "decode_error"
_JSON_SENTINEL: Final = "\u0000offsetlake-end-of-document"
"""Written as a JSON escape, so a document can only forge it by spelling out the escape itself."""
_JSON_SENTINEL_LITERAL: Final = '"\\u0000offsetlake-end-of-document"'


class _Checks:
    """Failure checks in codec order; the first that fires is the error, like the codec raising.

    Kept as one flat ``coalesce`` of ``when``s: nesting them per field makes generated code grow
    past the JVM's 64 KB method limit for the JSON format.
    """

    def __init__(self) -> None:
        self._checks: list[Column] = []

    def add(self, condition: Column, message: Column) -> None:
        self._checks.append(sf.when(condition, message))

    def first(self) -> Column:
        return sf.coalesce(*self._checks, sf.lit(None).cast("string"))


class _WireParser:
    """Builds Column expressions reading Kafka protocol fields in order from one binary column.

    Positions are 0-based like the codec's messages. After a failure later expressions may read
    garbage, but ``error`` keeps only the first failure and the decoded values are nulled by the
    caller, so garbage never escapes.
    """

    def __init__(self, data: Column, part: str, missing_message: str) -> None:
        self._data = data
        self._part = part
        self._size = sf.length(data)
        self._position: Column = sf.lit(0)
        self.checks = _Checks()
        self.checks.add(data.isNull(), sf.lit(f"{part}: {missing_message}"))

    def _left(self) -> Column:
        return self._size - self._position

    def _truncated(self, at: Column, field: str, kind: str, need: Column) -> Column:
        return sf.format_string(
            f"{self._part}: truncated at byte %d reading {field} ({kind}): need %d bytes, %d left",
            at,
            need,
            self._size - at,
        )

    def _read_int(self, field: str, kind: str, size: int) -> Column:
        at = self._position
        self.checks.add(self._left() < size, self._truncated(at, field, kind, sf.lit(size)))
        raw_hex = sf.hex(sf.substring(self._data, at + 1, sf.lit(size)))
        if size == 8:
            value = sf.conv(raw_hex, 16, -10).cast("bigint")
        else:
            unused_bits = 64 - 8 * size
            value = sf.shiftright(
                sf.shiftleft(sf.conv(raw_hex, 16, 10).cast("bigint"), unused_bits), unused_bits
            )
        self._position = at + size
        return value

    def int16(self, field: str) -> Column:
        return self._read_int(field, "INT16", 2).cast("smallint")

    def int32(self, field: str) -> Column:
        return self._read_int(field, "INT32", 4).cast("int")

    def int64(self, field: str) -> Column:
        return self._read_int(field, "INT64", 8)

    def version(self, expected: int) -> None:
        version = self.int16("version")
        self.checks.add(
            version != expected,
            sf.format_string(
                f"{self._part}: unsupported version %d at byte 0 (only {expected} is defined)", version
            ),
        )

    def string(self, field: str) -> Column:
        length_at = self._position
        length = self._read_int(f"{field} length", "INT16", 2)
        self.checks.add(
            length < 0,
            sf.format_string(
                f"{self._part}: negative string length %d at byte %d for {field} (STRING)", length, length_at
            ),
        )
        body_at = self._position
        self.checks.add(self._left() < length, self._truncated(body_at, field, "STRING", length))
        text = sf.substring(self._data, body_at + 1, length).cast("string")
        self.checks.add(
            ~sf.is_valid_utf8(text),
            sf.format_string(
                f"{self._part}: invalid UTF-8 in {field} (STRING) at byte %d",
                body_at + _valid_utf8_prefix_bytes(text),
            ),
        )
        self._position = body_at + length
        return text

    def end(self) -> None:
        left = self._left()
        self.checks.add(
            left > 0,
            sf.format_string(
                f"{self._part}: %d trailing byte%s after the last field at byte %d "
                "(expected exactly %d bytes)",
                left,
                sf.when(left == 1, sf.lit("")).otherwise(sf.lit("s")),
                self._position,
                self._position,
            ),
        )


def _valid_utf8_prefix_bytes(text: Column) -> Column:
    """Bytes before the first invalid sequence (see the module docstring for the U+FFFD caveat)."""
    repaired = sf.make_valid_utf8(text)
    first_replacement = sf.instr(repaired, "\ufffd")
    return sf.octet_length(sf.substring(repaired, sf.lit(1), first_replacement - 1))


def _non_empty(checks: _Checks, part: str, field: str, value: Column) -> None:
    checks.add(value == "", sf.lit(semantics.empty_message(part, field)))


def _kafka_topic(checks: _Checks, part: str, field: str, name: Column) -> None:
    """``semantics.kafka_topic``: Kafka's ``Topic.validate`` rules in Kafka's order."""
    checks.add(name == "", sf.lit(semantics.empty_message(part, field)))
    checks.add(
        name.isin(*semantics.RESERVED_TOPIC_NAMES),
        sf.format_string(semantics.reserved_topic_template(part, field), name),
    )
    length = sf.length(name)  # characters (code points), like Python's len
    checks.add(
        length > semantics.TOPIC_MAX_LENGTH,
        sf.format_string(semantics.long_topic_template(part, field), length),
    )
    checks.add(
        ~name.rlike(f"^[{semantics.TOPIC_LEGAL_CHARACTERS}]+\\z"),
        sf.format_string(semantics.illegal_topic_template(part, field), name),
    )


def _non_negative(checks: _Checks, part: str, field: str, value: Column) -> None:
    checks.add(value < 0, sf.format_string(semantics.negative_template(part, field), value))


_SPARK_RULES: Final = {
    semantics.non_empty: _non_empty,
    semantics.kafka_topic: _kafka_topic,
    semantics.non_negative: _non_negative,
}


def _meaning_error(rules: Sequence[semantics.FieldRule], values: dict[str, Column]) -> Column:
    """The first failing rule's message (``semantics.first_error``), NULL when all pass.

    The decoded values are bound once, as a lambda's argument, and the rules read that variable.
    Inlined, every rule would repeat the whole byte-parsing expression of its field (a topic is
    read ~7 times). Over a file or table source, a filter on ``decode_error`` is pushed
    below the projection, so the expression is generated again inside the filter, and the
    whole-stage method passes the JVM's 64 KB limit. A higher-order function is not whole-stage
    generated, so the decode projection and filter are compiled per expression instead. That
    path splits large expressions into methods
    (tests/integration/test_decode_spark.py::test_silver_and_quarantine_shaped_queries_compile_over_a_file_source).
    """

    def first_failure(decoded: Column) -> Column:
        checks = _Checks()
        for field_rule in rules:
            check = _SPARK_RULES[field_rule.rule]
            check(checks, field_rule.part, field_rule.field, decoded[field_rule.attribute])
        return checks.first()

    record = sf.struct(*[value.alias(name) for name, value in values.items()])
    return sf.transform(sf.array(record), first_failure)[0]


def _with_decoded(df: DataFrame, fields: dict[str, Column], error: Column) -> DataFrame:
    """Add the decoded fields (NULL when the record is malformed) and ``decode_error``."""
    decoded = add_columns(df, {DECODE_ERROR: error})
    return add_columns(
        decoded, {name: sf.when(sf.col(DECODE_ERROR).isNull(), value) for name, value in fields.items()}
    )


def _missing(part: str) -> str:
    return (
        "missing (the record has no key)" if part.endswith("key") else "missing (the record is a tombstone)"
    )


def decode_checkpoints(df: DataFrame, key: str = "key", value: str = "value") -> DataFrame:
    """Checkpoint key (group, topic, partition) and value (version 0, upstream, downstream, metadata)."""
    key_parser = _WireParser(sf.col(key), "checkpoint key", _missing("key"))
    group = key_parser.string("group")
    topic = key_parser.string("topic")
    partition = key_parser.int32("partition")
    key_parser.end()

    value_parser = _WireParser(sf.col(value), "checkpoint value", _missing("value"))
    value_parser.version(CHECKPOINT_VALUE_VERSION)
    upstream_offset = value_parser.int64("upstreamOffset")
    downstream_offset = value_parser.int64("offset")
    metadata = value_parser.string("metadata")
    value_parser.end()

    return _with_decoded(
        df,
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
            _meaning_error(
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
    key_parser = _WireParser(sf.col(key), "offset sync key", _missing("key"))
    topic = key_parser.string("topic")
    partition = key_parser.int32("partition")
    key_parser.end()

    value_parser = _WireParser(sf.col(value), "offset sync value", _missing("value"))
    upstream_offset = value_parser.int64("upstreamOffset")
    downstream_offset = value_parser.int64("offset")
    value_parser.end()

    return _with_decoded(
        df,
        {
            "topic": topic,
            "partition": partition,
            "upstream_offset": upstream_offset,
            "downstream_offset": downstream_offset,
        },
        sf.coalesce(
            key_parser.checks.first(),
            value_parser.checks.first(),
            _meaning_error(
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


_PYTHON_TYPE_OF_VARIANT: Final[Sequence[tuple[str, str]]] = (
    ("OBJECT", "dict"),
    ("ARRAY", "list"),
    ("STRING", "str"),
    ("BOOLEAN", "bool"),
    ("BIGINT", "int"),
    ("INT", "int"),
    ("SMALLINT", "int"),
    ("TINYINT", "int"),
    ("DECIMAL", "float"),
    ("DOUBLE", "float"),
    ("FLOAT", "float"),
    ("VOID", "NoneType"),
)


def _python_type_name(json_type: Column) -> Column:
    """The name Python's json would give the value's type, for the codec's "got <type>" message."""
    name = sf.lit("unknown")
    for variant_prefix, python_name in reversed(_PYTHON_TYPE_OF_VARIANT):
        name = sf.when(json_type.startswith(variant_prefix), sf.lit(python_name)).otherwise(name)
    return name


class _StagedJson:
    """One JSON part (key or value) parsed in stages into ``_<prefix>_*`` columns, so each check
    references a column instead of re-inlining the parse (which made generated code exceed 64 KB):
    the text, the document (exactly one JSON value, else malformed) and its variant type."""

    def __init__(self, data: Column, part: str, prefix: str) -> None:
        self._data = data
        self._part = part
        self._prefix = prefix

    def col(self, name: str) -> Column:
        return sf.col(f"_{self._prefix}_{name}")

    def parse_stage(self) -> dict[str, Column]:
        text = self._data.cast("string")
        wrapped = sf.try_parse_json(sf.concat(sf.lit("["), text, sf.lit(f",{_JSON_SENTINEL_LITERAL}]")))
        return {f"_{self._prefix}_text": text, f"_{self._prefix}_wrapped": wrapped}

    def document_stage(self) -> dict[str, Column]:
        wrapped = self.col("wrapped")
        single_document = (sf.json_array_length(sf.to_json(wrapped)) == 2) & (
            sf.variant_get(wrapped, "$[1]", "string") == sf.lit(_JSON_SENTINEL)
        )
        document = sf.variant_get(wrapped, "$[0]", "variant")
        return {
            f"_{self._prefix}_single": single_document,
            f"_{self._prefix}_doc": document,
            f"_{self._prefix}_doc_type": sf.schema_of_variant(document),
        }


class _JsonObject(_StagedJson):
    """One K2K JSON part (key or value), validated like ``codecs.mappings`` does, field by field."""

    def __init__(self, data: Column, part: str, prefix: str) -> None:
        super().__init__(data, part, prefix)
        self._fields: list[str] = []
        self.checks = _Checks()

    def field_stage(self, fields: Sequence[str]) -> dict[str, Column]:
        self._fields = list(fields)
        stage: dict[str, Column] = {}
        for field in fields:
            found = sf.variant_get(self.col("doc"), f"$.{field}", "variant")
            stage[f"_{self._prefix}_f_{field}"] = found
            stage[f"_{self._prefix}_t_{field}"] = sf.schema_of_variant(found)
        return stage

    def document_checks(self) -> None:
        text = self.col("text")
        self.checks.add(
            ~sf.is_valid_utf8(text),
            sf.format_string(f"{self._part}: invalid UTF-8 at byte %d", _valid_utf8_prefix_bytes(text)),
        )
        self.checks.add(
            self.col("wrapped").isNull() | ~self.col("single"), sf.lit(f"{self._part}: malformed JSON")
        )
        self.checks.add(
            ~self.col("doc_type").startswith("OBJECT"),
            sf.format_string(
                f"{self._part}: expected a JSON object, got %s", _python_type_name(self.col("doc_type"))
            ),
        )

    def _present(self, field: str) -> tuple[Column, Column]:
        found, json_type = self.col(f"f_{field}"), self.col(f"t_{field}")
        self.checks.add(found.isNull(), sf.lit(f"{self._part}: missing field '{field}'"))
        return found, json_type

    def offset(self, field: str) -> Column:
        """A JSON integer >= 0 (booleans and floats rejected, as in the codec)."""
        found, json_type = self._present(field)
        value = sf.try_variant_get(found, "$", "bigint")
        self.checks.add(
            ~json_type.isin("BIGINT", "INT", "SMALLINT", "TINYINT") | (value < 0),
            sf.format_string(f"{self._part}: {field} must be a JSON integer >= 0, got %s", sf.to_json(found)),
        )
        return value

    def topic(self, field: str) -> Column:
        """A non-empty JSON string."""
        found, json_type = self._present(field)
        value = sf.try_variant_get(found, "$", "string")
        self.checks.add(
            (json_type != "STRING") | (value == ""),
            sf.format_string(
                f"{self._part}: {field} must be a non-empty JSON string, got %s", sf.to_json(found)
            ),
        )
        return value


_K2K_VALUE_FIELDS: Final = (
    "sourceTopic",
    "sourcePartition",
    "sourceOffset",
    "targetTopic",
    "targetPartition",
    "targetOffset",
)
_K2K_KEY_FIELDS: Final = ("topic", "partition", "offset")


def decode_k2k_json_v1(df: DataFrame, key: str = "key", value: str = "value") -> DataFrame:
    """``k2k-json-v1`` (codecs/mappings.py): value required; an optional key must agree with it."""
    value_json = _JsonObject(sf.col(value), "k2k-json-v1 value", "k2k_value")
    key_json = _JsonObject(sf.col(key), "k2k-json-v1 key", "k2k_key")
    stages = [
        {**value_json.parse_stage(), **key_json.parse_stage()},
        {**value_json.document_stage(), **key_json.document_stage()},
        {**value_json.field_stage(_K2K_VALUE_FIELDS), **key_json.field_stage(_K2K_KEY_FIELDS)},
    ]
    staged = df
    for stage in stages:
        staged = add_columns(staged, stage)

    value_json.checks.add(sf.col(value).isNull(), sf.lit(f"k2k-json-v1 value: {_missing('value')}"))
    value_json.document_checks()
    fields = {
        "source_topic": value_json.topic("sourceTopic"),
        "source_partition": value_json.offset("sourcePartition"),
        "source_offset": value_json.offset("sourceOffset"),
        "target_topic": value_json.topic("targetTopic"),
        "target_partition": value_json.offset("targetPartition"),
        "target_offset": value_json.offset("targetOffset"),
    }
    key_json.document_checks()
    key_topic, key_partition, key_offset = (
        key_json.topic("topic"),
        key_json.offset("partition"),
        key_json.offset("offset"),
    )
    key_json.checks.add(
        (key_topic != fields["source_topic"])
        | (key_partition != fields["source_partition"])
        | (key_offset != fields["source_offset"]),
        sf.format_string(
            "k2k-json-v1 key: (topic, partition, offset) ('%s', %d, %d) disagrees with the value's "
            "(sourceTopic, sourcePartition, sourceOffset) ('%s', %d, %d)",
            key_topic,
            key_partition,
            key_offset,
            fields["source_topic"],
            fields["source_partition"],
            fields["source_offset"],
        ),
    )
    error = sf.coalesce(
        value_json.checks.first(),
        sf.when(sf.col(key).isNotNull(), key_json.checks.first()),
        _meaning_error(semantics.K2K_JSON_V1_RULES, fields),
    )
    typed = {
        name: column.cast("int") if name.endswith("partition") else column for name, column in fields.items()
    }
    # The staged ``_k2k_*`` helper columns stay: callers select what they keep, and dropping by
    # name would make Spark Connect analyze the plan inside a pipeline query function (refused).
    return _with_decoded(staged, typed, error)


MAPPING_DECODERS: Final = {"k2k-json-v1": decode_k2k_json_v1}
"""Spark decoders by ``offsetlake.mappings.format`` name (settings.SUPPORTED_MAPPING_FORMATS)."""


class _ConnectJson(_StagedJson):
    """One part (key or value) of a Connect offset record as staged JSON columns ``_<prefix>_*``."""

    def member_stage(self, members: dict[str, str]) -> dict[str, Column]:
        """``name -> JSON path`` members of the document, each with its variant type."""
        stage: dict[str, Column] = {}
        for name, path in members.items():
            found = sf.variant_get(self.col("doc"), path, "variant")
            stage[f"_{self._prefix}_{name}"] = found
            stage[f"_{self._prefix}_{name}_type"] = sf.schema_of_variant(found)
        return stage

    def parse_checks(self, checks: _Checks) -> None:
        text = self.col("text")
        checks.add(
            ~sf.is_valid_utf8(text),
            sf.format_string(f"{self._part}: invalid UTF-8 at byte %d", _valid_utf8_prefix_bytes(text)),
        )
        malformed = self.col("wrapped").isNull() | ~self.col("single")
        checks.add(malformed, sf.lit(f"{self._part}: malformed JSON"))


_JSON_INTEGER_TYPES: Final = ("BIGINT", "INT", "SMALLINT", "TINYINT")


def _typed_member(json_part: _ConnectJson, name: str, kind: str) -> Column:
    """The member as ``kind`` when its JSON type is the one MM2 writes, else NULL."""
    json_type = json_part.col(f"{name}_type")
    is_kind = json_type.isin(*_JSON_INTEGER_TYPES) if kind == "bigint" else json_type == "STRING"
    return sf.when(is_kind, sf.try_variant_get(json_part.col(name), "$", kind))


def decode_connect_offsets(df: DataFrame, key: str = "key", value: str = "value") -> DataFrame:
    """``codecs.connect.decode_connect_offset`` plus ``mirror_source_position``, as Spark columns.

    Decoded: ``connector``, ``source_partition`` / ``source_offset`` (the JSON documents; object
    keys sorted, as a VARIANT renders them), ``tombstone`` (no value or JSON ``null``), and for
    MirrorSourceConnector's ``{cluster, partition, topic}`` keys ``source_cluster``, ``topic``,
    ``partition`` and ``upstream_offset`` (NULL when reset). Divergences from Python's ``json`` are
    the module docstring's (duplicate keys, integers beyond INT64).
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

    checks = _Checks()
    checks.add(sf.col(key).isNull(), sf.lit(f"connect offset key: {_missing('key')}"))
    key_json.parse_checks(checks)
    key_type = key_json.col("doc_type")
    key_length = sf.json_array_length(sf.to_json(key_json.col("doc")))
    checks.add(
        ~key_type.startswith("ARRAY") | (key_length != 2),
        sf.format_string(
            "connect offset key: expected a JSON array [connector, {partition}], got %s%s",
            _python_type_name(key_type),
            sf.when(key_type.startswith("ARRAY"), sf.format_string(" of length %d", key_length)).otherwise(
                ""
            ),
        ),
    )
    checks.add(
        key_json.col("connector_type") != "STRING",
        sf.format_string(
            "connect offset key: connector must be a JSON string, got %s",
            _python_type_name(key_json.col("connector_type")),
        ),
    )
    checks.add(
        ~key_json.col("partition_type").startswith("OBJECT"),
        sf.format_string(
            "connect offset key: source partition must be a JSON object, got %s",
            _python_type_name(key_json.col("partition_type")),
        ),
    )
    value_present = sf.col(value).isNotNull()
    value_checks = _Checks()
    value_json.parse_checks(value_checks)
    value_type = value_json.col("doc_type")
    value_checks.add(
        ~value_type.startswith("OBJECT") & (value_type != "VOID"),
        sf.format_string(
            "connect offset value: source offset must be a JSON object or null, got %s",
            _python_type_name(value_type),
        ),
    )
    tombstone = sf.col(value).isNull() | (value_type == "VOID")
    partition = _typed_member(key_json, "p_partition", "bigint")
    topic = _typed_member(key_json, "p_topic", "string")
    offset = sf.when(~tombstone, _typed_member(value_json, "offset", "bigint"))
    cluster = _typed_member(key_json, "p_cluster", "string")
    error = sf.coalesce(
        checks.first(),
        sf.when(value_present, value_checks.first()),
        _meaning_error(
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
    return _with_decoded(staged, fields, error)
