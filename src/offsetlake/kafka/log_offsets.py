"""Each selected topic-partition's log start and log end offset, as of now (no Spark needed).

Replication lag needs the source's head: MM2's stored position says how far it got, the log end
says how far it had to go. data_sources/offsetlake_log_offsets.py serves these snapshots to Spark.

Topics are chosen like MM2's ``DefaultTopicFilter`` (``topics`` / ``topics.exclude``, full
match: :mod:`offsetlake.mirror.filters`); the log end honours ``isolation.level`` like the record
reader does.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from confluent_kafka.admin import OffsetSpec

from offsetlake.kafka import admin as kafka_admin
from offsetlake.kafka import clients
from offsetlake.mirror.filters import topic_filter


def select_topics(topics: Mapping[str, int], include: str, exclude: str) -> list[str]:
    """Topics that fully match ``include`` and not ``exclude`` (MM2's topic filter), sorted."""
    return topic_filter(include, exclude).select(topics)


def snapshot_log_offsets(
    config: Mapping[str, str], include: str, exclude: str, timeout_s: float
) -> list[dict[str, object]]:
    """One row per selected partition: log start, log end, and when they were listed."""
    snapshot_time = datetime.now(UTC)
    selected = topic_filter(include, exclude)  # a bad regex fails before the cluster is asked
    read_committed = config.get("isolation.level") == "read_committed"
    with clients.admin(config) as admin:
        counts = kafka_admin.list_partition_counts(admin, timeout_s=timeout_s)
        keys = [(topic, p) for topic in selected.select(counts) for p in range(counts[topic])]
        starts, ends = (
            kafka_admin.list_log_offsets(
                admin, keys, spec, timeout_s=timeout_s, read_committed=read_committed
            )
            for spec in (OffsetSpec.earliest(), OffsetSpec.latest())
        )
    return [
        {
            "topic": topic,
            "partition": partition,
            "log_start_offset": starts[(topic, partition)],
            "log_end_offset": ends[(topic, partition)],
            "snapshot_time": snapshot_time,
        }
        for topic, partition in keys
    ]
