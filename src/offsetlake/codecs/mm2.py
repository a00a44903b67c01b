"""MirrorMaker 2's binary records: Checkpoint, OffsetSync and Heartbeat as (key, value) bytes.

Byte-exact with apache/kafka ``Checkpoint.java`` / ``Heartbeat.java`` (connect/mirror-client) and
``OffsetSync.java`` (connect/mirror); see docs/mm2-reference.md §1.

- Checkpoint key: group STRING, topic STRING, partition INT32.
  Value: version INT16 (=0), upstreamOffset INT64, offset INT64 (downstream), metadata STRING.
  The topic and partition are the *downstream* (target-cluster) names.
- OffsetSync key: topic STRING, partition INT32 (the *upstream* topic).
  Value: upstreamOffset INT64, offset INT64 (downstream); exactly 16 bytes, no version header.
- Heartbeat key: sourceClusterAlias STRING, targetClusterAlias STRING.
  Value: version INT16 (=0), timestamp INT64 (epoch ms); exactly 10 bytes.

Where we are deliberately stricter than Kafka's readers, so that anything MM2 would not have
written is quarantined instead of guessed at:

- **Trailing bytes are rejected.** Kafka's ``Schema.read`` ignores bytes after the last field;
  MM2 never writes them, so extra bytes mean a different or corrupted format.
- **Version must be 0.** Kafka only ``assert``s it, which is off in production, and would parse
  any version with the V0 layout.
- **Invalid UTF-8 is rejected.** Java would silently substitute U+FFFD.
- A missing key or a tombstone value is an error: MM2 never writes either.
- **The decoded record must name a real position** (``codecs/semantics.py``): legal topic
  names, non-empty group and aliases, no negative partition or offset. MM2 never writes
  otherwise, so such a record is an error like a byte error, checked after all bytes decoded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, TypeVar

from offsetlake.codecs import CodecError
from offsetlake.codecs.semantics import (
    CHECKPOINT_RULES,
    HEARTBEAT_RULES,
    OFFSET_SYNC_RULES,
    FieldRule,
    first_error,
)
from offsetlake.codecs.wire import WireReader, WireWriter, require_bytes

CHECKPOINT_VALUE_VERSION: Final = 0
HEARTBEAT_VALUE_VERSION: Final = 0
CHECKPOINT_VALUE_FIXED_BYTES: Final = 2 + 8 + 8 + 2
"""version + upstreamOffset + offset + metadata length; the metadata bytes follow."""
OFFSET_SYNC_VALUE_BYTES: Final = 16
HEARTBEAT_VALUE_BYTES: Final = 10
_Record = TypeVar("_Record")


@dataclass(frozen=True)
class Checkpoint:
    """A source group's committed offset and its translation, keyed by the downstream topic."""

    group: str
    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int
    metadata: str


@dataclass(frozen=True)
class OffsetSync:
    """Upstream record ``upstream_offset`` of ``topic``-``partition`` landed at ``downstream_offset``."""

    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int


@dataclass(frozen=True)
class Heartbeat:
    """Proof of life for the flow ``source_cluster_alias`` -> ``target_cluster_alias``."""

    source_cluster_alias: str
    target_cluster_alias: str
    timestamp_ms: int


def _meaningful(record: _Record, rules: tuple[FieldRule, ...]) -> _Record:
    """``record`` if it passes ``rules`` (codecs/semantics.py), else CodecError with the first failure."""
    error = first_error(rules, vars(record))
    if error is not None:
        raise CodecError(error)
    return record


def _read_version(reader: WireReader, part: str, expected: int) -> None:
    version = reader.read_int16("version")
    if version != expected:
        raise CodecError(f"{part}: unsupported version {version} at byte 0 (only {expected} is defined)")


def decode_checkpoint(key: bytes | None, value: bytes | None) -> Checkpoint:
    key_reader = WireReader(require_bytes(key, "checkpoint key"), "checkpoint key")
    group = key_reader.read_string("group")
    topic = key_reader.read_string("topic")
    partition = key_reader.read_int32("partition")
    key_reader.expect_end()

    value_reader = WireReader(require_bytes(value, "checkpoint value"), "checkpoint value")
    _read_version(value_reader, "checkpoint value", CHECKPOINT_VALUE_VERSION)
    upstream_offset = value_reader.read_int64("upstreamOffset")
    downstream_offset = value_reader.read_int64("offset")
    metadata = value_reader.read_string("metadata")
    value_reader.expect_end()
    return _meaningful(
        Checkpoint(group, topic, partition, upstream_offset, downstream_offset, metadata), CHECKPOINT_RULES
    )


def encode_checkpoint(checkpoint: Checkpoint) -> tuple[bytes, bytes]:
    key = WireWriter("checkpoint key")
    key.write_string("group", checkpoint.group)
    key.write_string("topic", checkpoint.topic)
    key.write_int32("partition", checkpoint.partition)

    value = WireWriter("checkpoint value")
    value.write_int16("version", CHECKPOINT_VALUE_VERSION)
    value.write_int64("upstreamOffset", checkpoint.upstream_offset)
    value.write_int64("offset", checkpoint.downstream_offset)
    value.write_string("metadata", checkpoint.metadata)
    return key.to_bytes(), value.to_bytes()


def decode_offset_sync(key: bytes | None, value: bytes | None) -> OffsetSync:
    key_reader = WireReader(require_bytes(key, "offset sync key"), "offset sync key")
    topic = key_reader.read_string("topic")
    partition = key_reader.read_int32("partition")
    key_reader.expect_end()

    value_reader = WireReader(require_bytes(value, "offset sync value"), "offset sync value")
    upstream_offset = value_reader.read_int64("upstreamOffset")
    downstream_offset = value_reader.read_int64("offset")
    value_reader.expect_end()
    return _meaningful(OffsetSync(topic, partition, upstream_offset, downstream_offset), OFFSET_SYNC_RULES)


def encode_offset_sync(offset_sync: OffsetSync) -> tuple[bytes, bytes]:
    key = WireWriter("offset sync key")
    key.write_string("topic", offset_sync.topic)
    key.write_int32("partition", offset_sync.partition)

    value = WireWriter("offset sync value")
    value.write_int64("upstreamOffset", offset_sync.upstream_offset)
    value.write_int64("offset", offset_sync.downstream_offset)
    return key.to_bytes(), value.to_bytes()


def decode_heartbeat(key: bytes | None, value: bytes | None) -> Heartbeat:
    key_reader = WireReader(require_bytes(key, "heartbeat key"), "heartbeat key")
    source_cluster_alias = key_reader.read_string("sourceClusterAlias")
    target_cluster_alias = key_reader.read_string("targetClusterAlias")
    key_reader.expect_end()

    value_reader = WireReader(require_bytes(value, "heartbeat value"), "heartbeat value")
    _read_version(value_reader, "heartbeat value", HEARTBEAT_VALUE_VERSION)
    timestamp_ms = value_reader.read_int64("timestamp")
    value_reader.expect_end()
    return _meaningful(Heartbeat(source_cluster_alias, target_cluster_alias, timestamp_ms), HEARTBEAT_RULES)


def encode_heartbeat(heartbeat: Heartbeat) -> tuple[bytes, bytes]:
    key = WireWriter("heartbeat key")
    key.write_string("sourceClusterAlias", heartbeat.source_cluster_alias)
    key.write_string("targetClusterAlias", heartbeat.target_cluster_alias)

    value = WireWriter("heartbeat value")
    value.write_int16("version", HEARTBEAT_VALUE_VERSION)
    value.write_int64("timestamp", heartbeat.timestamp_ms)
    return key.to_bytes(), value.to_bytes()
