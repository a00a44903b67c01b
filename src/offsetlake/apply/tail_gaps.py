"""Which sources' newest checkpoints a failover could not read: no silent fallback to gold.

The checkpoint tail (apply/tail_merge.py) reads every checkpoint the target holds because gold
may be behind it: a source group reset since the last update has a newer, lower checkpoint that
only the tail sees. A checkpoints partition the tail could not read to its end (a leader down, no
READ permission, a slow target), a record it could not decode, or no checkpoints topic at all
for a source gold holds checkpoint translations of: planning from gold alone there may commit a
position the source group has left (140 where the newest checkpoint says 15). Each such source is
named here with why, and the planner refuses its partitions unless the operator accepts gold as it
is (``--accept-gold-without-tail``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from offsetlake.apply.tail_merge import TailMerge
from offsetlake.contract.gold import GoldOffset
from offsetlake.mirror.policy import ReplicationPolicy


def unread_sources(
    merged: TailMerge, policy: ReplicationPolicy, gold: Iterable[GoldOffset]
) -> dict[str, str]:
    """Source alias -> why its newest checkpoints are not known (the first reason found)."""
    pattern = re.compile(policy.checkpoints_topic_pattern())

    def alias(topic: str) -> str | None:
        match = pattern.match(topic)
        return match.group(1) if match else None

    reasons: dict[str, str] = {}
    for part in merged.unreadable:
        source = alias(part.topic)
        where = part.topic if part.partition < 0 else f"{part.topic}-{part.partition}"
        if source is not None:
            reasons.setdefault(source, f"checkpoints {where} not read to its end ({part.reason})")
    for record in merged.rejected:
        reasons.setdefault(
            record.source_cluster,
            f"checkpoint record {record.topic}-{record.partition}@{record.offset} does not decode "
            f"({record.error})",
        )
    found = {source for topic in merged.topics if (source := alias(topic)) is not None}
    with_checkpoints = {offset.source_cluster for offset in gold if offset.method == "checkpoint"}
    for source in sorted(with_checkpoints - found):
        reasons.setdefault(
            source,
            f"no checkpoints topic {policy.checkpoints_topic(source)} on the target while gold holds "
            "its checkpoint translations",
        )
    return reasons
