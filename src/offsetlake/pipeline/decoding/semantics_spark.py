"""Spark twin of ``codecs/semantics.py``: the meaning checks as Column expressions.

Meaning checks (legal topic names, non-empty group, no negative partition or offset) come after
every byte check of key and value, as in the codecs. They are built from the codecs' own rule
tables and message templates, so the two cannot drift apart. The topic alphabet is matched with
``rlike`` anchored by ``\\z``: Java's ``$`` would also match before a final line break.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from pyspark.sql import Column
from pyspark.sql import functions as sf

from offsetlake.codecs import semantics
from offsetlake.pipeline.decoding.wire_spark import Checks


def _non_empty(checks: Checks, part: str, field: str, value: Column) -> None:
    checks.add(value == "", sf.lit(semantics.empty_message(part, field)))


def _kafka_topic(checks: Checks, part: str, field: str, name: Column) -> None:
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


def _non_negative(checks: Checks, part: str, field: str, value: Column) -> None:
    checks.add(value < 0, sf.format_string(semantics.negative_template(part, field), value))


_SPARK_RULES: Final = {
    semantics.non_empty: _non_empty,
    semantics.kafka_topic: _kafka_topic,
    semantics.non_negative: _non_negative,
}


def meaning_error(rules: Sequence[semantics.FieldRule], values: dict[str, Column]) -> Column:
    """The first failing rule's message (``semantics.first_error``), NULL when all pass.

    ``values`` must be column references (staged by the decoder, see ``WireParser``), not the
    decoding expressions: a topic is read by about seven checks, and inlining its expression in
    each would grow the generated code past the JVM's 64 KB method limit.
    """
    checks = Checks()
    for field_rule in rules:
        check = _SPARK_RULES[field_rule.rule]
        check(checks, field_rule.part, field_rule.field, values[field_rule.attribute])
    return checks.first()
