"""Gold plus the checkpoints written after it: what ``latest_offsets`` will say after the next update.

Pure: the records come from offsetlake.kafka.checkpoint_tail. The rules are the pipeline's, kept
here for the rows a failover sees before the pipeline does:

- per group-partition the last checkpoint record in partition order is the current one, and its
  Kafka timestamp is the observation time (``checkpoint_observations``);
- a translation keeps the ``source_timestamp`` of the version it continues: when the newest
  checkpoint says what gold's checkpoint row says, only the observation time moves; otherwise the
  version starts at the first record of the newest run of equal checkpoints (``offset_versions``);
- gold's row and the newest checkpoint compete by the precedence rule (pipeline/precedence.py:
  freshest upstream offset first, then the method order);
- a record that does not decode is never applied; it is counted with its reason (the pipeline
  quarantines it at its next update).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from offsetlake.apply.planner import GoldOffset
from offsetlake.kafka.checkpoint_tail import TailRecord
from offsetlake.pipeline.precedence import Candidate, choose

Key = tuple[str, str, str, int]
"""(source_cluster, consumer_group, topic, partition): the key of gold."""


@dataclass(frozen=True)
class _Run:
    """A key's newest run of equal checkpoints: its first and last record, and whether it spans all
    of the key's tail (then it may continue gold's version)."""

    first: TailRecord
    last: TailRecord
    whole_tail: bool


@dataclass(frozen=True)
class CatchUp:
    offsets: tuple[GoldOffset, ...]
    records: int
    """Checkpoint records read after gold's high-water mark."""
    pending: int
    """Group-partitions whose translation now comes from those records."""
    rejected: tuple[TailRecord, ...]
    """Records that did not decode (each carries its reason)."""


def catch_up(gold: Sequence[GoldOffset], tail: Sequence[TailRecord], precedence: Sequence[str]) -> CatchUp:
    """Gold's rows with every key the tail translates more freshly replaced (``pending=True``)."""
    by_key: dict[Key, GoldOffset] = {_key(offset): offset for offset in gold}
    rejected = tuple(record for record in tail if record.checkpoint is None)
    pending = 0
    for key, runs in _newest_runs(tail).items():
        current = by_key.get(key)
        candidate = _translation(key, runs, current)
        if current is None or _wins(candidate, current, precedence):
            by_key[key] = candidate
            pending += 1
    return CatchUp(tuple(by_key.values()), len(tail), pending, rejected)


def _newest_runs(tail: Sequence[TailRecord]) -> dict[Key, _Run]:
    """Per key, its newest run of equal checkpoints, in partition order."""
    runs: dict[Key, _Run] = {}
    for record in sorted(tail, key=lambda r: (r.topic, r.partition, r.offset)):
        checkpoint = record.checkpoint
        if checkpoint is None:
            continue
        key = (record.source_cluster, checkpoint.group, checkpoint.topic, checkpoint.partition)
        run = runs.get(key)
        if run is None:
            runs[key] = _Run(record, record, whole_tail=True)
        elif _offsets(run.first) != _offsets(record):
            runs[key] = _Run(record, record, whole_tail=False)
        else:
            runs[key] = _Run(run.first, record, run.whole_tail)
    return runs


def _translation(key: Key, run: _Run, current: GoldOffset | None) -> GoldOffset:
    checkpoint = run.last.checkpoint
    assert checkpoint is not None  # _newest_runs keeps decoded records only
    continues = (
        run.whole_tail
        and current is not None
        and current.method == "checkpoint"
        and (current.upstream_offset, current.downstream_offset) == _offsets(run.last)
    )
    return GoldOffset(
        source_cluster=key[0],
        consumer_group=key[1],
        topic=key[2],
        partition=key[3],
        downstream_offset=checkpoint.downstream_offset,
        source_timestamp=current.source_timestamp if continues and current else run.first.timestamp,
        method="checkpoint",
        observed_at=run.last.timestamp,
        metadata=checkpoint.metadata,
        upstream_offset=checkpoint.upstream_offset,
        pending=True,
    )


def _wins(candidate: GoldOffset, current: GoldOffset, precedence: Sequence[str]) -> bool:
    if current.method == candidate.method:
        return True  # a newer observation of the same method replaces it
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


def _key(offset: GoldOffset) -> Key:
    return (offset.source_cluster, offset.consumer_group, offset.topic, offset.partition)
