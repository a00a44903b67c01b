"""Gold plus the checkpoint tail (apply/catch_up.py) and the pure precedence twin it relies on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from offsetlake.apply.catch_up import catch_up
from offsetlake.apply.planner import GoldOffset
from offsetlake.codecs.mm2 import Checkpoint
from offsetlake.kafka.checkpoint_tail import TailRecord
from offsetlake.pipeline.precedence import METHODS, Candidate, choose

T0 = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
TOPIC = "primary.checkpoints.internal"


def record(offset: int, group: str, upstream: int, downstream: int, *, partition: int = 0) -> TailRecord:
    checkpoint = Checkpoint(group, "primary.orders", partition, upstream, downstream, "m")
    return TailRecord("primary", TOPIC, 0, offset, T0 + timedelta(seconds=offset), checkpoint)


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
    }
    return GoldOffset(**values)  # type: ignore[arg-type]


def only(result: tuple[GoldOffset, ...], group: str) -> GoldOffset:
    (found,) = [offset for offset in result if offset.consumer_group == group]
    return found


def test_a_newer_checkpoint_replaces_gold_and_is_marked_pending() -> None:
    result = catch_up([gold("a", 10, 8)], [record(5, "a", 12, 11)], METHODS)
    moved = only(result.offsets, "a")
    assert (moved.upstream_offset, moved.downstream_offset, moved.pending) == (12, 11, True)
    assert moved.source_timestamp == moved.observed_at == T0 + timedelta(seconds=5)
    assert (result.records, result.pending, result.rejected) == (1, 1, ())


def test_the_same_translation_observed_again_keeps_its_version_start() -> None:
    result = catch_up([gold("a", 10, 8)], [record(5, "a", 10, 8), record(6, "a", 10, 8)], METHODS)
    again = only(result.offsets, "a")
    assert again.source_timestamp == T0 - timedelta(hours=1)
    assert again.observed_at == T0 + timedelta(seconds=6)


def test_the_last_record_in_partition_order_wins_and_its_run_starts_the_version() -> None:
    tail = [record(9, "a", 14, 13), record(7, "a", 12, 11), record(8, "a", 14, 13)]
    moved = only(catch_up([], tail, METHODS).offsets, "a")
    assert (moved.downstream_offset, moved.source_timestamp) == (13, T0 + timedelta(seconds=8))


def test_an_offset_sync_translating_the_same_upstream_offset_keeps_its_precedence() -> None:
    synced = gold("a", 12, 12, method="offset_sync")
    result = catch_up([synced], [record(5, "a", 12, 11)], METHODS)
    assert only(result.offsets, "a") == synced
    assert result.pending == 0


def test_a_fresher_upstream_offset_beats_a_higher_precedence_method() -> None:
    synced = gold("a", 10, 10, method="offset_sync")
    moved = only(catch_up([synced], [record(5, "a", 12, 11)], METHODS).offsets, "a")
    assert (moved.method, moved.downstream_offset) == ("checkpoint", 11)


def test_a_record_that_does_not_decode_is_counted_with_its_reason_and_never_applied() -> None:
    broken = TailRecord("primary", TOPIC, 0, 3, T0, None, "checkpoint value: truncated")
    result = catch_up([gold("a", 10, 8)], [broken], METHODS)
    assert only(result.offsets, "a") == gold("a", 10, 8)
    assert result.rejected == (broken,)
    assert (result.records, result.pending) == (1, 0)


checkpoints = st.lists(
    st.tuples(st.sampled_from("abc"), st.integers(0, 3), st.integers(0, 3)), min_size=0, max_size=12
)


@given(checkpoints, st.integers(0, 12))
def test_catching_up_in_two_steps_equals_catching_up_at_once_and_no_key_is_lost(
    values: list[tuple[str, int, int]], split: int
) -> None:
    tail = [record(offset, group, up, up + down) for offset, (group, up, down) in enumerate(values)]
    start = [gold("a", 0, 0), gold("z", 1, 1, method="offset_sync")]
    at_once = catch_up(start, tail, METHODS).offsets
    stepwise = catch_up(catch_up(start, tail[:split], METHODS).offsets, tail[split:], METHODS).offsets
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
