"""Which checkpoints MM2's checkpoint task emits for a source group: ``MirrorCheckpointTask`` rules.

For each group that passes the group filter, each committed partition whose topic passes the
topic filter is translated over the syncs MM2 holds (``OffsetSyncStore``); there is no
checkpoint when translation is unavailable or negative (KAFKA-12635), and a checkpoint is only
emitted when it is more recent than the last one for that group and partition
(``checkpointIsMoreRecent``: first one, upstream rewound, or downstream strictly advanced).
The checkpoint names the *downstream* topic (``renameTopicPartition``). docs/mm2-reference.md §2.3.
"""

from __future__ import annotations

from collections.abc import Mapping

from offsetlake.codecs.mm2 import Checkpoint
from offsetlake.mirror import filters
from offsetlake.mirror.policy import DEFAULT_TOPICS_EXCLUDE as MM2_TOPICS_EXCLUDE
from offsetlake.mirror.policy import ReplicationPolicy
from offsetlake.mirror.positions import CommittedOffset
from offsetlake.mirror.translation import sync_pairs, translate
from offsetlake_dev.simulate.offset_sync_store import OffsetSyncStore

DEFAULT_GROUPS_EXCLUDE: tuple[str, ...] = (filters.DEFAULT_GROUPS_EXCLUDE,)
"""MM2's ``groups.exclude`` default (DefaultGroupFilter), as the list the setting is."""
DEFAULT_TOPICS_EXCLUDE: tuple[str, ...] = (MM2_TOPICS_EXCLUDE,)
"""MM2's ``topics.exclude`` default (DefaultTopicFilter), as the list the setting is."""


def _exclude_filter(patterns: tuple[str, ...], option: str) -> filters.NameFilter:
    """Names that fully match none of ``patterns`` (MM2 joins a list setting into one regex)."""
    return filters.NameFilter.compile(".*", filters.join_patterns(patterns), exclude_option=option)


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
        self._groups = _exclude_filter(groups_exclude, "groups.exclude")
        self._topics = _exclude_filter(topics_exclude, "topics.exclude")
        self._last: dict[tuple[str, str, int], Checkpoint] = {}

    def replicates_group(self, group: str) -> bool:
        return self._groups.matches(group)

    def checkpoints_topic_partition(self, topic: str) -> bool:
        return self._topics.matches(topic)

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
