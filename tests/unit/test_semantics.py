"""Meaning rules (codecs/semantics.py): Kafka's topic-name rules, empty names, negative positions."""

from __future__ import annotations

import string
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsetlake.codecs.semantics import (
    CHECKPOINT_RULES,
    HEARTBEAT_RULES,
    K2K_JSON_V1_RULES,
    OFFSET_SYNC_RULES,
    TOPIC_LEGAL_CHARACTERS,
    TOPIC_MAX_LENGTH,
    FieldRule,
    connect_offset_error,
    first_error,
    kafka_topic,
    non_empty,
    non_negative,
)

# Topic.LEGAL_CHARS, spelled out independently of the module under test.
LEGAL = string.ascii_letters + string.digits + "._-"
legal_topics = st.text(alphabet=LEGAL, min_size=1, max_size=249).filter(lambda name: name not in (".", ".."))
ILLEGAL_MESSAGE = (
    "offset sync key: topic '{}' is not a valid Kafka topic name "
    "(only ASCII letters, digits, '.', '_' and '-')"
)


def _topic(name: str) -> str | None:
    return kafka_topic("offset sync key", "topic", name)


def test_the_alphabet_and_limit_are_kafkas() -> None:
    assert TOPIC_LEGAL_CHARACTERS == "a-zA-Z0-9._-"  # Topic.LEGAL_CHARS = "[a-zA-Z0-9._-]"
    assert TOPIC_MAX_LENGTH == 249  # Topic.MAX_NAME_LENGTH


@given(legal_topics)
def test_every_name_from_the_legal_alphabet_up_to_249_characters_is_accepted(name: str) -> None:
    assert _topic(name) is None


@given(legal_topics, st.characters().filter(lambda c: c not in LEGAL), st.data())
def test_any_character_outside_the_alphabet_is_rejected(name: str, bad: str, data: st.DataObject) -> None:
    at = data.draw(st.integers(0, len(name)))
    candidate = (name[:at] + bad + name[at:])[:249]
    if bad not in candidate:  # the cut removed it: put it at the end instead
        candidate = candidate[:-1] + bad
    assert _topic(candidate) == ILLEGAL_MESSAGE.format(candidate)


@given(st.text(alphabet=LEGAL, min_size=250, max_size=400))
def test_names_over_249_characters_are_rejected(name: str) -> None:
    assert _topic(name) == (
        f"offset sync key: topic is {len(name)} characters long, more than Kafka's maximum of 249"
    )


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "offset sync key: topic is empty"),
        (
            ".",
            "offset sync key: topic '.' is not a valid Kafka topic name (Kafka does not allow '.' or '..')",
        ),
        (
            "..",
            "offset sync key: topic '..' is not a valid Kafka topic name (Kafka does not allow '.' or '..')",
        ),
        ("a b", ILLEGAL_MESSAGE.format("a b")),
        ("orders\n", "offset sync key: topic 'orders\n' is not a valid Kafka topic name"),
        ("zähler", "offset sync key: topic 'zähler' is not a valid Kafka topic name"),
        ("it's", "offset sync key: topic 'it's' is not a valid Kafka topic name"),
        ("100%", "offset sync key: topic '100%' is not a valid Kafka topic name"),
        # Kafka checks the length before the alphabet, so a long illegal name is "too long".
        ("ü" * 250, "offset sync key: topic is 250 characters long"),
    ],
)
def test_invalid_topic_names(name: str, message: str) -> None:
    error = _topic(name)
    assert error is not None and error.startswith(message)


@pytest.mark.parametrize("name", ["...", "a", "_", "-", ".a", "a..b", "__consumer_offsets", "t" * 249])
def test_edge_names_kafka_accepts(name: str) -> None:
    assert _topic(name) is None


def test_non_empty_and_non_negative() -> None:
    assert non_empty("checkpoint key", "group", "") == "checkpoint key: group is empty"
    assert non_empty("checkpoint key", "group", " ") is None  # any non-empty group id is one
    assert non_negative("checkpoint key", "partition", -1) == "checkpoint key: partition -1 is negative"
    assert non_negative("checkpoint value", "offset", -(1 << 63)) == (
        f"checkpoint value: offset {-(1 << 63)} is negative"
    )
    assert non_negative("checkpoint value", "offset", 0) is None


def test_first_error_is_the_first_failing_rule_in_table_order() -> None:
    good = {"group": "g", "topic": "t", "partition": 0, "upstream_offset": 0, "downstream_offset": 0}
    assert first_error(CHECKPOINT_RULES, good) is None
    assert first_error(CHECKPOINT_RULES, {**good, "partition": -1, "upstream_offset": -1}) == (
        "checkpoint key: partition -1 is negative"
    )
    assert first_error(CHECKPOINT_RULES, {**good, "upstream_offset": -5, "downstream_offset": -7}) == (
        "checkpoint value: upstreamOffset -5 is negative"
    )
    assert (
        first_error(CHECKPOINT_RULES, {**good, "group": "", "topic": ""}) == "checkpoint key: group is empty"
    )


@pytest.mark.parametrize(
    ("rules", "fields"),
    [
        (CHECKPOINT_RULES, ["group", "topic", "partition", "upstreamOffset", "offset"]),
        (OFFSET_SYNC_RULES, ["topic", "partition", "upstreamOffset", "offset"]),
        (HEARTBEAT_RULES, ["sourceClusterAlias", "targetClusterAlias"]),
        (K2K_JSON_V1_RULES, ["sourceTopic", "targetTopic"]),
    ],
)
def test_rule_tables_list_key_fields_before_value_fields_in_wire_order(
    rules: tuple[FieldRule, ...], fields: list[str]
) -> None:
    assert [rule.field for rule in rules] == fields
    parts = [rule.part for rule in rules]
    assert parts == sorted(parts, key=lambda part: not part.endswith("key"))


@pytest.mark.parametrize(
    ("partition", "offset", "message"),
    [
        ({"cluster": "a", "partition": 0, "topic": "t"}, {"offset": 0}, None),
        ({"cluster": "a", "partition": -1, "topic": "t"}, {"offset": 0}, "connect offset key: partition -1"),
        ({"partition": 0, "topic": "a b", "group": "g"}, {"offset": 0}, "connect offset key: topic 'a b'"),
        ({"topic": "a b", "partition": -1}, None, "connect offset key: partition -1"),  # fixed order
        ({"partition": -1, "topic": "a b"}, None, "connect offset key: partition -1"),
        ({"cluster": "a"}, {"offset": -1}, "connect offset value: offset -1 is negative"),
        ({"partition": "-1", "topic": 7}, {"offset": "-1"}, None),
        ({"partition": False}, {"offset": True}, None),
        ({"sourceClusterAlias": "", "targetClusterAlias": ""}, {"offset": 0}, None),
    ],
)
def test_connect_offsets_judge_only_mm2_keys_with_mm2_types(
    partition: dict[str, Any], offset: dict[str, Any] | None, message: str | None
) -> None:
    error = connect_offset_error(partition, offset)
    if message is None:
        assert error is None
    else:
        assert error is not None and error.startswith(message)
