"""Record-level offset mappings: the format registry and the assumed k2k-json-v1 layout."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsetlake.codecs import CodecError, mappings
from offsetlake.codecs.mappings import (
    K2K_JSON_V1,
    OffsetMapping,
    encode_k2k_json_v1,
    mapping_decoder,
    mapping_formats,
    register_mapping_format,
)

OFFSETS = st.integers(0, (1 << 63) - 1)
TOPICS = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", min_size=1, max_size=30
).filter(lambda t: t not in (".", ".."))
offset_mappings = st.builds(OffsetMapping, TOPICS, OFFSETS, OFFSETS, TOPICS, OFFSETS, OFFSETS)
SAMPLE = OffsetMapping("orders", 0, 41, "us-east.orders", 0, 40)
SAMPLE_VALUE = {
    "sourceTopic": "orders",
    "sourcePartition": 0,
    "sourceOffset": 41,
    "targetTopic": "us-east.orders",
    "targetPartition": 0,
    "targetOffset": 40,
}


def _decode(key: bytes | None, value: bytes | None) -> OffsetMapping:
    return mapping_decoder(K2K_JSON_V1)(key, value)


def _value(**changes: object) -> bytes:
    document = {**SAMPLE_VALUE, **changes}
    return json.dumps({k: v for k, v in document.items() if v is not ...}).encode()


def test_encodes_the_documented_layout() -> None:
    key, value = encode_k2k_json_v1(SAMPLE)
    assert key == b'{"topic":"orders","partition":0,"offset":41}'
    assert json.loads(value) == SAMPLE_VALUE
    assert b" " not in value


@given(offset_mappings, st.booleans())
def test_roundtrip_with_and_without_key(mapping: OffsetMapping, with_key: bool) -> None:
    key, value = encode_k2k_json_v1(mapping)
    assert _decode(key if with_key else None, value) == mapping


def test_unknown_fields_are_ignored() -> None:
    assert _decode(None, _value(producedBy="k2k-7")) == SAMPLE


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (None, None, "k2k-json-v1 value: missing (the record is a tombstone)"),
        (None, b'{"sourceTopic":', "k2k-json-v1 value: malformed JSON"),
        (None, b"\xc3(", "k2k-json-v1 value: invalid UTF-8 at byte 0"),
        (None, b"[1]", "k2k-json-v1 value: expected a JSON object, got list"),
        (None, _value(targetTopic=...), "k2k-json-v1 value: missing field 'targetTopic'"),
        (None, _value(targetOffset=-1), "targetOffset must be a JSON integer >= 0, got -1"),
        (None, _value(sourcePartition=True), "sourcePartition must be a JSON integer >= 0, got true"),
        (None, _value(sourceOffset=1.0), "sourceOffset must be a JSON integer >= 0, got 1.0"),
        (None, _value(sourceOffset="1"), 'sourceOffset must be a JSON integer >= 0, got "1"'),
        (None, _value(sourceTopic=""), 'sourceTopic must be a non-empty JSON string, got ""'),
        (None, _value(targetTopic=7), "targetTopic must be a non-empty JSON string, got 7"),
        (b"{", _value(), "k2k-json-v1 key: malformed JSON"),
        (b'{"topic":"orders","partition":0}', _value(), "k2k-json-v1 key: missing field 'offset'"),
        (
            b'{"topic":"orders","partition":0,"offset":42}',
            _value(),
            "k2k-json-v1 key: (topic, partition, offset) ('orders', 0, 42) disagrees with the value's",
        ),
        (b'{"topic":"other","partition":0,"offset":41}', _value(), "disagrees"),
        # Well-formed JSON naming no real Kafka topic (codecs/semantics.py), checked after the key.
        (
            None,
            _value(sourceTopic="zähler"),
            "k2k-json-v1 value: sourceTopic 'zähler' is not a valid Kafka topic name "
            "(only ASCII letters, digits, '.', '_' and '-')",
        ),
        (
            None,
            _value(targetTopic=".."),
            "k2k-json-v1 value: targetTopic '..' is not a valid Kafka topic name",
        ),
        (
            None,
            _value(targetTopic="t" * 250),
            "targetTopic is 250 characters long, more than Kafka's maximum",
        ),
        (None, _value(sourceTopic="a b", targetTopic="."), "k2k-json-v1 value: sourceTopic 'a b' is not"),
        (
            b'{"topic":"a b","partition":0,"offset":42}',
            _value(sourceTopic="a b"),
            "k2k-json-v1 key: (topic, partition, offset) ('a b', 0, 42) disagrees",
        ),
    ],
)
def test_malformed_mappings_raise_codec_error(key: bytes | None, value: bytes | None, message: str) -> None:
    with pytest.raises(CodecError) as caught:
        _decode(key, value)
    assert message in str(caught.value)


def test_encoding_rejects_what_decoding_would() -> None:
    with pytest.raises(CodecError, match=r"targetOffset must be a JSON integer >= 0, got -5"):
        encode_k2k_json_v1(OffsetMapping("a", 0, 0, "b", 0, -5))
    with pytest.raises(CodecError, match=r"sourceTopic must be a non-empty JSON string"):
        encode_k2k_json_v1(OffsetMapping("", 0, 0, "b", 0, 0))


def test_encoding_leaves_topic_names_to_the_decoder() -> None:
    """Fixtures and tests need to write meaningless mappings; only decoding judges topic names."""
    key, value = encode_k2k_json_v1(OffsetMapping("a b", 0, 0, "b", 0, 0))
    with pytest.raises(CodecError, match=r"^k2k-json-v1 value: sourceTopic 'a b' is not a valid Kafka"):
        _decode(key, value)


def test_registry_lists_and_names_known_formats() -> None:
    assert K2K_JSON_V1 in mapping_formats()
    with pytest.raises(CodecError, match=r"unknown mapping format 'k2k-avro'; known formats: .*k2k-json-v1"):
        mapping_decoder("k2k-avro")
    with pytest.raises(ValueError, match=r"must not be empty"):
        register_mapping_format("", mapping_decoder(K2K_JSON_V1))


def test_another_format_plugs_in_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    # Isolate the module-level registry so the extra format does not leak into other tests.
    monkeypatch.setattr(mappings, "_DECODERS", dict(mappings._DECODERS))

    def decode_csv(key: bytes | None, value: bytes | None) -> OffsetMapping:
        if value is None:
            raise CodecError("csv value: missing")
        source_topic, source_partition, source_offset, target_topic, target_partition, target_offset = (
            value.decode().split(",")
        )
        return OffsetMapping(
            source_topic,
            int(source_partition),
            int(source_offset),
            target_topic,
            int(target_partition),
            int(target_offset),
        )

    register_mapping_format("csv-test", decode_csv)
    assert mapping_formats() == ["csv-test", K2K_JSON_V1]
    assert mapping_decoder("csv-test")(None, b"orders,0,41,us-east.orders,0,40") == SAMPLE


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=8,
)
VALUE_FIELD_NAMES = st.sampled_from(list(SAMPLE_VALUE))


@given(st.dictionaries(VALUE_FIELD_NAMES, JSON_VALUES), st.one_of(st.none(), st.binary(max_size=20)))
def test_arbitrary_json_decodes_to_a_valid_mapping_or_raises_codec_error(
    document: dict[str, object], key: bytes | None
) -> None:
    try:
        mapping = _decode(key, json.dumps(document).encode())
    except CodecError:
        return
    assert min(mapping.source_partition, mapping.source_offset, mapping.target_partition) >= 0
    assert mapping.target_offset >= 0 and mapping.source_topic and mapping.target_topic


def test_deeply_nested_json_is_a_codec_error() -> None:
    with pytest.raises(CodecError, match=r"nested too deeply"):
        _decode(None, b"[" * 100_000 + b"]" * 100_000)
