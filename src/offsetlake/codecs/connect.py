"""Kafka Connect source-offset records (``connect-offsets``, ``mm2-offsets.<alias>.internal``).

Connect stores source offsets with its internal ``JsonConverter`` (``schemas.enable=false``):

- key: compact JSON ``[<connector name>, {<source partition>}]``,
  e.g. ``["MirrorCheckpointConnector",{"partition":0,"topic":"t","group":"g"}]``;
- value: compact JSON ``{<source offset>}``, e.g. ``{"offset":0}``, or no value at all (a
  tombstone: the offset was deleted). The JSON text ``null`` means the same to Connect and is
  decoded as a tombstone too.

Jackson writes no whitespace and leaves non-ASCII characters unescaped; :func:`encode_connect_offset`
does the same and keeps the caller's key order, because Connect's order is whatever the
connector's map iterates in (MM2 uses ``HashMap``, so ``partition`` comes before ``topic`` and
``group``). The bytes can differ from Jackson's only where MM2 never goes: control characters
inside strings (Python writes ``\\u001f``, Jackson ``\\u001F``) and floats in exponent form
(``1e+20`` vs ``1.0E20``); decoding is unaffected.

Once decoded, MM2's Kafka coordinates must be real (``codecs/semantics.py``): a ``topic`` string
in the source partition must be a legal topic name, and a ``partition`` or ``offset`` integer
must not be negative. Other connectors' keys are not judged.

:func:`mirror_source_position` reads MirrorSourceConnector's records (docs/mm2-reference.md
§1.6): source partition ``MirrorUtils.wrapPartition`` = ``{"cluster", "partition", "topic"}``,
source offset ``MirrorUtils.wrapOffset`` = ``{"offset": <upstream offset of the last replicated
record>}``. ``MirrorSourceTask.initializeConsumer`` resumes at offset + 1; a tombstone, a missing
or a negative offset means "no seek" (the consumer's ``auto.offset.reset``, ``earliest`` for MM2),
which offsetlake reports as a reset, never as a position.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from offsetlake.codecs import CodecError
from offsetlake.codecs.json_text import parse_json
from offsetlake.codecs.semantics import connect_offset_error


@dataclass(frozen=True)
class ConnectOffset:
    """One stored source offset: ``offset`` is ``None`` when the record is a tombstone."""

    connector: str
    partition: Mapping[str, Any]
    offset: Mapping[str, Any] | None


@dataclass(frozen=True)
class MirrorSourcePosition:
    """Where MirrorSourceConnector ``connector`` stands on one source partition.

    ``upstream_offset`` is the last replicated upstream offset, or ``None`` when the stored offset
    was reset (tombstone, JSON ``null`` or no integer ``offset``).
    """

    connector: str
    source_cluster: str
    topic: str
    partition: int
    upstream_offset: int | None


def mirror_source_position(record: ConnectOffset) -> MirrorSourcePosition | None:
    """The replication position in ``record``, or ``None`` when its key is not ``wrapPartition``'s."""
    cluster, topic, partition = (record.partition.get(name) for name in ("cluster", "topic", "partition"))
    if not (isinstance(cluster, str) and isinstance(topic, str) and _is_integer(partition)):
        return None
    offset = None if record.offset is None else record.offset.get("offset")
    return MirrorSourcePosition(
        record.connector, cluster, topic, partition, offset if _is_integer(offset) else None
    )


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _dump_json(document: Any, part: str) -> bytes:
    try:
        return json.dumps(document, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode(
            "utf-8"
        )
    except (TypeError, ValueError) as error:
        raise CodecError(f"{part}: not representable as UTF-8 JSON: {error}") from None


def decode_connect_offset(key: bytes | None, value: bytes | None) -> ConnectOffset:
    if key is None:
        raise CodecError("connect offset key: missing (the record has no key)")
    document = parse_json(bytes(key), "connect offset key")
    if not isinstance(document, list) or len(document) != 2:
        raise CodecError(
            "connect offset key: expected a JSON array [connector, {partition}], "
            f"got {type(document).__name__}"
            + (f" of length {len(document)}" if isinstance(document, list) else "")
        )
    connector, partition = document
    if not isinstance(connector, str):
        raise CodecError(
            f"connect offset key: connector must be a JSON string, got {type(connector).__name__}"
        )
    if not isinstance(partition, dict):
        raise CodecError(
            f"connect offset key: source partition must be a JSON object, got {type(partition).__name__}"
        )
    offset = None if value is None else parse_json(bytes(value), "connect offset value")
    if offset is not None and not isinstance(offset, dict):
        raise CodecError(
            f"connect offset value: source offset must be a JSON object or null, got {type(offset).__name__}"
        )
    error = connect_offset_error(partition, offset)
    if error is not None:
        raise CodecError(error)
    return ConnectOffset(connector, partition, offset)


def encode_connect_offset(record: ConnectOffset) -> tuple[bytes, bytes | None]:
    if not isinstance(record.connector, str):
        raise CodecError(
            f"connect offset key: connector must be a str, got {type(record.connector).__name__}"
        )
    if not isinstance(record.partition, Mapping):
        raise CodecError(
            f"connect offset key: source partition must be a mapping, got {type(record.partition).__name__}"
        )
    key = _dump_json([record.connector, dict(record.partition)], "connect offset key")
    if record.offset is None:
        return key, None
    if not isinstance(record.offset, Mapping):
        raise CodecError(
            "connect offset value: source offset must be a mapping or None, "
            f"got {type(record.offset).__name__}"
        )
    return key, _dump_json(dict(record.offset), "connect offset value")
