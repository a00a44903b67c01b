"""Record-level offset mappings (Lenses K2K) behind a format-name registry.

A record-level replicator can publish, for each replicated record, where it came from and where
it landed. K2K's mapping topic is documented (``offsetMapping.topic``, default
``__k2k_offset_mappings``) but its record layout is not, so decoding is looked up by name
(``offsetlake.mappings.format``) and another format plugs in with :func:`register_mapping_format`
without touching the pipeline.

The one shipped format, ``"k2k-json-v1"``, ASSUMES exactly this (it is our contract, not a
documented K2K one):

- value (required): UTF-8 JSON object with the integer fields ``sourcePartition``,
  ``sourceOffset``, ``targetPartition``, ``targetOffset`` and the string fields ``sourceTopic``,
  ``targetTopic``, e.g. ``{"sourceTopic":"orders","sourcePartition":0,"sourceOffset":41,
  "targetTopic":"us-east.orders","targetPartition":0,"targetOffset":40}``;
  other fields are ignored;
- key (optional, redundant): UTF-8 JSON object ``{"topic": <source topic>, "partition": <int>,
  "offset": <int>}``; when present it must agree with the value's source fields;
- integers are JSON integers >= 0 (``true``/``false`` and floats are rejected); topics are
  non-empty strings and, once the record has decoded, names Kafka accepts
  (``codecs/semantics.py``: ``sourceTopic`` then ``targetTopic``).

Anything else raises :class:`CodecError`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from offsetlake.codecs import CodecError
from offsetlake.codecs.json_text import parse_json
from offsetlake.codecs.semantics import K2K_JSON_V1_RULES, first_error

K2K_JSON_V1: Final = "k2k-json-v1"


@dataclass(frozen=True)
class OffsetMapping:
    """Upstream record (source_topic, source_partition, source_offset) was written at the target position."""

    source_topic: str
    source_partition: int
    source_offset: int
    target_topic: str
    target_partition: int
    target_offset: int


Headers = Sequence[tuple[str, bytes | None]]
"""A record's headers as Kafka clients give them: (name, value) pairs in order, names may repeat."""


class MappingDecoder(Protocol):
    """Decodes one mapping record. Headers are passed so that a header-versioned layout (a
    ``format-version`` header, say) is added here, in one decoder, without touching its callers."""

    def __call__(self, key: bytes | None, value: bytes | None, headers: Headers = ()) -> OffsetMapping: ...


_DECODERS: dict[str, MappingDecoder] = {}


def register_mapping_format(name: str, decoder: MappingDecoder) -> None:
    """Make ``decoder`` available under ``name``; re-registering a name replaces its decoder."""
    if not name:
        raise ValueError("mapping format name must not be empty")
    _DECODERS[name] = decoder


def mapping_decoder(name: str) -> MappingDecoder:
    try:
        return _DECODERS[name]
    except KeyError:
        raise CodecError(
            f"unknown mapping format {name!r}; known formats: {', '.join(mapping_formats())}"
        ) from None


def mapping_formats() -> list[str]:
    return sorted(_DECODERS)


def _json_object(data: bytes, part: str) -> dict[str, Any]:
    document = parse_json(data, part)
    if not isinstance(document, dict):
        raise CodecError(f"{part}: expected a JSON object, got {type(document).__name__}")
    return document


def _offset_field(document: dict[str, Any], field: str, part: str) -> int:
    if field not in document:
        raise CodecError(f"{part}: missing field {field!r}")
    value = document[field]
    if isinstance(value, bool) or not isinstance(value, int):
        raise CodecError(f"{part}: {field} must be a JSON integer >= 0, got {json.dumps(value)}")
    if value < 0:
        raise CodecError(f"{part}: {field} must be a JSON integer >= 0, got {value}")
    return value


def _topic_field(document: dict[str, Any], field: str, part: str) -> str:
    if field not in document:
        raise CodecError(f"{part}: missing field {field!r}")
    value = document[field]
    if not isinstance(value, str) or not value:
        raise CodecError(f"{part}: {field} must be a non-empty JSON string, got {json.dumps(value)}")
    return value


def decode_k2k_json_v1(key: bytes | None, value: bytes | None, headers: Headers = ()) -> OffsetMapping:
    """The assumed layout reads key and value only; ``headers`` are part of every decoder's signature."""
    del headers
    part = f"{K2K_JSON_V1} value"
    if value is None:
        raise CodecError(f"{part}: missing (the record is a tombstone)")
    document = _json_object(value, part)
    mapping = OffsetMapping(
        source_topic=_topic_field(document, "sourceTopic", part),
        source_partition=_offset_field(document, "sourcePartition", part),
        source_offset=_offset_field(document, "sourceOffset", part),
        target_topic=_topic_field(document, "targetTopic", part),
        target_partition=_offset_field(document, "targetPartition", part),
        target_offset=_offset_field(document, "targetOffset", part),
    )
    if key is not None:
        key_part = f"{K2K_JSON_V1} key"
        key_document = _json_object(key, key_part)
        from_key = (
            _topic_field(key_document, "topic", key_part),
            _offset_field(key_document, "partition", key_part),
            _offset_field(key_document, "offset", key_part),
        )
        from_value = (mapping.source_topic, mapping.source_partition, mapping.source_offset)
        if from_key != from_value:
            raise CodecError(
                f"{key_part}: (topic, partition, offset) {from_key} disagrees with the value's "
                f"(sourceTopic, sourcePartition, sourceOffset) {from_value}"
            )
    error = first_error(K2K_JSON_V1_RULES, vars(mapping))
    if error is not None:
        raise CodecError(error)
    return mapping


def encode_k2k_json_v1(mapping: OffsetMapping) -> tuple[bytes, bytes]:
    """Encode in the assumed ``k2k-json-v1`` layout (for fixtures, tests and demos)."""
    value = {
        "sourceTopic": mapping.source_topic,
        "sourcePartition": mapping.source_partition,
        "sourceOffset": mapping.source_offset,
        "targetTopic": mapping.target_topic,
        "targetPartition": mapping.target_partition,
        "targetOffset": mapping.target_offset,
    }
    part = f"{K2K_JSON_V1} value"
    for field in ("sourceTopic", "targetTopic"):
        _topic_field(value, field, part)
    for field in ("sourcePartition", "sourceOffset", "targetPartition", "targetOffset"):
        _offset_field(value, field, part)
    key = {
        "topic": mapping.source_topic,
        "partition": mapping.source_partition,
        "offset": mapping.source_offset,
    }
    return _compact_json(key), _compact_json(value)


def _compact_json(document: dict[str, Any]) -> bytes:
    try:
        return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as error:
        raise CodecError(f"{K2K_JSON_V1}: a topic is not encodable as UTF-8: {error.reason}") from None


register_mapping_format(K2K_JSON_V1, decode_k2k_json_v1)
