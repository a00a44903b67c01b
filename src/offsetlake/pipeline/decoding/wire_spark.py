"""Spark twin of ``codecs/wire.py``: Kafka protocol fields read as Catalyst expressions (no per-row UDF).

The pure codecs are the specification; these expressions run in the JVM at full speed inside
streaming flows:

- Kafka protocol integers: ``hex`` + ``conv`` on ``substring`` of the binary. ``conv`` to base -10
  reads 16 hex digits as a signed INT64; INT16/INT32 are sign-extended with a shift pair.
- STRING: INT16 length then bytes; UTF-8 checked with ``is_valid_utf8`` (Spark 4). The reported
  byte of the first invalid sequence comes from ``make_valid_utf8``; it is exact unless the string
  holds a literal U+FFFD before the bad bytes, in which case it points at that earlier U+FFFD.

Every decoder returns the input columns plus the decoded fields and ``decode_error``: NULL for a
good record, otherwise the same message the pure codec raises (checked on every fixture by
tests/integration/test_decode_spark.py). Callers split on it into silver and quarantine, so a
malformed record is kept with its reason and never fails the pipeline.
"""

from __future__ import annotations

from typing import Final

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf

from offsetlake.pipeline.frames import add_columns

DECODE_ERROR: Final = "decode_error"


class Checks:
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


class WireParser:
    """Builds Column expressions reading Kafka protocol fields in order from one binary column.

    Positions are 0-based like the codec's messages. After a failure later expressions may read
    garbage, but ``error`` keeps only the first failure and the decoded values are nulled by the
    caller, so garbage never escapes.

    Every value read is a staged column ``_<part>_<field>`` (``stages``, applied in order with
    ``staged``), so checks and later positions refer to it instead of repeating its expression.
    A string's length opens the next stage: the string body and every later field are read at
    positions computed from it. The checks, referring only to staged columns, stay small enough
    for whole-stage code generation.
    """

    def __init__(self, data: Column, part: str, missing_message: str) -> None:
        self._data = data
        self._part = part
        self._prefix = "_" + part.replace(" ", "_")
        self.stages: list[dict[str, Column]] = [{}]
        self._size = self._stage("size", sf.length(data))
        self._position: Column = sf.lit(0)
        self.checks = Checks()
        self.checks.add(data.isNull(), sf.lit(f"{part}: {missing_message}"))

    def _stage(self, name: str, expression: Column) -> Column:
        column_name = f"{self._prefix}_{name.replace(' ', '_')}"
        self.stages[-1][column_name] = expression
        return sf.col(column_name)

    def _left(self) -> Column:
        return self._size - self._position

    def _truncated(self, at: Column, field: str, kind: str, need: Column) -> Column:
        return sf.format_string(
            f"{self._part}: truncated at byte %d reading {field} ({kind}): need %d bytes, %d left",
            at,
            need,
            self._size - at,
        )

    def _read_int(self, field: str, kind: str, size: int, spark_type: str) -> Column:
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
        return self._stage(field, value.cast(spark_type))

    def int16(self, field: str) -> Column:
        return self._read_int(field, "INT16", 2, "smallint")

    def int32(self, field: str) -> Column:
        return self._read_int(field, "INT32", 4, "int")

    def int64(self, field: str) -> Column:
        return self._read_int(field, "INT64", 8, "bigint")

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
        length = self._read_int(f"{field} length", "INT16", 2, "int")
        self.stages.append({})
        self.checks.add(
            length < 0,
            sf.format_string(
                f"{self._part}: negative string length %d at byte %d for {field} (STRING)", length, length_at
            ),
        )
        body_at = self._position
        self.checks.add(self._left() < length, self._truncated(body_at, field, "STRING", length))
        text = self._stage(field, sf.substring(self._data, body_at + 1, length).cast("string"))
        self.checks.add(
            ~sf.is_valid_utf8(text),
            sf.format_string(
                f"{self._part}: invalid UTF-8 in {field} (STRING) at byte %d",
                body_at + valid_utf8_prefix_bytes(text),
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


def staged(df: DataFrame, *parsers: WireParser) -> DataFrame:
    """``df`` plus every parser's staged columns, stage by stage (one ``select`` per stage)."""
    depth = max(len(parser.stages) for parser in parsers)
    for index in range(depth):
        stage = {
            name: column
            for parser in parsers
            if index < len(parser.stages)
            for name, column in parser.stages[index].items()
        }
        df = add_columns(df, stage)
    return df


def valid_utf8_prefix_bytes(text: Column) -> Column:
    """Bytes before the first invalid sequence (see the module docstring for the U+FFFD caveat)."""
    repaired = sf.make_valid_utf8(text)
    first_replacement = sf.instr(repaired, "\ufffd")
    return sf.octet_length(sf.substring(repaired, sf.lit(1), first_replacement - 1))


def with_decoded(df: DataFrame, fields: dict[str, Column], error: Column) -> DataFrame:
    """Add the decoded fields (NULL when the record is malformed) and ``decode_error``.

    One projection, ``error`` in each field's condition: Spark generates a subexpression used more
    than once as a method of its own, evaluated once a row. Added as a column of its own and read
    by the fields, its checks were inlined in the stage's one loop method, past the 8,000 bytes of
    bytecode the JVM compiles (10,756 for checkpoints): every row ran in the bytecode interpreter
    (tests/integration/test_decode_codegen.py)."""
    return add_columns(
        df, {DECODE_ERROR: error} | {name: sf.when(error.isNull(), value) for name, value in fields.items()}
    )


def missing(part: str) -> str:
    return (
        "missing (the record has no key)" if part.endswith("key") else "missing (the record is a tombstone)"
    )
