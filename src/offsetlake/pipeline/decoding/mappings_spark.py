"""Spark twin of ``codecs/mappings.py``: record-level mappings as Column expressions, by format name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf

from offsetlake.codecs import semantics
from offsetlake.pipeline.decoding.json_text_spark import StagedJson, python_type_name
from offsetlake.pipeline.decoding.semantics_spark import meaning_error
from offsetlake.pipeline.decoding.wire_spark import Checks, missing, valid_utf8_prefix_bytes, with_decoded
from offsetlake.pipeline.frames import add_columns


class _JsonObject(StagedJson):
    """One K2K JSON part (key or value), validated like ``codecs.mappings`` does, field by field."""

    def __init__(self, data: Column, part: str, prefix: str) -> None:
        super().__init__(data, part, prefix)
        self._fields: list[str] = []
        self.checks = Checks()

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
            sf.format_string(f"{self._part}: invalid UTF-8 at byte %d", valid_utf8_prefix_bytes(text)),
        )
        self.checks.add(
            self.col("wrapped").isNull() | ~self.col("single"), sf.lit(f"{self._part}: malformed JSON")
        )
        self.checks.add(
            ~self.col("doc_type").startswith("OBJECT"),
            sf.format_string(
                f"{self._part}: expected a JSON object, got %s", python_type_name(self.col("doc_type"))
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
    """``k2k-json-v1`` (codecs/mappings.py): value required; an optional key must agree with it.

    Every Spark decoder receives the whole bronze row, ``headers`` included (as the pure decoders
    receive them), so a header-versioned format is added as one more decoder here."""
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

    value_json.checks.add(sf.col(value).isNull(), sf.lit(f"k2k-json-v1 value: {missing('value')}"))
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
    # Staged: the meaning checks read each topic several times (see semantics_spark.meaning_error).
    staged = add_columns(staged, {f"_k2k_{name}": column for name, column in fields.items()})
    values = {name: sf.col(f"_k2k_{name}") for name in fields}
    error = sf.coalesce(
        value_json.checks.first(),
        sf.when(sf.col(key).isNotNull(), key_json.checks.first()),
        meaning_error(semantics.K2K_JSON_V1_RULES, values),
    )
    typed = {
        name: column.cast("int") if name.endswith("partition") else column for name, column in values.items()
    }
    # The staged ``_k2k_*`` helper columns stay: callers select what they keep, and dropping by
    # name would make Spark Connect analyze the plan inside a pipeline query function (refused).
    return with_decoded(staged, typed, error)


MAPPING_DECODERS: Final = {"k2k-json-v1": decode_k2k_json_v1}
"""Spark decoders by ``offsetlake.mappings.format`` name (settings.SUPPORTED_MAPPING_FORMATS)."""
