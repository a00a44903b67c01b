"""Which checkpoints MM2's checkpoint task emits for a source group: ``MirrorCheckpointTask`` rules.

For each group that passes the group filter, each committed partition whose topic passes the
topic filter is translated over the syncs MM2 holds (``OffsetSyncStore``); there is no
checkpoint when translation is unavailable or negative (KAFKA-12635), and a checkpoint is only
emitted when it is more recent than the last one for that group and partition
(``checkpointIsMoreRecent``: first one, upstream rewound, or downstream strictly advanced).
The checkpoint names the *downstream* topic (``renameTopicPartition``). docs/mm2-reference.md §2.3.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from offsetlake.codecs.mm2 import Checkpoint
from offsetlake.mirror.policy import ReplicationPolicy
from offsetlake.mirror.positions import CommittedOffset
from offsetlake.mirror.translation import sync_pairs, translate
from offsetlake_dev.simulate.offset_sync_store import OffsetSyncStore

DEFAULT_GROUPS_EXCLUDE = ("console-consumer-.*", "connect-.*", "__.*")
"""MM2's ``groups.exclude`` default (DefaultGroupFilter)."""
DEFAULT_TOPICS_EXCLUDE = (r".*[\-\.]internal", r".*\.replica", "__.*")
"""MM2's ``topics.exclude`` default (DefaultTopicFilter)."""


def _matches_any(patterns: tuple[str, ...], name: str) -> bool:
    # Java's Pattern.matcher(name).matches(): the whole name must match.
    return any(re.fullmatch(pattern, name) for pattern in patterns)


def checkpoint_is_more_recent(last: Checkpoint | None, candidate: Checkpoint) -> bool:
    """MM2 emits only forward-moving checkpoints, except after an upstream group rewind."""
    if last is None:
        return True
    if candidate.upstream_offset < last.upstream_offset:
        return True
    return candidate.downstream_offset > last.downstream_offset


class CheckpointEmitter:
    """One checkpoint task for the flow ``source_alias`` -> ``target_alias``, with its checkpoint store."""

    def __init__(
        self,
        source_alias: str,
        target_alias: str,
        sync_store: OffsetSyncStore,
        *,
        policy: ReplicationPolicy | None = None,
        groups_exclude: tuple[str, ...] = DEFAULT_GROUPS_EXCLUDE,
        topics_exclude: tuple[str, ...] = DEFAULT_TOPICS_EXCLUDE,
    ) -> None:
        self.source_alias = source_alias
        self.target_alias = target_alias
        self.policy = policy or ReplicationPolicy()
        self._sync_store = sync_store
        self._groups_exclude = groups_exclude
        self._topics_exclude = topics_exclude
        self._last: dict[tuple[str, str, int], Checkpoint] = {}

    def replicates_group(self, group: str) -> bool:
        return not _matches_any(self._groups_exclude, group)

    def checkpoints_topic_partition(self, topic: str) -> bool:
        return not _matches_any(self._topics_exclude, topic)

    def checkpoints_for_group(
        self, group: str, committed: Mapping[tuple[str, int], CommittedOffset]
    ) -> list[Checkpoint]:
        """The checkpoints to emit now for ``group``'s committed upstream offsets; updates the store."""
        if not self.replicates_group(group):
            return []
        emitted: list[Checkpoint] = []
        for (topic, partition), position in sorted(committed.items()):
            if not self.checkpoints_topic_partition(topic) or position.offset < 0:
                continue
            retained = self._sync_store.retained(topic, partition)
            downstream_offset = translate(sync_pairs(retained), position.offset) if retained else None
            if downstream_offset is None or downstream_offset < 0:
                continue
            candidate = Checkpoint(
                group=group,
                topic=self.policy.downstream_topic(self.source_alias, self.target_alias, topic),
                partition=partition,
                upstream_offset=position.offset,
                downstream_offset=downstream_offset,
                metadata=position.metadata,
            )
            key = (group, candidate.topic, partition)
            if checkpoint_is_more_recent(self._last.get(key), candidate):
                self._last[key] = candidate
                emitted.append(candidate)
        return emitted
