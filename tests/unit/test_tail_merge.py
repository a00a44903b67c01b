"""Gold plus the checkpoint tail (apply/tail_merge.py) and the pure precedence twin it relies on."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from offsetlake.apply.tail_merge import merge_tail, tail_replaces
from offsetlake.codecs.mm2 import Checkpoint
from offsetlake.contract.gold import GoldOffset
from offsetlake.kafka.checkpoint_tail import TailRecord
from offsetlake.mirror.precedence import METHODS, Candidate, choose

T0 = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
TOPIC = "primary.checkpoints.internal"


def record(
    offset: int, group: str, upstream: int, downstream: int, *, partition: int = 0, second: int | None = None
) -> TailRecord:
    """A checkpoint record at ``offset``, stamped T0 + ``second`` (default: its offset)."""
    checkpoint = Checkpoint(group, "primary.orders", partition, upstream, downstream, "m")
    stamp = T0 + timedelta(seconds=offset if second is None else second)
    return TailRecord("primary", TOPIC, 0, offset, stamp, checkpoint)


def gold(
    group: str, upstream: int, downstream: int, method: str = "checkpoint", **extra: object
) -> GoldOffset:
    values: dict[str, object] = {
        "source_cluster": "primary",
        "consumer_group": group,
        "topic": "primary.orders",
        "partition": 0,
        "downstream_offset": downstream,
        "source_timestamp": T0 - timedelta(hours=1),
        "method": method,
        "observed_at": T0 - timedelta(minutes=1),
        "upstream_offset": upstream,
        "metadata": "m",
        **extra,
    }
    return GoldOffset(**values)  # type: ignore[arg-type]


def only(result: tuple[GoldOffset, ...], group: str) -> GoldOffset:
    (found,) = [offset for offset in result if offset.consumer_group == group]
    return found


def test_a_newer_checkpoint_replaces_gold_and_is_marked_from_tail() -> None:
    result = merge_tail([gold("a", 10, 8)], [record(5, "a", 12, 11)], METHODS)
    moved = only(result.offsets, "a")
    assert (moved.upstream_offset, moved.downstream_offset, moved.from_tail) == (12, 11, True)
    assert moved.source_timestamp == moved.observed_at == T0 + timedelta(seconds=5)
    assert (result.records, result.replaced, result.rejected) == (1, 1, ())


def test_the_same_translation_observed_again_keeps_its_version_start() -> None:
    result = merge_tail([gold("a", 10, 8)], [record(5, "a", 10, 8), record(6, "a", 10, 8)], METHODS)
    again = only(result.offsets, "a")
    assert again.source_timestamp == T0 - timedelta(hours=1)
    assert again.observed_at == T0 + timedelta(seconds=6)


def test_the_last_record_in_partition_order_wins_and_its_run_starts_the_version() -> None:
    tail = [record(9, "a", 14, 13), record(7, "a", 12, 11), record(8, "a", 14, 13)]
    moved = only(merge_tail([], tail, METHODS).offsets, "a")
    assert (moved.downstream_offset, moved.source_timestamp) == (13, T0 + timedelta(seconds=8))


def test_an_offset_sync_translating_the_same_upstream_offset_keeps_its_precedence() -> None:
    synced = gold("a", 12, 12, method="offset_sync")
    result = merge_tail([synced], [record(5, "a", 12, 11)], METHODS)
    assert only(result.offsets, "a") == synced
    assert result.replaced == 0


def test_a_fresher_upstream_offset_beats_a_higher_precedence_method_on_one_clock() -> None:
    synced = gold("a", 10, 10, method="offset_sync")
    mapped = gold("a", 12, 11, method="mapping", observed_at=T0)
    assert tail_replaces(mapped, synced, METHODS) and not tail_replaces(synced, mapped, METHODS)


def test_a_checkpoint_and_a_snapshots_translation_are_not_ordered_by_their_stamps() -> None:
    """Issue 46: the source group was reset from 140 to 20; gold translated the new snapshot (15,
    offsetlake's clock) while the tail's newest checkpoint is still of 140, stamped by an MM2 worker
    clock an hour ahead. No clock orders the two: the lower wins (a re-read, never a skip)."""
    synced = gold("a", 20, 15, method="offset_sync", observed_at=T0)
    ahead = record(5, "a", 140, 140, second=3600)
    read = {(TOPIC, 0): 6}  # the pipeline read the checkpoint: it is no proof of anything newer
    assert only(merge_tail([synced], [ahead], METHODS, ingested=read).offsets, "a") == synced
    assert only(merge_tail([synced], [ahead], METHODS).offsets, "a") == synced, "unknown: the same"
    # And a checkpoint of the reset against a stale snapshot stamped later on our clock: the same.
    stale = gold("a", 140, 140, method="offset_sync", observed_at=T0 + timedelta(hours=2))
    assert only(merge_tail([stale], [record(5, "a", 20, 15)], METHODS).offsets, "a").downstream_offset == 15


def test_a_checkpoint_appended_after_the_pipelines_last_read_is_newer_than_golds_snapshots() -> None:
    """The source died after a refresh and MM2 checkpointed the group further on (offset 5, past what
    bronze ingested), its worker clock an hour behind: Kafka's order says it is the newer input."""
    synced = gold("a", 10, 10, method="offset_sync", observed_at=T0)
    further = record(5, "a", 14, 14, second=-3600)
    moved = only(merge_tail([synced], [further], METHODS, ingested={(TOPIC, 0): 5}).offsets, "a")
    assert (moved.method, moved.downstream_offset) == ("checkpoint", 14)
    assert only(merge_tail([synced], [further], METHODS, ingested={(TOPIC, 0): 6}).offsets, "a") == synced


offsets = st.integers(0, 200)


@given(
    st.tuples(offsets, offsets),
    st.tuples(offsets, offsets),
    st.integers(-7200, 7200),
    st.sampled_from(("offset_sync", "mapping", "k2k_tracing_headers")),
    st.booleans(),
)
def test_across_clocks_the_stamps_never_decide(
    gold_at: tuple[int, int], tail_at: tuple[int, int], skew: int, method: str, after_gold: bool
) -> None:
    """A checkpoint (MM2's clock) against a snapshot method's row (ours), any skew: the same upstream
    offset goes by the method order; else a checkpoint the pipeline has read gives the lower
    downstream offset, and one appended after its last read wins (Kafka's order)."""
    (gold_up, gold_down), (tail_up, tail_down) = gold_at, tail_at
    row = gold("a", gold_up, gold_down, method=method, observed_at=T0)
    tail = [record(3, "a", tail_up, tail_down, second=skew)]
    ingested = {(TOPIC, 0): 3 if after_gold else 4}
    merged = only(merge_tail([row], tail, METHODS, ingested=ingested).offsets, "a")
    if gold_up == tail_up:
        assert merged == row  # every snapshot method comes before checkpoints in the default order
    elif after_gold:
        assert (merged.upstream_offset, merged.downstream_offset) == (tail_up, tail_down)
    else:
        assert merged.downstream_offset == min(gold_down, tail_down)


def test_a_record_that_does_not_decode_is_counted_with_its_reason_and_never_applied() -> None:
    broken = TailRecord("primary", TOPIC, 0, 3, T0, None, "checkpoint value: truncated")
    result = merge_tail([gold("a", 10, 8)], [broken], METHODS)
    assert only(result.offsets, "a") == gold("a", 10, 8)
    assert result.rejected == (broken,)
    assert (result.records, result.replaced) == (1, 0)


def test_the_records_gold_already_holds_add_nothing() -> None:
    """The tail starts at the log start: what gold consumed is read again and changes nothing."""
    seen = gold("a", 10, 8, observed_at=T0 + timedelta(seconds=6))
    result = merge_tail([seen], [record(5, "a", 10, 8), record(6, "a", 10, 8)], METHODS)
    assert only(result.offsets, "a") == seen
    assert (result.records, result.replaced, result.gold_checkpoints) == (2, 0, 1)


def test_a_rewind_stamped_before_gold_is_the_one_change_among_records_gold_already_holds() -> None:
    """A group reset on the source (20 -> 15), checkpointed by a worker whose clock is behind the one
    that wrote gold's checkpoint; the other group's records are all in gold already."""
    seen_a = gold("a", 20, 20, source_timestamp=T0, observed_at=T0 + timedelta(seconds=50))
    seen_b = gold("b", 7, 7, source_timestamp=T0, observed_at=T0 + timedelta(seconds=51))
    tail = [
        record(0, "a", 20, 20, second=0),
        record(1, "b", 7, 7, second=0),
        record(2, "a", 20, 20, second=50),
        record(3, "b", 7, 7, second=51),
        record(4, "a", 15, 15, second=30),
    ]
    result = merge_tail([seen_a, seen_b], tail, METHODS)
    rewound = only(result.offsets, "a")
    assert (rewound.upstream_offset, rewound.downstream_offset, rewound.from_tail) == (15, 15, True)
    assert rewound.source_timestamp == rewound.observed_at == T0 + timedelta(seconds=30)
    assert only(result.offsets, "b") == seen_b
    assert result.replaced == 1


def test_a_run_the_topic_shows_whole_starts_at_its_first_record_and_gold_fills_in_a_compacted_start() -> None:
    back = [record(0, "a", 10, 10), record(1, "a", 12, 12), record(2, "a", 10, 10), record(3, "a", 10, 10)]
    before = gold(
        "a", 12, 12, source_timestamp=T0 + timedelta(seconds=1), observed_at=T0 + timedelta(seconds=1)
    )
    shown = only(merge_tail([before], back, METHODS).offsets, "a")
    assert (shown.source_timestamp, shown.observed_at) == (
        T0 + timedelta(seconds=2),
        T0 + timedelta(seconds=3),
    )
    # Compaction left only the newest run; gold, which saw record 2, knows its run began an hour ago.
    known = gold("a", 10, 10, observed_at=T0 + timedelta(seconds=2))
    result = merge_tail([known], back[2:], METHODS)
    kept = only(result.offsets, "a")
    assert (kept.source_timestamp, kept.observed_at) == (known.source_timestamp, T0 + timedelta(seconds=3))
    # And once gold has seen record 3 too, the same records add nothing.
    seen = replace(kept, from_tail=False)
    assert merge_tail([seen], back[2:], METHODS).replaced == 0


checkpoints = st.lists(
    st.tuples(st.sampled_from("abc"), st.integers(0, 3), st.integers(0, 3), st.integers(0, 5)),
    min_size=0,
    max_size=12,
)


@given(checkpoints, st.integers(0, 12))
def test_catching_up_from_a_gold_of_any_prefix_equals_catching_up_at_once_and_no_key_is_lost(
    values: list[tuple[str, int, int, int]], split: int
) -> None:
    """Gold consumed the first ``split`` records (its rows are what merge_tail made of them); the tail,
    read from the log start, holds them all: timestamps step back freely."""
    tail = [
        record(offset, group, up, up + down, second=second)
        for offset, (group, up, down, second) in enumerate(values)
    ]
    start = [gold("a", 0, 0), gold("z", 1, 1, method="offset_sync")]
    at_once = merge_tail(start, tail, METHODS).offsets
    stepwise = merge_tail(merge_tail(start, tail[:split], METHODS).offsets, tail, METHODS).offsets
    assert sorted(at_once, key=repr) == sorted(stepwise, key=repr)
    assert {o.consumer_group for o in start} <= {o.consumer_group for o in at_once}


def candidate(method: str, upstream: int | None, downstream: int, minute: int | None) -> Candidate:
    return Candidate(method, upstream, downstream, None if minute is None else T0 + timedelta(minutes=minute))


def test_choose_takes_the_freshest_upstream_then_the_method_order_and_flags_disagreement() -> None:
    stale_sync = candidate("offset_sync", 10, 10, 1)
    fresh_checkpoint = candidate("checkpoint", 12, 11, 5)
    fresh_sync = candidate("offset_sync", 12, 12, 3)
    assert choose([stale_sync, fresh_checkpoint], METHODS) == (fresh_checkpoint, False)
    assert choose([fresh_checkpoint, fresh_sync, stale_sync], METHODS) == (fresh_sync, True)
    assert choose([fresh_checkpoint], ("checkpoint", "offset_sync", "mapping")) == (fresh_checkpoint, False)


def test_choose_sorts_an_unknown_freshness_last() -> None:
    unknown = candidate("mapping", 20, 20, None)
    known = candidate("checkpoint", 12, 11, 0)
    assert choose([unknown, known], METHODS)[0] is known
