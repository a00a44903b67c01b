"""Kafka protocol primitives (``org.apache.kafka.common.protocol.types.Type``) with positioned errors.

MM2 serializes its records with Kafka's ``Schema``/``Struct`` machinery: fields in declared order,
no names or tags, big-endian two's-complement INT16/INT32/INT64, and STRING as a signed INT16
byte length followed by that many bytes of UTF-8. This module reads and writes exactly that, and
turns every failure into a :class:`CodecError` naming the record part, the field and the byte
offset, so a quarantined record explains itself without a debugger.
"""

from __future__ import annotations

import struct
from typing import Final

from offsetlake.codecs import CodecError

MAX_STRING_BYTES: Final = 32767
"""Kafka's ``Type.STRING`` limit: the length prefix is a signed INT16."""

_INT_FORMATS: Final[dict[str, struct.Struct]] = {
    "INT16": struct.Struct(">h"),
    "INT32": struct.Struct(">i"),
    "INT64": struct.Struct(">q"),
}
_INT_RANGES: Final[dict[str, tuple[int, int]]] = {
    kind: (-(1 << (8 * fmt.size - 1)), (1 << (8 * fmt.size - 1)) - 1) for kind, fmt in _INT_FORMATS.items()
}


def require_bytes(data: bytes | None, part: str) -> bytes:
    """Return ``data``, or fail clearly when the record part is absent (no key, or a tombstone value)."""
    if data is None:
        why = "the record is a tombstone" if part.endswith("value") else "the record has no key"
        raise CodecError(f"{part}: missing ({why})")
    return bytes(data)


class WireReader:
    """Sequential reader over one record part (e.g. ``"checkpoint value"``) that reports where it failed."""

    def __init__(self, data: bytes, part: str) -> None:
        self._data = data
        self._part = part
        self._position = 0

    def _take(self, size: int, field: str, kind: str) -> bytes:
        left = len(self._data) - self._position
        if size > left:
            raise CodecError(
                f"{self._part}: truncated at byte {self._position} reading {field} ({kind}): "
                f"need {size} bytes, {left} left"
            )
        chunk = self._data[self._position : self._position + size]
        self._position += size
        return chunk

    def _read_int(self, field: str, kind: str) -> int:
        fmt = _INT_FORMATS[kind]
        value: int = fmt.unpack(self._take(fmt.size, field, kind))[0]
        return value

    def read_int16(self, field: str) -> int:
        return self._read_int(field, "INT16")

    def read_int32(self, field: str) -> int:
        return self._read_int(field, "INT32")

    def read_int64(self, field: str) -> int:
        return self._read_int(field, "INT64")

    def read_string(self, field: str) -> str:
        """Read a non-null STRING; Kafka would silently replace invalid UTF-8, we reject it."""
        length_at = self._position
        length = self._read_int(f"{field} length", "INT16")
        if length < 0:
            raise CodecError(
                f"{self._part}: negative string length {length} at byte {length_at} for {field} (STRING)"
            )
        body_at = self._position
        body = self._take(length, field, "STRING")
        try:
            return body.decode("utf-8")
        except UnicodeDecodeError as error:
            raise CodecError(
                f"{self._part}: invalid UTF-8 in {field} (STRING) at byte {body_at + error.start}"
            ) from None

    def expect_end(self) -> None:
        """Reject leftover bytes: Kafka's ``Schema.read`` ignores them, but MM2 never writes them."""
        left = len(self._data) - self._position
        if left:
            raise CodecError(
                f"{self._part}: {left} trailing byte{'' if left == 1 else 's'} after the last field "
                f"at byte {self._position} "
                f"(expected exactly {self._position} bytes)"
            )


class WireWriter:
    """Builds one record part, rejecting what Kafka's ``Schema.write`` would reject."""

    def __init__(self, part: str) -> None:
        self._part = part
        self._chunks: list[bytes] = []

    def _write_int(self, field: str, kind: str, value: int) -> None:
        if not isinstance(value, int) or isinstance(value, bool):
            raise CodecError(f"{self._part}: {field} ({kind}) must be an int, got {type(value).__name__}")
        low, high = _INT_RANGES[kind]
        if not low <= value <= high:
            raise CodecError(f"{self._part}: {field} ({kind}) out of range [{low}, {high}]: {value}")
        self._chunks.append(_INT_FORMATS[kind].pack(value))

    def write_int16(self, field: str, value: int) -> None:
        self._write_int(field, "INT16", value)

    def write_int32(self, field: str, value: int) -> None:
        self._write_int(field, "INT32", value)

    def write_int64(self, field: str, value: int) -> None:
        self._write_int(field, "INT64", value)

    def write_string(self, field: str, value: str) -> None:
        """Write a non-null STRING (MM2 never uses NULLABLE_STRING) of at most 32767 UTF-8 bytes."""
        if not isinstance(value, str):
            raise CodecError(
                f"{self._part}: {field} (STRING) must be a str, got {type(value).__name__} "
                "(Kafka: missing value for a non-nullable field)"
            )
        try:
            body = value.encode("utf-8")
        except UnicodeEncodeError as error:
            raise CodecError(
                f"{self._part}: {field} (STRING) is not encodable as UTF-8 at character {error.start}"
            ) from None
        if len(body) > MAX_STRING_BYTES:
            raise CodecError(
                f"{self._part}: {field} (STRING) is {len(body)} UTF-8 bytes, "
                f"larger than the maximum string length {MAX_STRING_BYTES}"
            )
        self._chunks.append(_INT_FORMATS["INT16"].pack(len(body)))
        self._chunks.append(body)

    def to_bytes(self) -> bytes:
        return b"".join(self._chunks)
