"""MM2 Checkpoint / OffsetSync / Heartbeat: byte-exact with Kafka, strict on anything MM2 never writes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsetlake.codecs import CodecError
from offsetlake.codecs.mm2 import (
    CHECKPOINT_VALUE_FIXED_BYTES,
    HEARTBEAT_VALUE_BYTES,
    OFFSET_SYNC_VALUE_BYTES,
    Checkpoint,
    Heartbeat,
    OffsetSync,
    decode_checkpoint,
    decode_heartbeat,
    decode_offset_sync,
    encode_checkpoint,
    encode_heartbeat,
    encode_offset_sync,
)
from offsetlake.codecs.semantics import CHECKPOINT_RULES, HEARTBEAT_RULES, OFFSET_SYNC_RULES, first_error

TOPIC_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
INT32 = st.integers(-(1 << 31), (1 << 31) - 1)
INT64 = st.integers(-(1 << 63), (1 << 63) - 1)
# Any Unicode text (surrogates excluded: they cannot be UTF-8), short enough to keep examples fast.
TEXT = st.text(max_size=40)
# What a real position holds (codecs/semantics.py).
PARTITIONS = st.integers(0, (1 << 31) - 1)
OFFSETS = st.integers(0, (1 << 63) - 1)
NAMES = st.text(min_size=1, max_size=40)
TOPICS = st.text(alphabet=TOPIC_ALPHABET, min_size=1, max_size=249).filter(lambda t: t not in (".", ".."))

checkpoints = st.builds(Checkpoint, NAMES, TOPICS, PARTITIONS, OFFSETS, OFFSETS, TEXT)
offset_syncs = st.builds(OffsetSync, TOPICS, PARTITIONS, OFFSETS, OFFSETS)
heartbeats = st.builds(Heartbeat, NAMES, NAMES, INT64)
# Anything the wire format can carry, meaningful or not.
any_checkpoints = st.builds(Checkpoint, TEXT, TEXT, INT32, INT64, INT64, TEXT)
any_offset_syncs = st.builds(OffsetSync, TEXT, INT32, INT64, INT64)
any_heartbeats = st.builds(Heartbeat, TEXT, TEXT, INT64)

Codec = tuple[Callable[[Any], tuple[bytes, bytes]], Callable[[bytes | None, bytes | None], Any]]
CODECS: dict[str, Codec] = {
    "checkpoint": (encode_checkpoint, decode_checkpoint),
    "offset sync": (encode_offset_sync, decode_offset_sync),
    "heartbeat": (encode_heartbeat, decode_heartbeat),
}
SAMPLES = {
    "checkpoint": Checkpoint("orders-consumer-1", "us-east.orders", 0, 100, 98, ""),
    "offset sync": OffsetSync("orders", 0, 100, 98),
    "heartbeat": Heartbeat("us-east", "us-west", 1_700_000_000_000),
}


def _hex(*groups: str) -> bytes:
    return bytes.fromhex("".join(groups))


def test_checkpoint_matches_the_documented_hex_example() -> None:
    """docs/mm2-reference.md §1.2, written out field by field."""
    key, value = encode_checkpoint(SAMPLES["checkpoint"])
    assert key == _hex("0011", b"orders-consumer-1".hex(), "000e", b"us-east.orders".hex(), "00000000")
    assert key.hex().startswith("00116f72") and key.hex().endswith("7273" + "00000000")
    assert value == _hex("0000", "0000000000000064", "0000000000000062", "0000")
    assert decode_checkpoint(key, value) == SAMPLES["checkpoint"]


def test_offset_sync_and_heartbeat_layouts() -> None:
    key, value = encode_offset_sync(OffsetSync("orders", 3, 100, 98))
    assert key == _hex("0006", b"orders".hex(), "00000003")
    assert value == _hex("0000000000000064", "0000000000000062")
    key, value = encode_heartbeat(Heartbeat("a", "bc", 1_700_000_000_000))
    assert key == _hex("0001", "61", "0002", "6263")
    assert value == _hex("0000", (1_700_000_000_000).to_bytes(8, "big").hex())


@given(checkpoints)
def test_checkpoint_roundtrip_and_size(checkpoint: Checkpoint) -> None:
    key, value = encode_checkpoint(checkpoint)
    assert len(key) == 2 + len(checkpoint.group.encode()) + 2 + len(checkpoint.topic.encode()) + 4
    assert len(value) == CHECKPOINT_VALUE_FIXED_BYTES + len(checkpoint.metadata.encode())
    assert decode_checkpoint(key, value) == checkpoint


@given(offset_syncs)
def test_offset_sync_roundtrip_and_size(offset_sync: OffsetSync) -> None:
    key, value = encode_offset_sync(offset_sync)
    assert len(value) == OFFSET_SYNC_VALUE_BYTES
    assert decode_offset_sync(key, value) == offset_sync


@given(heartbeats)
def test_heartbeat_roundtrip_and_size(heartbeat: Heartbeat) -> None:
    key, value = encode_heartbeat(heartbeat)
    assert len(value) == HEARTBEAT_VALUE_BYTES
    assert decode_heartbeat(key, value) == heartbeat


RULES = {"checkpoint": CHECKPOINT_RULES, "offset sync": OFFSET_SYNC_RULES, "heartbeat": HEARTBEAT_RULES}


@pytest.mark.parametrize(
    ("name", "records"),
    [("checkpoint", any_checkpoints), ("offset sync", any_offset_syncs), ("heartbeat", any_heartbeats)],
)
@given(data=st.data())
def test_any_encodable_record_decodes_to_itself_or_to_its_meaning_error(
    name: str, records: st.SearchStrategy[Any], data: st.DataObject
) -> None:
    """The wire round trip holds for every value (negatives, any text); meaning is judged after it."""
    encode, decode = CODECS[name]
    record = data.draw(records)
    meaning_error = first_error(RULES[name], vars(record))
    if meaning_error is None:
        assert decode(*encode(record)) == record
    else:
        with pytest.raises(CodecError) as caught:
            decode(*encode(record))
        assert str(caught.value) == meaning_error


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (Checkpoint("", "t", 0, 0, 0, ""), "checkpoint key: group is empty"),
        (Checkpoint("g", "", 0, 0, 0, ""), "checkpoint key: topic is empty"),
        (Checkpoint("g", "a b", -1, 0, 0, ""), "checkpoint key: topic 'a b' is not a valid Kafka topic name"),
        (Checkpoint("g", "t", -1, -5, -7, ""), "checkpoint key: partition -1 is negative"),
        (Checkpoint("g", "t", 0, -5, -7, ""), "checkpoint value: upstreamOffset -5 is negative"),
        (Checkpoint("g", "t", 0, 5, -(1 << 63), ""), f"checkpoint value: offset {-(1 << 63)} is negative"),
        (OffsetSync("..", 0, 0, 0), "offset sync key: topic '..' is not a valid Kafka topic name"),
        (OffsetSync("t" * 250, 0, 0, 0), "offset sync key: topic is 250 characters long"),
        (OffsetSync("t", -3, 0, 0), "offset sync key: partition -3 is negative"),
        (OffsetSync("t", 0, -1, -1), "offset sync value: upstreamOffset -1 is negative"),
        (OffsetSync("t", 0, 0, -1), "offset sync value: offset -1 is negative"),
        (Heartbeat("", "", 0), "heartbeat key: sourceClusterAlias is empty"),
        (Heartbeat("a", "", 0), "heartbeat key: targetClusterAlias is empty"),
    ],
)
def test_meaningless_records_are_codec_errors_first_failure_in_wire_order(record: Any, message: str) -> None:
    name = {Checkpoint: "checkpoint", OffsetSync: "offset sync", Heartbeat: "heartbeat"}[type(record)]
    encode, decode = CODECS[name]
    with pytest.raises(CodecError) as caught:
        decode(*encode(record))
    assert str(caught.value).startswith(message)


def test_byte_errors_win_over_meaning_errors() -> None:
    """All bytes are read before any meaning rule, so a bad value beats an empty group in the key."""
    key, value = encode_checkpoint(Checkpoint("", "t", -1, -1, -1, ""))
    with pytest.raises(CodecError, match=r"^checkpoint value: 1 trailing byte"):
        decode_checkpoint(key, value + b"\x00")
    with pytest.raises(CodecError, match=r"^checkpoint key: group is empty$"):
        decode_checkpoint(key, value)


def test_heartbeat_timestamp_is_not_judged() -> None:
    heartbeat = Heartbeat("a", "b", -1)
    assert decode_heartbeat(*encode_heartbeat(heartbeat)) == heartbeat


@pytest.mark.parametrize("length", [0, 1, 32767])
def test_checkpoint_string_boundary_lengths_roundtrip(length: int) -> None:
    checkpoint = Checkpoint("g" * max(length, 1), "t", 0, 0, 0, "m" * length)
    assert decode_checkpoint(*encode_checkpoint(checkpoint)) == checkpoint


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (Checkpoint("g" * 32768, "t", 0, 0, 0, ""), "group \\(STRING\\) is 32768 UTF-8 bytes"),
        (Checkpoint("g", "t", 0, 0, 0, "ü" * 16384), "metadata \\(STRING\\) is 32768 UTF-8 bytes"),
        (Checkpoint("g", "t", 0, 0, 0, None), "metadata \\(STRING\\) must be a str"),  # type: ignore[arg-type]
        (Checkpoint(None, "t", 0, 0, 0, ""), "group \\(STRING\\) must be a str"),  # type: ignore[arg-type]
        (Checkpoint("g", "t", 1 << 31, 0, 0, ""), "partition \\(INT32\\) out of range"),
        (Checkpoint("g", "t", 0, 1 << 63, 0, ""), "upstreamOffset \\(INT64\\) out of range"),
        (Checkpoint("g", "t", 0, 0, -(1 << 63) - 1, ""), "offset \\(INT64\\) out of range"),
    ],
)
def test_checkpoint_encoding_rejects_what_kafka_rejects(bad: Checkpoint, message: str) -> None:
    with pytest.raises(CodecError, match=message):
        encode_checkpoint(bad)


def test_offset_sync_and_heartbeat_encoding_reject_out_of_range() -> None:
    with pytest.raises(CodecError, match=r"offset sync value: offset \(INT64\) out of range"):
        encode_offset_sync(OffsetSync("t", 0, 0, 1 << 63))
    with pytest.raises(CodecError, match=r"heartbeat value: timestamp \(INT64\) out of range"):
        encode_heartbeat(Heartbeat("a", "b", 1 << 63))
    with pytest.raises(CodecError, match=r"heartbeat key: targetClusterAlias \(STRING\) must be a str"):
        encode_heartbeat(Heartbeat("a", None, 0))  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(CODECS))
def test_every_truncation_is_a_positioned_codec_error(name: str) -> None:
    encode, decode = CODECS[name]
    key, value = encode(SAMPLES[name])
    for cut in range(len(key)):
        with pytest.raises(CodecError, match=rf"^{name} key: truncated at byte "):
            decode(key[:cut], value)
    for cut in range(len(value)):
        with pytest.raises(CodecError, match=rf"^{name} value: truncated at byte "):
            decode(key, value[:cut])


@pytest.mark.parametrize("name", sorted(CODECS))
@given(extra=st.binary(min_size=1, max_size=20))
def test_trailing_bytes_are_rejected_not_ignored(name: str, extra: bytes) -> None:
    encode, decode = CODECS[name]
    key, value = encode(SAMPLES[name])
    with pytest.raises(CodecError, match=rf"^{name} value: {len(extra)} trailing byte"):
        decode(key, value + extra)
    with pytest.raises(CodecError, match=rf"^{name} key: {len(extra)} trailing byte"):
        decode(key + extra, value)


@pytest.mark.parametrize("name", sorted(CODECS))
def test_missing_key_and_tombstone_are_rejected(name: str) -> None:
    encode, decode = CODECS[name]
    key, value = encode(SAMPLES[name])
    with pytest.raises(CodecError, match=rf"^{name} key: missing \(the record has no key\)"):
        decode(None, value)
    with pytest.raises(CodecError, match=rf"^{name} value: missing \(the record is a tombstone\)"):
        decode(key, None)


@pytest.mark.parametrize("name", ["checkpoint", "heartbeat"])
@given(version=st.integers(-(1 << 15), (1 << 15) - 1).filter(lambda v: v != 0))
def test_versions_other_than_zero_are_rejected(name: str, version: int) -> None:
    encode, decode = CODECS[name]
    key, value = encode(SAMPLES[name])
    with pytest.raises(CodecError, match=rf"^{name} value: unsupported version {version} at byte 0"):
        decode(key, version.to_bytes(2, "big", signed=True) + value[2:])


def test_negative_string_length_and_invalid_utf8_are_rejected() -> None:
    key, value = encode_checkpoint(SAMPLES["checkpoint"])
    with pytest.raises(
        CodecError, match=r"checkpoint value: negative string length -1 at byte 18 for metadata"
    ):
        decode_checkpoint(key, value[:-2] + b"\xff\xff")
    with pytest.raises(
        CodecError, match=r"checkpoint value: invalid UTF-8 in metadata \(STRING\) at byte 20"
    ):
        decode_checkpoint(key, value[:-2] + b"\x00\x01\x80")
    with pytest.raises(CodecError, match=r"heartbeat key: invalid UTF-8 in sourceClusterAlias"):
        decode_heartbeat(b"\x00\x01\xfe\x00\x00", bytes(10))


@pytest.mark.parametrize("name", sorted(CODECS))
@given(key=st.binary(max_size=48), value=st.binary(max_size=48))
def test_arbitrary_bytes_decode_canonically_or_raise_codec_error(name: str, key: bytes, value: bytes) -> None:
    """Nothing but CodecError escapes, and whatever decodes re-encodes to the very same bytes."""
    encode, decode = CODECS[name]
    try:
        decoded = decode(key, value)
    except CodecError:
        return
    assert encode(decoded) == (key, value)
