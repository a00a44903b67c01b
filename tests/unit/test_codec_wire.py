"""Kafka protocol primitives: exact bytes, limits, and positioned errors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsetlake.codecs import CodecError
from offsetlake.codecs.wire import MAX_STRING_BYTES, WireReader, WireWriter, require_bytes

INT_BOUNDS = {"int16": 15, "int32": 31, "int64": 63}


def _roundtrip_int(kind: str, value: int) -> int:
    writer = WireWriter("test value")
    getattr(writer, f"write_{kind}")("field", value)
    data = writer.to_bytes()
    assert len(data) == (INT_BOUNDS[kind] + 1) // 8
    reader = WireReader(data, "test value")
    decoded: int = getattr(reader, f"read_{kind}")("field")
    reader.expect_end()
    return decoded


@pytest.mark.parametrize("kind", sorted(INT_BOUNDS))
@given(data=st.data())
def test_ints_roundtrip_over_their_whole_range(kind: str, data: st.DataObject) -> None:
    bits = INT_BOUNDS[kind]
    value = data.draw(st.integers(-(1 << bits), (1 << bits) - 1))
    assert _roundtrip_int(kind, value) == value


@pytest.mark.parametrize("kind", sorted(INT_BOUNDS))
def test_ints_out_of_range_or_not_int_are_rejected(kind: str) -> None:
    bits = INT_BOUNDS[kind]
    writer = WireWriter("test value")
    write = getattr(writer, f"write_{kind}")
    for bad in ((1 << bits), -(1 << bits) - 1):
        with pytest.raises(CodecError, match=rf"test value: field \({kind.upper()}\) out of range"):
            write("field", bad)
    with pytest.raises(CodecError, match=r"must be an int, got bool"):
        write("field", True)
    with pytest.raises(CodecError, match=r"must be an int, got str"):
        write("field", "1")


def test_ints_are_big_endian_twos_complement() -> None:
    writer = WireWriter("v")
    writer.write_int16("a", -2)
    writer.write_int32("b", 0x01020304)
    writer.write_int64("c", -1)
    assert writer.to_bytes().hex() == "fffe" + "01020304" + "ff" * 8


@given(st.text(max_size=200))
def test_strings_roundtrip_with_a_byte_length_prefix(text: str) -> None:
    writer = WireWriter("v")
    writer.write_string("s", text)
    data = writer.to_bytes()
    encoded = text.encode("utf-8")
    assert data == len(encoded).to_bytes(2, "big") + encoded
    reader = WireReader(data, "v")
    assert reader.read_string("s") == text
    reader.expect_end()


@pytest.mark.parametrize(
    ("text", "accepted"),
    [
        ("x" * MAX_STRING_BYTES, True),
        ("x" * (MAX_STRING_BYTES + 1), False),
        ("é" * (MAX_STRING_BYTES // 2) + "x", True),  # 32767 bytes in 16384 characters
        ("é" * ((MAX_STRING_BYTES + 1) // 2), False),  # 32768 bytes in 16384 characters
    ],
)
def test_string_limit_counts_utf8_bytes(text: str, accepted: bool) -> None:
    writer = WireWriter("checkpoint value")
    if accepted:
        writer.write_string("metadata", text)
        assert WireReader(writer.to_bytes(), "v").read_string("metadata") == text
    else:
        with pytest.raises(
            CodecError, match=r"metadata \(STRING\) is 32768 UTF-8 bytes, larger than the maximum"
        ):
            writer.write_string("metadata", text)


def test_null_and_unencodable_strings_are_rejected() -> None:
    writer = WireWriter("checkpoint key")
    with pytest.raises(CodecError, match=r"checkpoint key: group \(STRING\) must be a str, got NoneType"):
        writer.write_string("group", None)  # type: ignore[arg-type]
    with pytest.raises(CodecError, match=r"not encodable as UTF-8 at character 1"):
        writer.write_string("group", "a\ud800")


def test_truncation_names_part_field_offset_and_shortfall() -> None:
    reader = WireReader(bytes(13), "checkpoint value")
    reader.read_int16("version")
    reader.read_int64("upstreamOffset")
    with pytest.raises(CodecError) as caught:
        reader.read_int64("offset")
    assert str(caught.value) == (
        "checkpoint value: truncated at byte 10 reading offset (INT64): need 8 bytes, 3 left"
    )


def test_string_errors_are_positioned() -> None:
    with pytest.raises(CodecError, match=r"^k: negative string length -2 at byte 0 for group \(STRING\)$"):
        WireReader(b"\xff\xfeabc", "k").read_string("group")
    with pytest.raises(
        CodecError, match=r"^k: truncated at byte 2 reading group \(STRING\): need 5 bytes, 3 left$"
    ):
        WireReader(b"\x00\x05abc", "k").read_string("group")
    with pytest.raises(CodecError, match=r"^k: invalid UTF-8 in group \(STRING\) at byte 3$"):
        WireReader(b"\x00\x03a\xffb", "k").read_string("group")
    with pytest.raises(CodecError, match=r"^k: truncated at byte 0 reading group length \(INT16\)"):
        WireReader(b"\x00", "k").read_string("group")


def test_trailing_bytes_are_reported() -> None:
    reader = WireReader(b"\x00\x01\x02", "v")
    reader.read_int16("version")
    with pytest.raises(CodecError, match=r"^v: 1 trailing byte after the last field at byte 2"):
        reader.expect_end()


def test_missing_parts_are_reported_as_no_key_or_tombstone() -> None:
    assert require_bytes(bytearray(b"ab"), "checkpoint key") == b"ab"
    with pytest.raises(CodecError, match=r"^checkpoint key: missing \(the record has no key\)$"):
        require_bytes(None, "checkpoint key")
    with pytest.raises(CodecError, match=r"^checkpoint value: missing \(the record is a tombstone\)$"):
        require_bytes(None, "checkpoint value")
