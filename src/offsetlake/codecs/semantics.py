"""Meaning checks: a record that decodes must also name a real Kafka position.

Why: the byte codecs only prove that a record *parses*. A checkpoint for topic ``"a b"``,
partition -1 or downstream offset -1 parses fine, but no broker has such a partition and
no consumer can commit there, so translating from it would only spread the damage. Such
records go to quarantine with a reason instead of into silver.

Each rule is a small function returning the error message, or None when the value is fine.
The decoders run the rules once the whole record has decoded: key bytes, value bytes, then
the key's rules, then the value's rules, with fields in wire order. The first failure is
the error, so a byte error always wins over a meaning error. ``pipeline/decoding/semantics_spark.py`` runs
the same rule tables (``CHECKPOINT_RULES`` …) as Spark expressions and builds its messages
from the same ``*_template`` functions.

Verified in apache/kafka at ``1eb7644349cb`` (the commit docs/mm2-reference.md cites),
with release tags checked where history matters:

- **Topic names** follow ``Topic.validate`` (``clients/.../common/internals/Topic.java``):
  not empty, not ``.`` or ``..``, at most 249 characters, and only ``[a-zA-Z0-9._-]``. The
  checks run in Kafka's order. Java counts UTF-16 units and we count code points; the two
  differ only for names that are illegal anyway.
- **Negative offsets: MM2 never writes them, in any release since 2.4.0.**

  - Checkpoint ``upstreamOffset`` comes from ``OffsetAndMetadata.offset()``. The
    constructor throws on a negative offset (``clients/.../consumer/OffsetAndMetadata.java``).
    ``ListConsumerGroupOffsetsHandler`` maps a negative ("no committed offset") to null, and
    ``MirrorCheckpointTask.checkpoint`` skips null. In 2.4.0 ``KafkaAdminClient`` built the
    ``OffsetAndMetadata`` directly, so the listing failed instead.
  - Checkpoint ``offset`` (downstream). ``OffsetSyncStore.translateDownstream`` does return
    -1 ("older than every retained sync"), but ``MirrorCheckpointTask.checkpointsForGroup``
    drops it with ``filter(x -> x.downstreamOffset() >= 0)``. That filter is ``>= 0`` since
    2.7.0 (KAFKA-10048) and ``> 0`` in 2.4.0–2.6.x.
  - OffsetSync ``offset`` (downstream) is ``RecordMetadata.offset()``, which is -1 when the
    produce result has no offset. ``MirrorSourceTask.commitRecord`` returns early
    ``if (!metadata.hasOffset())``, and has done so since 2.4.0. So the ``-1`` defaults in
    ``OffsetSyncWriter.PartitionState`` are in-memory markers and are never written.
  - OffsetSync ``upstreamOffset`` is the consumed record's offset
    (``MirrorSourceTask.convertRecord`` → ``MirrorUtils.wrapOffset``).
  - Connect offsets: MM2 stores consumed record offsets, or 0. When offsets are altered
    over REST (KIP-875), ``MirrorUtils.validateSourcePartitionPartition`` and
    ``validateSourceOffset`` reject a negative ``partition`` and a negative ``offset``.
- **Partitions** are never negative. Checkpoints and syncs take them from a real
  ``TopicPartition``, and for Connect offsets see ``MirrorUtils`` above.
- **Empty group: our policy, not a hard Kafka rule.** Brokers still accept OffsetCommit for
  the group id ``""``, for backward compatibility (``GroupCoordinatorService.commitOffsets``,
  ``core/.../GroupCoordinator.scala`` ``isValidGroupId``). But such a group can never join
  (JoinGroup needs a non-empty id), and clients since 4.0 refuse ``group.id=""``
  (``ClassicKafkaConsumer`` KAFKA-15909, ``AsyncKafkaConsumer``). A checkpoint for ``""``
  is therefore not a position any current consumer could resume from.
- **Empty cluster alias: policy.** ``MirrorConnectorConfig`` defines the aliases as plain
  STRINGs without a validator. An empty alias still cannot name a replication flow: with
  the default policy it turns ``orders`` into ``.orders``.

The ``*_template`` functions return printf-style strings with exactly one ``%s``/``%d``
slot. Python fills the slot with ``%``; Spark fills it with ``format_string``, and for
``%s`` and ``%d`` the two give identical text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

TOPIC_MAX_LENGTH: Final = 249
"""``Topic.MAX_NAME_LENGTH``."""
TOPIC_LEGAL_CHARACTERS: Final = "a-zA-Z0-9._-"
"""``Topic.LEGAL_CHARS`` without the brackets: ASCII letters, digits, ``.``, ``_`` and ``-``."""
RESERVED_TOPIC_NAMES: Final = (".", "..")
_LEGAL_TOPIC: Final = re.compile(f"[{TOPIC_LEGAL_CHARACTERS}]+")


def empty_message(part: str, field: str) -> str:
    return f"{part}: {field} is empty"


def reserved_topic_template(part: str, field: str) -> str:
    return f"{part}: {field} '%s' is not a valid Kafka topic name (Kafka does not allow '.' or '..')"


def long_topic_template(part: str, field: str) -> str:
    return f"{part}: {field} is %d characters long, more than Kafka's maximum of {TOPIC_MAX_LENGTH}"


def illegal_topic_template(part: str, field: str) -> str:
    return (
        f"{part}: {field} '%s' is not a valid Kafka topic name (only ASCII letters, digits, '.', '_' and '-')"
    )


def negative_template(part: str, field: str) -> str:
    return f"{part}: {field} %d is negative"


def non_empty(part: str, field: str, value: str) -> str | None:
    """A group id or cluster alias: anything but the empty string."""
    return empty_message(part, field) if value == "" else None


def kafka_topic(part: str, field: str, name: str) -> str | None:
    """A name ``Topic.validate`` accepts, checked in Kafka's order."""
    if name == "":
        return empty_message(part, field)
    if name in RESERVED_TOPIC_NAMES:
        return reserved_topic_template(part, field) % name
    if len(name) > TOPIC_MAX_LENGTH:
        return long_topic_template(part, field) % len(name)
    if _LEGAL_TOPIC.fullmatch(name) is None:
        return illegal_topic_template(part, field) % name
    return None


def non_negative(part: str, field: str, value: int) -> str | None:
    """A partition or offset: MM2 never writes a negative one (see the module docstring)."""
    return negative_template(part, field) % value if value < 0 else None


Rule = Callable[[str, str, Any], str | None]


@dataclass(frozen=True)
class FieldRule:
    """``rule`` applied to the decoded record's ``attribute``, reported as ``part: field``."""

    part: str
    field: str
    attribute: str
    rule: Rule


def first_error(rules: Iterable[FieldRule], values: Mapping[str, Any]) -> str | None:
    """The first rule that fails on ``values`` (decoded attribute -> value), or None."""
    for field_rule in rules:
        error = field_rule.rule(field_rule.part, field_rule.field, values[field_rule.attribute])
        if error is not None:
            return error
    return None


CHECKPOINT_RULES: Final = (
    FieldRule("checkpoint key", "group", "group", non_empty),
    FieldRule("checkpoint key", "topic", "topic", kafka_topic),
    FieldRule("checkpoint key", "partition", "partition", non_negative),
    FieldRule("checkpoint value", "upstreamOffset", "upstream_offset", non_negative),
    FieldRule("checkpoint value", "offset", "downstream_offset", non_negative),
)
OFFSET_SYNC_RULES: Final = (
    FieldRule("offset sync key", "topic", "topic", kafka_topic),
    FieldRule("offset sync key", "partition", "partition", non_negative),
    FieldRule("offset sync value", "upstreamOffset", "upstream_offset", non_negative),
    FieldRule("offset sync value", "offset", "downstream_offset", non_negative),
)
HEARTBEAT_RULES: Final = (
    FieldRule("heartbeat key", "sourceClusterAlias", "source_cluster_alias", non_empty),
    FieldRule("heartbeat key", "targetClusterAlias", "target_cluster_alias", non_empty),
)
K2K_JSON_V1_RULES: Final = (
    # Partitions and offsets are already checked (>= 0) while decoding. The optional key must
    # equal the value's source fields, so checking the value's topics covers the key as well.
    FieldRule("k2k-json-v1 value", "sourceTopic", "source_topic", kafka_topic),
    FieldRule("k2k-json-v1 value", "targetTopic", "target_topic", kafka_topic),
)


CONNECT_OFFSET_RULES: Final = (
    # MM2 writes partition before topic in every source partition it stores (Java HashMap order
    # of {cluster, partition, topic} and {partition, topic, group}); a fixed order also lets the
    # Spark decoder, whose JSON objects come back with sorted keys, report the same first error.
    FieldRule("connect offset key", "partition", "partition", non_negative),
    FieldRule("connect offset key", "topic", "topic", kafka_topic),
    FieldRule("connect offset value", "offset", "offset", non_negative),
)


def connect_offset_error(partition: Mapping[str, Any], offset: Mapping[str, Any] | None) -> str | None:
    """MM2's Kafka coordinates in a Connect offset record (``CONNECT_OFFSET_RULES`` order).

    Connect offsets belong to any connector, so only MM2's keys are judged, and only when they
    hold the type MM2 writes: ``partition`` (an integer) and ``topic`` (a string) in the source
    partition (key), ``offset`` (an integer) in the source offset (value).
    """
    values = {
        "partition": partition.get("partition") if _is_integer(partition.get("partition")) else None,
        "topic": partition.get("topic") if isinstance(partition.get("topic"), str) else None,
        "offset": offset.get("offset") if offset is not None and _is_integer(offset.get("offset")) else None,
    }
    present = [rule for rule in CONNECT_OFFSET_RULES if values[rule.attribute] is not None]
    return first_error(present, values)


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
