"""Read every MM2 offset-sync record a cluster still holds, from each offset-syncs topic's log start.

A healthy failover translates with the offset syncs MM2 wrote since the last pipeline update; read
here with one consumer instead of a Spark start-up and a streaming update, as checkpoint_tail.py
reads the checkpoints. The topics and each record's source cluster are those bronze_offset_syncs
lands (offsetlake.pipeline.landing): at MM2's ``offset-syncs.topic.location`` ``source`` (its
default), on a source cluster, ``mm2-offset-syncs<sep><target alias><sep>internal`` (any alias when
the target's is not known), each record from that source; at ``target``, on the target, every topic
the policy's pattern matches, each record from the alias the topic name carries. Each partition is
read whole by :func:`offsetlake.kafka.topic_tail.read_whole_topics` (unreadable ones left out whole,
with their reason); records decode with the pure codec the pipeline's Spark decoder is held equal to.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from confluent_kafka import Message

from offsetlake.codecs.mm2 import OffsetSync, decode_offset_sync
from offsetlake.kafka.topic_tail import TopicTailError, WholeTopics, alias_from_topic, read_whole_topics
from offsetlake.mirror.policy import ReplicationPolicy


class OffsetSyncTailError(TopicTailError):
    """The cluster holding the offset syncs could not list its topics: nothing about them is known."""


@dataclass(frozen=True)
class SyncRecord:
    """One offset-sync record: where it is (the syncs topic's coordinates) and what it says."""

    source_cluster: str
    topic: str
    partition: int
    offset: int
    sync: OffsetSync | None
    error: str | None = None
    """Why the record could not be decoded (then ``sync`` is None): it is counted, never used."""


OffsetSyncTail = WholeTopics[SyncRecord]
"""The offset-sync records and the offset-syncs topics found on the cluster read."""


def read_offset_sync_tail(
    config: Mapping[str, str],
    policy: ReplicationPolicy,
    *,
    timeout_s: float,
    source_alias: str | None,
    target_alias: str,
) -> OffsetSyncTail:
    """Every record of the offset-syncs topics on the cluster ``config`` reaches, log start to end.

    ``source_alias`` set (location ``source``): ``config`` is that source cluster; the topic is
    ``policy.offset_syncs_topic(target_alias)``, or any the policy's pattern matches when
    ``target_alias`` is empty. ``source_alias`` None (location ``target``): ``config`` is the target;
    every topic the pattern matches, each record's source cluster its name's alias. Bounded as
    checkpoint_tail is; a cluster whose topics cannot be listed raises OffsetSyncTailError."""
    any_sync_topic = re.compile(policy.offset_syncs_topic_pattern())
    if source_alias is None:
        return read_whole_topics(
            config,
            any_sync_topic,
            timeout_s=timeout_s,
            decode=lambda message: _record(alias_from_topic(any_sync_topic, message.topic()), message),
            role="target",
            error=OffsetSyncTailError,
        )
    pattern = (
        re.compile(f"^{re.escape(policy.offset_syncs_topic(target_alias))}$")
        if target_alias
        else any_sync_topic
    )
    return read_whole_topics(
        config,
        pattern,
        timeout_s=timeout_s,
        decode=lambda message: _record(source_alias, message),
        role=f"source {source_alias}",
        error=OffsetSyncTailError,
    )


def _record(source_cluster: str, message: Message) -> SyncRecord:
    topic, partition, offset = message.topic(), message.partition(), message.offset()
    try:
        sync = decode_offset_sync(message.key(), message.value())
    except ValueError as error:
        return SyncRecord(source_cluster, topic, partition, offset, None, str(error))
    return SyncRecord(source_cluster, topic, partition, offset, sync)
