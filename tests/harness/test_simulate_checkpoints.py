"""The simulator emits checkpoints exactly when MM2's checkpoint task would."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from offsetlake.codecs.mm2 import Checkpoint, OffsetSync
from offsetlake_dev.simulate.checkpoint_emitter import (
    CheckpointEmitter,
    CommittedOffset,
    checkpoint_is_more_recent,
)
from offsetlake_dev.simulate.offset_sync_store import OffsetSyncStore
from offsetlake_dev.simulate.offset_sync_writer import OffsetSyncWriter


def _checkpoint(upstream: int, downstream: int) -> Checkpoint:
    return Checkpoint("billing", "us-east.orders", 0, upstream, downstream, "")


def test_more_recent_means_first_or_downstream_advanced_or_upstream_rewound() -> None:
    assert checkpoint_is_more_recent(None, _checkpoint(10, 8))
    assert checkpoint_is_more_recent(_checkpoint(10, 8), _checkpoint(12, 9))
    assert checkpoint_is_more_recent(_checkpoint(10, 8), _checkpoint(5, 8))  # group reset upstream
    assert not checkpoint_is_more_recent(_checkpoint(10, 8), _checkpoint(11, 8))  # same downstream
    assert not checkpoint_is_more_recent(_checkpoint(10, 8), _checkpoint(12, 7))  # would rewind downstream


def _emitter(*syncs: OffsetSync) -> CheckpointEmitter:
    store = OffsetSyncStore()
    for sync in syncs:
        store.add(sync)
    return CheckpointEmitter("us-east", "us-west", store)


def test_checkpoint_names_the_downstream_topic_and_translates_with_the_plus_one_rule() -> None:
    emitter = _emitter(OffsetSync("orders", 0, 0, 5), OffsetSync("orders", 0, 40, 45))
    committed = {("orders", 0): CommittedOffset(40, "m1"), ("orders", 1): CommittedOffset(3)}
    assert emitter.checkpoints_for_group("billing", committed) == [
        Checkpoint("billing", "us-east.orders", 0, 40, 45, "m1")
    ]  # partition 1 has no syncs: no checkpoint (KAFKA-12635)
    assert emitter.checkpoints_for_group("billing", {("orders", 0): CommittedOffset(41)}) == [
        Checkpoint("billing", "us-east.orders", 0, 41, 46, "")
    ]


def test_failback_topic_returns_to_its_original_name() -> None:
    emitter = _emitter(OffsetSync("us-west.orders", 0, 0, 0))
    assert [
        c.topic for c in emitter.checkpoints_for_group("g", {("us-west.orders", 0): CommittedOffset(0)})
    ] == ["orders"]


def test_repeated_and_rewinding_checkpoints_are_suppressed_per_group_and_partition() -> None:
    emitter = _emitter(OffsetSync("orders", 0, 0, 0), OffsetSync("orders", 0, 100, 100))
    assert len(emitter.checkpoints_for_group("g1", {("orders", 0): CommittedOffset(50)})) == 1
    # a later poll whose translation lands on the same downstream offset emits nothing
    assert emitter.checkpoints_for_group("g1", {("orders", 0): CommittedOffset(60)}) == []
    # another group is independent
    assert len(emitter.checkpoints_for_group("g2", {("orders", 0): CommittedOffset(60)})) == 1
    # upstream rewind: emitted even though downstream does not advance
    assert emitter.checkpoints_for_group("g1", {("orders", 0): CommittedOffset(0)}) == [
        Checkpoint("g1", "us-east.orders", 0, 0, 0, "")
    ]


def test_no_checkpoint_when_the_group_is_older_than_every_retained_sync() -> None:
    emitter = _emitter(OffsetSync("orders", 0, 100, 90))
    assert emitter.checkpoints_for_group("g", {("orders", 0): CommittedOffset(99)}) == []


def test_default_filters_exclude_console_groups_internal_topics_and_uncommitted_partitions() -> None:
    emitter = _emitter(
        OffsetSync("orders", 0, 0, 0),
        OffsetSync("mm2-offset-syncs.us-west.internal", 0, 0, 0),
        OffsetSync("__consumer_offsets", 0, 0, 0),
    )
    assert not emitter.replicates_group("console-consumer-4242")
    assert emitter.checkpoints_for_group("console-consumer-4242", {("orders", 0): CommittedOffset(5)}) == []
    assert (
        emitter.checkpoints_for_group(
            "g",
            {
                ("mm2-offset-syncs.us-west.internal", 0): CommittedOffset(5),
                ("__consumer_offsets", 0): CommittedOffset(5),
                ("orders", 0): CommittedOffset(-1001),
            },
        )
        == []
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from([1, 1, 1, 2, 5, 40]), min_size=1, max_size=500),
    st.integers(0, 30),
    st.lists(st.integers(0, 3000), min_size=1, max_size=5),
)
def test_emitted_checkpoints_never_point_past_the_first_unprocessed_record(
    upstream_steps: list[int], offset_lag_max: int, group_positions: list[int]
) -> None:
    # MM2 end to end without Kafka: records replicated with upstream gaps, syncs written by the
    # writer's rules (and a commit), read by the store, then checkpoints for a group that moves.
    writer, store = OffsetSyncWriter(offset_lag_max), OffsetSyncStore()
    emitter = CheckpointEmitter("us-east", "us-west", store)
    replicated: list[tuple[int, int]] = []
    upstream = 0
    for downstream, step in enumerate(upstream_steps):
        upstream += step
        replicated.append((upstream, downstream))
        if (sync := writer.record_replicated("orders", 0, upstream, downstream)) is not None:
            store.add(sync)
    for sync in writer.commit():
        store.add(sync)
    for position in group_positions:
        for checkpoint in emitter.checkpoints_for_group("g", {("orders", 0): CommittedOffset(position)}):
            owed = next((d for u, d in replicated if u >= position), len(replicated))
            assert checkpoint.downstream_offset <= owed
