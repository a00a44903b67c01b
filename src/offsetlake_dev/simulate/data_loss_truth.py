"""What failing over now would cost each group, worked out from what the simulator wrote, not from gold.

Gold's ``failover_data_loss`` estimates, per group-partition, the source records the target does
not hold yet, split at the group's committed offset. The simulator knows the same facts first-hand:
the source log it produced, the Connect offset it stored (or the reset tombstone it wrote) and the
offsets it committed for each group. The figures here come from classifying every missing source
offset one by one, not from gold's arithmetic, so a test comparing the two can fail.

Gold's conventions (docs/mm2-reference.md §1.6, §2.1; ``offsetlake.mirror.progress``):

- counts are offsets, not records: commit markers and filtered records count, as they do in lag;
- what is on the target is what MM2's records prove: everything below the stored Connect offset + 1
  (or a sync written after it); a reset tombstone makes the position unknown, so the figures are
  unknown (None), never 0; a partition MM2 never replicated has nothing on the target, so every
  offset from the log start is missing;
- a committed offset past the log end (snapshots taken moments apart) consumed the whole log.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from offsetlake.mirror.progress import ReplicationStatus

TopicPartitionKey = tuple[str, int]


@dataclass(frozen=True)
class SourcePartition:
    """One source partition as the simulator left it."""

    log_start: int
    log_end: int
    status: ReplicationStatus
    replicated_next: int | None = None
    """First upstream offset MM2's records do not prove is on the target; only when replicating."""

    def __post_init__(self) -> None:
        if not 0 <= self.log_start <= self.log_end:
            raise ValueError(f"need 0 <= log_start <= log_end, got {self.log_start}, {self.log_end}")
        replicating = self.status is ReplicationStatus.REPLICATING
        if replicating != (self.replicated_next is not None):
            raise ValueError(f"replicated_next is known exactly when replicating, not when {self.status}")


@dataclass(frozen=True)
class ExpectedLoss:
    """The figures gold must show for one group-partition (None: unknown, MM2's offset was reset)."""

    status: ReplicationStatus
    replicated_through: int | None
    """First source offset not on the target: MM2's position, or the log start if never replicated."""
    consumed_not_replicated: int | None
    unconsumed_lost: int | None


def expected_data_loss(
    partitions: Mapping[TopicPartitionKey, SourcePartition],
    committed: Mapping[str, Mapping[TopicPartitionKey, int]],
) -> dict[tuple[str, str, int], ExpectedLoss]:
    """Per (group, topic, partition) the group committed on: the records failing over now costs it.

    ``committed`` maps each group to its committed source offsets; every partition it names must
    be in ``partitions`` (the simulator knows every partition it wrote to).
    """
    expected = {}
    for group, offsets in committed.items():
        for key, committed_offset in offsets.items():
            if key not in partitions:
                raise KeyError(f"{group} committed on {key}, a partition the scenario does not describe")
            expected[(group, *key)] = _partition_loss(partitions[key], committed_offset)
    return expected


def _partition_loss(partition: SourcePartition, committed_offset: int) -> ExpectedLoss:
    if partition.status is ReplicationStatus.RESET:
        return ExpectedLoss(partition.status, None, None, None)
    first_missing = partition.log_start if partition.replicated_next is None else partition.replicated_next
    missing = range(first_missing, partition.log_end)
    consumed = sum(1 for offset in missing if offset < committed_offset)
    return ExpectedLoss(partition.status, first_missing, consumed, len(missing) - consumed)
