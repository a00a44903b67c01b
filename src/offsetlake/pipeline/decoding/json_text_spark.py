"""Spark twin of ``codecs/json_text.py``: JSON text parsed in stages to a VARIANT, as strictly as the codec.

``try_parse_json`` gives a VARIANT and ``schema_of_variant`` its JSON types (so ``true``, ``1.5``
and ``"7"`` are rejected where an integer is required, like the codec does). Spark's parser
ignores text after the first JSON value, so the document is parsed inside a wrapper array with
a sentinel element and must come back as exactly [document, sentinel]. Divergences from
Python's ``json``: a duplicate key is malformed here (Python keeps the last), integers beyond
INT64 are rejected here, and the "malformed JSON" reason omits Python's parser detail.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from pyspark.sql import Column
from pyspark.sql import functions as sf

_JSON_SENTINEL: Final = "\u0000offsetlake-end-of-document"
"""Written as a JSON escape, so a document can only forge it by spelling out the escape itself."""
_JSON_SENTINEL_LITERAL: Final = '"\\u0000offsetlake-end-of-document"'

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


def python_type_name(json_type: Column) -> Column:
    """The name Python's json would give the value's type, for the codec's "got <type>" message."""
    name = sf.lit("unknown")
    for variant_prefix, python_name in reversed(_PYTHON_TYPE_OF_VARIANT):
        name = sf.when(json_type.startswith(variant_prefix), sf.lit(python_name)).otherwise(name)
    return name


class StagedJson:
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
