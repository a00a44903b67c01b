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
  replaces gold's checkpoint row, and competes with another method's row by :func:`tail_replaces`
  (one clock: MM2's stamps never race offsetlake's snapshot times);
- a record that does not decode is never applied; it is counted with its reason (the pipeline
  quarantines it at its next update).

Not known here: the current versions of the methods that lost to gold's row, so when gold's row is
a checkpoint and another method translates the new upstream offset too, the pipeline may choose
that method where this chooses the checkpoint (same upstream offset, perhaps another downstream).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from offsetlake.contract.gold import GoldOffset
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
    gold: Sequence[GoldOffset],
    tail: Sequence[TailRecord],
    precedence: Sequence[str],
    *,
    ingested: Mapping[tuple[str, int], int] | None = None,
) -> TailMerge:
    """Gold's rows with every key the tail translates more freshly replaced (``from_tail=True``).
    ``ingested``: per checkpoint topic-partition, the next offset after the last one the pipeline
    read (bronze_checkpoints); a record at or past it was appended after the pipeline's last read,
    so after the snapshots gold's rows translate (Kafka's order, not a clock). None: unknown."""
    by_key: dict[Key, GoldOffset] = {gold_key(offset): offset for offset in gold}
    rejected = tuple(record for record in tail if record.checkpoint is None)
    replaced = 0
    for key, records in _per_key(tail).items():
        current = by_key.get(key)
        candidate = _translation(key, records, current)
        if current is not None and _unchanged(candidate, current):
            continue
        last = records[-1]
        after_gold = ingested is not None and last.offset >= ingested.get((last.topic, last.partition), 0)
        if current is None or tail_replaces(candidate, current, precedence, after_gold=after_gold):
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


CLOCKS: Final[Mapping[str, str]] = {"checkpoint": "MM2's"}
"""Whose clock stamps each method's input: a checkpoint's Kafka timestamp is MM2's worker clock;
every other method translates a group snapshot offsetlake took (``snapshot_time``: our clock)."""
OUR_CLOCK: Final = "offsetlake's"


def clock(method: str) -> str:
    """The clock that stamps ``method``'s input (CLOCKS)."""
    return CLOCKS.get(method, OUR_CLOCK)


def input_time(offset: GoldOffset) -> datetime:
    """When the newest input of a row was taken: gold's last observation (latest_offsets'
    last_observed_at), a searched snapshot's time, a checkpoint's Kafka timestamp."""
    return offset.observed_at or offset.source_timestamp


def tail_replaces(
    candidate: GoldOffset, current: GoldOffset, precedence: Sequence[str], *, after_gold: bool = False
) -> bool:
    """Whether ``candidate`` (a method's newest observation, read by the apply itself) takes
    ``current``'s place: only when its input is at least as new, compared on one clock.

    - Same method, checkpoints: by Kafka's order, never MM2's stamps (they step back): the tail
      reads every record from the log start and compaction keeps each key's newest, so the tail's
      newest checkpoint is never older than the one gold ingested.
    - Same method otherwise (a searched snapshot): the snapshot's time against gold's last
      observation, both offsetlake's clock; an older snapshot (a stale latest_group_offsets) never
      replaces a fresher row, unless it is of the same upstream offset (the same input, searched on
      a target that holds at least what it held: the answer is as exact or more).
    - Two methods on offsetlake's clock: the precedence rule (mirror/precedence.py: freshest
      upstream offset, then the method order).
    - A checkpoint (MM2's clock) against a snapshot's method (ours): no clock orders them, so a skewed
      worker clock must not decide. ``after_gold`` (the checkpoint was appended after the pipeline's
      last read of its topic, so after gold's snapshots, up to that update's own span): it is the
      freshest, and the precedence rule decides as on one clock. Otherwise the same upstream offset
      goes by the method order, and else the lower downstream offset wins (the consumer may re-read,
      never skip).
    """
    if current.method == candidate.method:
        return (
            candidate.method == "checkpoint"
            or input_time(candidate) >= input_time(current)
            or candidate.upstream_offset == current.upstream_offset
        )
    if clock(current.method) == clock(candidate.method):
        contenders = [_candidate(current), _candidate(candidate)]
        winner, _ = choose(contenders, precedence)
        return winner is contenders[1]
    if candidate.upstream_offset == current.upstream_offset:
        ranks = {method: rank for rank, method in enumerate(precedence)}
        return ranks.get(candidate.method, len(ranks)) < ranks.get(current.method, len(ranks))
    return after_gold or candidate.downstream_offset < current.downstream_offset


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
