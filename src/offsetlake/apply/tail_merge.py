"""Gold plus the target's checkpoint records: what ``latest_offsets`` will say after the next update.

Pure: the records come from offsetlake.kafka.checkpoint_tail, every record each checkpoints topic
still holds, from its log start, so nothing gold may have missed is skipped. The rules are the
pipeline's (offsetlake.pipeline.history), kept here for the rows a failover sees before the
pipeline does:

- per group-partition the checkpoint records are ordered by their Kafka coordinates within their
  checkpoints topic (offset, then timestamp; MM2 writes one partition), never by timestamp alone:
  MM2's timestamps come from worker clocks and can step back. The last one is the current
  checkpoint; its Kafka timestamp is the observation time;
- a translation's ``source_timestamp`` is the timestamp of the first record of the newest run of
  equal (upstream, downstream) checkpoints. When the topic holds nothing before that run (a new
  key, or compaction removed what came before) and gold's checkpoint row says the same, gold's
  ``source_timestamp`` is kept: gold saw the run begin;
- a key whose newest checkpoint is exactly gold's row adds nothing; otherwise the newest checkpoint
  replaces gold's checkpoint row, and competes with another method's row by the precedence rule
  (mirror/precedence.py: freshest upstream offset first, then the method order);
- a record that does not decode is never applied; it is counted with its reason (the pipeline
  quarantines it at its next update).

Not known here: the current versions of the methods that lost to gold's row, so when gold's row is
a checkpoint and another method translates the new upstream offset too, the pipeline may choose
that method where this chooses the checkpoint (same upstream offset, perhaps another downstream).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from offsetlake.apply.planner import GoldOffset
from offsetlake.kafka.checkpoint_tail import TailRecord, UnreadablePartition
from offsetlake.mirror.precedence import Candidate, choose

Key = tuple[str, str, str, int]
"""(source_cluster, consumer_group, topic, partition): the key of gold."""


@dataclass(frozen=True)
class TailMerge:
    offsets: tuple[GoldOffset, ...]
    records: int
    """Checkpoint records read from the target."""
    replaced: int
    """Group-partitions whose translation now comes from those records."""
    rejected: tuple[TailRecord, ...]
    """Records that did not decode (each carries its reason)."""
    gold_checkpoints: int = 0
    """Gold rows translated by the checkpoint method (none found on the target while gold has some:
    the replication policy may not be the pipeline's)."""
    topics: tuple[str, ...] = ()
    """The checkpoint topics read."""
    unreadable: tuple[UnreadablePartition, ...] = ()
    """Checkpoint partitions that could not be read to their end (none of their records is used)."""


def merge_tail(
    gold: Sequence[GoldOffset], tail: Sequence[TailRecord], precedence: Sequence[str]
) -> TailMerge:
    """Gold's rows with every key the tail translates more freshly replaced (``from_tail=True``)."""
    by_key: dict[Key, GoldOffset] = {gold_key(offset): offset for offset in gold}
    rejected = tuple(record for record in tail if record.checkpoint is None)
    replaced = 0
    for key, records in _per_key(tail).items():
        current = by_key.get(key)
        candidate = _translation(key, records, current)
        if current is not None and _unchanged(candidate, current):
            continue
        if current is None or tail_replaces(candidate, current, precedence):
            by_key[key] = candidate
            replaced += 1
    checkpoints = sum(1 for offset in gold if offset.method == "checkpoint")
    return TailMerge(tuple(by_key.values()), len(tail), replaced, rejected, checkpoints)


def sequence(record: TailRecord) -> tuple[int, float]:
    """The pipeline's order of one key's checkpoint observations (history.observation_sequence)."""
    return record.offset, record.timestamp.timestamp()


def _per_key(tail: Sequence[TailRecord]) -> dict[Key, list[TailRecord]]:
    """Per key, its decoded records in the pipeline's order."""
    keyed: dict[Key, list[TailRecord]] = {}
    for record in tail:
        checkpoint = record.checkpoint
        if checkpoint is not None:
            key = (record.source_cluster, checkpoint.group, checkpoint.topic, checkpoint.partition)
            keyed.setdefault(key, []).append(record)
    return {key: sorted(records, key=sequence) for key, records in keyed.items()}


def _translation(key: Key, records: list[TailRecord], current: GoldOffset | None) -> GoldOffset:
    last = records[-1]
    checkpoint = last.checkpoint
    assert checkpoint is not None  # _per_key keeps decoded records only
    start = len(records) - 1
    while start > 0 and _offsets(records[start - 1]) == _offsets(last):
        start -= 1
    continues = (
        start == 0
        and current is not None
        and current.method == "checkpoint"
        and (current.upstream_offset, current.downstream_offset) == _offsets(last)
    )
    return GoldOffset(
        source_cluster=key[0],
        consumer_group=key[1],
        topic=key[2],
        partition=key[3],
        downstream_offset=checkpoint.downstream_offset,
        source_timestamp=current.source_timestamp if continues and current else records[start].timestamp,
        method="checkpoint",
        observed_at=last.timestamp,
        metadata=checkpoint.metadata,
        upstream_offset=checkpoint.upstream_offset,
        from_tail=True,
    )


def _unchanged(candidate: GoldOffset, current: GoldOffset) -> bool:
    """Gold's row already is this checkpoint (the same version, observed last at the same time, with
    the same metadata): the tail adds nothing to it. Equal stamps alone prove nothing: MM2's clocks
    may repeat one."""
    return (
        current.method == candidate.method
        and current.metadata == candidate.metadata
        and current.upstream_offset == candidate.upstream_offset
        and current.downstream_offset == candidate.downstream_offset
        and current.source_timestamp == candidate.source_timestamp
        and current.observed_at == candidate.observed_at
    )


def tail_replaces(candidate: GoldOffset, current: GoldOffset, precedence: Sequence[str]) -> bool:
    """Whether ``candidate`` (a method's newest observation, read by the apply itself) takes
    ``current``'s place in latest_offsets: a newer observation of the same method always does (it is
    that method's current version); another method's row competes by the precedence rule (freshest
    upstream offset first, then the method order)."""
    if current.method == candidate.method:
        return True
    contenders = [_candidate(current), _candidate(candidate)]
    winner, _ = choose(contenders, precedence)
    return winner is contenders[1]


def _candidate(offset: GoldOffset) -> Candidate:
    return Candidate(
        method=offset.method,
        upstream_offset=offset.upstream_offset,
        downstream_offset=offset.downstream_offset,
        freshness=offset.observed_at or offset.source_timestamp,
    )


def _offsets(record: TailRecord) -> tuple[int, int] | None:
    checkpoint = record.checkpoint
    return None if checkpoint is None else (checkpoint.upstream_offset, checkpoint.downstream_offset)


def gold_key(offset: GoldOffset) -> Key:
    """A gold row's key, as the merges of what the apply reads itself index gold."""
    return (offset.source_cluster, offset.consumer_group, offset.topic, offset.partition)
