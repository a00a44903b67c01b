"""Kafka Connect offset records: the compact JSON Connect writes, tombstones, and malformed input."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsetlake.codecs import CodecError
from offsetlake.codecs.connect import (
    ConnectOffset,
    MirrorSourcePosition,
    decode_connect_offset,
    encode_connect_offset,
    mirror_source_position,
)

# Connect source partitions and offsets hold JSON primitives (OffsetUtils.validateFormat).
PRIMITIVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(1 << 63), (1 << 63) - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
OBJECTS = st.dictionaries(st.text(max_size=12), PRIMITIVES, max_size=5)
# MM2's own keys are judged (codecs/semantics.py); the generic round trip leaves them out.
MM2_KEYS = {"topic", "partition", "offset"}
GENERIC_OBJECTS = st.dictionaries(
    st.text(max_size=12).filter(lambda k: k not in MM2_KEYS), PRIMITIVES, max_size=5
)


def _codec_error(key: bytes | None, value: bytes | None) -> str:
    with pytest.raises(CodecError) as caught:
        decode_connect_offset(key, value)
    return str(caught.value)


def test_encodes_the_compact_json_connect_writes() -> None:
    record = ConnectOffset("mm2-checkpoint", {"group": "g", "topic": "t", "partition": 0}, {"offset": 0})
    key, value = encode_connect_offset(record)
    assert key == b'["mm2-checkpoint",{"group":"g","topic":"t","partition":0}]'
    assert value == b'{"offset":0}'
    assert decode_connect_offset(key, value) == record


def test_non_ascii_is_raw_utf8_and_key_order_is_kept() -> None:
    record = ConnectOffset("c", {"topic": "t", "group": "gruppe-ä"}, {"offset": 1})
    key, _ = encode_connect_offset(record)
    assert key == '["c",{"topic":"t","group":"gruppe-ä"}]'.encode()
    assert list(decode_connect_offset(key, b"{}").partition) == ["topic", "group"]


@given(
    connector=st.text(max_size=20), partition=GENERIC_OBJECTS, offset=st.one_of(st.none(), GENERIC_OBJECTS)
)
def test_roundtrip(connector: str, partition: dict[str, Any], offset: dict[str, Any] | None) -> None:
    record = ConnectOffset(connector, partition, offset)
    key, value = encode_connect_offset(record)
    assert (value is None) == (offset is None)
    assert json.loads(key) == [connector, partition]
    assert decode_connect_offset(key, value) == record


def test_tombstones() -> None:
    key = b'["MirrorSourceConnector",{"cluster":"a","partition":0,"topic":"t"}]'
    assert decode_connect_offset(key, None).offset is None
    assert decode_connect_offset(key, b"null").offset is None  # JsonConverter reads JSON null as deleted too
    assert encode_connect_offset(ConnectOffset("c", {}, None)) == (b'["c",{}]', None)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (None, b'{"offset":0}', "connect offset key: missing (the record has no key)"),
        (b'["c",{"p":', b"{}", "connect offset key: malformed JSON"),
        (b"\xff[]", b"{}", "connect offset key: invalid UTF-8 at byte 0"),
        (b'{"c":{}}', b"{}", "connect offset key: expected a JSON array [connector, {partition}], got dict"),
        (b'["c",{},1]', b"{}", "got list of length 3"),
        (b'["c"]', b"{}", "got list of length 1"),
        (b"[1,{}]", b"{}", "connect offset key: connector must be a JSON string, got int"),
        (b'["c",[0]]', b"{}", "connect offset key: source partition must be a JSON object, got list"),
        (b'["c",null]', b"{}", "source partition must be a JSON object, got NoneType"),
        (b'["c",{}]', b"{offset:0}", "connect offset value: malformed JSON"),
        (b'["c",{}]', b'{"offset":NaN}', "connect offset value: malformed JSON: NaN is not valid JSON"),
        (b'["c",{}]', b"[0]", "connect offset value: source offset must be a JSON object or null, got list"),
        (b'["c",{}]', b'"0"', "got str"),
    ],
)
def test_malformed_records_raise_codec_error(key: bytes | None, value: bytes | None, message: str) -> None:
    assert message in _codec_error(key, value)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (
            b'["MirrorSourceConnector",{"cluster":"a","partition":-1,"topic":"t"}]',
            b'{"offset":5}',
            "connect offset key: partition -1 is negative",
        ),
        (
            b'["MirrorCheckpointConnector",{"partition":0,"topic":"a b","group":"g"}]',
            b'{"offset":0}',
            "connect offset key: topic 'a b' is not a valid Kafka topic name "
            "(only ASCII letters, digits, '.', '_' and '-')",
        ),
        (b'["c",{"topic":""}]', b"{}", "connect offset key: topic is empty"),
        (b'["c",{"topic":"t"}]', b'{"offset":-1}', "connect offset value: offset -1 is negative"),
        # Fixed order (partition, then topic: MM2's wire order), whatever the record's key order.
        (b'["c",{"topic":"..","partition":-1}]', b"{}", "connect offset key: partition -1 is negative"),
        (b'["c",{"partition":-1,"topic":".."}]', b"{}", "connect offset key: partition -1 is negative"),
        # The key is judged before the value, and a tombstone's key is judged too.
        (b'["c",{"partition":-2}]', b'{"offset":-1}', "connect offset key: partition -2 is negative"),
        (b'["c",{"partition":-2}]', None, "connect offset key: partition -2 is negative"),
    ],
)
def test_meaningless_mm2_coordinates_raise_codec_error(key: bytes, value: bytes | None, message: str) -> None:
    assert _codec_error(key, value).startswith(message)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (b'["c",{"partition":"-1","topic":7}]', b'{"offset":"-1"}'),  # not the types MM2 writes
        (b'["c",{"partition":true}]', b'{"offset":-1.5}'),  # booleans and floats are not integers
        (b'["FileStreamSource",{"filename":"/tmp/a b"}]', b'{"position":-1}'),  # another connector's keys
        (b'["c",{"cluster":""}]', b'{"offset":0}'),
    ],
)
def test_keys_mm2_does_not_write_are_not_judged(key: bytes, value: bytes) -> None:
    assert decode_connect_offset(key, value).connector


def test_encoding_rejects_unrepresentable_values() -> None:
    with pytest.raises(CodecError, match=r"connect offset value: not representable as UTF-8 JSON"):
        encode_connect_offset(ConnectOffset("c", {}, {"offset": float("nan")}))
    with pytest.raises(CodecError, match=r"connect offset key: not representable as UTF-8 JSON"):
        encode_connect_offset(ConnectOffset("c", {"p": object()}, None))
    with pytest.raises(CodecError, match=r"connector must be a str, got int"):
        encode_connect_offset(ConnectOffset(1, {}, None))  # type: ignore[arg-type]
    with pytest.raises(CodecError, match=r"source offset must be a mapping or None, got list"):
        encode_connect_offset(ConnectOffset("c", {}, [0]))  # type: ignore[arg-type]


@given(key=st.binary(max_size=40), value=st.one_of(st.none(), st.binary(max_size=40)))
def test_arbitrary_bytes_only_ever_raise_codec_error(key: bytes, value: bytes | None) -> None:
    try:
        decoded = decode_connect_offset(key, value)
    except CodecError:
        return
    assert isinstance(decoded.partition, dict)


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        (
            b'["MirrorSourceConnector",{"cluster":"east","partition":3,"topic":"orders"}]',
            b'{"offset":41}',
            MirrorSourcePosition("MirrorSourceConnector", "east", "orders", 3, 41),
        ),
        # A reset: tombstone, JSON null, or no integer offset (MirrorUtils.unwrapOffset -> no seek).
        (
            b'["mm2",{"cluster":"east","partition":0,"topic":"t"}]',
            None,
            MirrorSourcePosition("mm2", "east", "t", 0, None),
        ),
        (
            b'["mm2",{"cluster":"e","partition":0,"topic":"t"}]',
            b"null",
            MirrorSourcePosition("mm2", "e", "t", 0, None),
        ),
        (
            b'["mm2",{"cluster":"e","partition":0,"topic":"t"}]',
            b"{}",
            MirrorSourcePosition("mm2", "e", "t", 0, None),
        ),
        (
            b'["mm2",{"cluster":"e","partition":0,"topic":"t"}]',
            b'{"offset":true}',
            MirrorSourcePosition("mm2", "e", "t", 0, None),
        ),
        # Not wrapPartition's shape: the checkpoint and heartbeat connectors, wrong types.
        (b'["MirrorCheckpointConnector",{"partition":0,"topic":"t","group":"g"}]', b'{"offset":0}', None),
        (b'["h",{"sourceClusterAlias":"a","targetClusterAlias":"b"}]', b'{"offset":0}', None),
        (b'["mm2",{"cluster":"e","partition":"0","topic":"t"}]', b'{"offset":0}', None),
    ],
)
def test_mirror_source_position(
    key: bytes, value: bytes | None, expected: MirrorSourcePosition | None
) -> None:
    assert mirror_source_position(decode_connect_offset(key, value)) == expected
