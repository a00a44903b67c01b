"""The simulator emits offset syncs when MM2 does and holds the syncs MM2's store would hold."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offsetlake.codecs.mm2 import OffsetSync
from offsetlake.mirror.translation import sync_pairs, translate
from offsetlake_dev.simulate.offset_sync_store import SYNC_SLOTS, OffsetSyncStore, update_sync_slots
from offsetlake_dev.simulate.offset_sync_writer import OffsetSyncWriter


def _replicate(
    writer: OffsetSyncWriter, pairs: list[tuple[int, int]], topic: str = "orders"
) -> list[OffsetSync]:
    return [sync for u, d in pairs if (sync := writer.record_replicated(topic, 0, u, d)) is not None]


def test_first_record_of_a_partition_is_synced_immediately() -> None:
    writer = OffsetSyncWriter(offset_lag_max=100)
    assert writer.record_replicated("orders", 0, 7, 3) == OffsetSync("orders", 0, 7, 3)
    assert writer.record_replicated("orders", 1, 0, 0) == OffsetSync("orders", 1, 0, 0)


def test_contiguous_records_are_held_back_until_the_commit_promotes_the_latest() -> None:
    writer = OffsetSyncWriter(offset_lag_max=100)
    immediate = _replicate(writer, [(u, u + 5) for u in range(10)])
    assert immediate == [OffsetSync("orders", 0, 0, 5)]
    assert writer.commit() == [OffsetSync("orders", 0, 9, 14)]
    assert writer.commit() == []  # nothing new held back


def test_upstream_gap_is_synced_immediately() -> None:
    writer = OffsetSyncWriter(offset_lag_max=100)
    # offset 3 is a transaction commit marker: record 4 follows record 2
    immediate = _replicate(writer, [(0, 0), (1, 1), (2, 2), (4, 3), (5, 4)])
    assert immediate == [OffsetSync("orders", 0, 0, 0), OffsetSync("orders", 0, 4, 3)]
    assert writer.commit() == [OffsetSync("orders", 0, 5, 4)]


def test_immediate_sync_discards_the_held_back_one() -> None:
    writer = OffsetSyncWriter(offset_lag_max=100)
    _replicate(writer, [(0, 0), (1, 1), (3, 2)])
    assert writer.commit() == []


def test_downstream_truncation_is_synced_immediately() -> None:
    writer = OffsetSyncWriter(offset_lag_max=100)
    immediate = _replicate(writer, [(0, 50), (1, 51), (2, 10)])
    assert immediate == [OffsetSync("orders", 0, 0, 50), OffsetSync("orders", 0, 2, 10)]


def test_lag_rule_counts_from_the_last_immediate_sync_not_from_promoted_ones() -> None:
    writer = OffsetSyncWriter(offset_lag_max=10)
    assert _replicate(writer, [(u, u) for u in range(5)]) == [OffsetSync("orders", 0, 0, 0)]
    assert writer.commit() == [OffsetSync("orders", 0, 4, 4)]
    # D - (lastSyncD + 1) >= 10 first holds at D = 11, whatever was promoted in between
    assert _replicate(writer, [(u, u) for u in range(5, 23)]) == [
        OffsetSync("orders", 0, 11, 11),
        OffsetSync("orders", 0, 22, 22),
    ]


def test_negative_offsets_and_lag_are_rejected() -> None:
    with pytest.raises(ValueError, match=r"offset\.lag\.max"):
        OffsetSyncWriter(offset_lag_max=-1)
    with pytest.raises(ValueError, match="offsets must be >= 0"):
        OffsetSyncWriter().record_replicated("orders", 0, -1, 0)


# upstream offsets step by 1 (contiguous) or more (gaps); downstream offsets step by exactly 1
_replication_runs = st.tuples(
    st.integers(0, 50),  # first upstream offset
    st.integers(0, 50),  # first downstream offset (records already on the target)
    st.lists(st.sampled_from([1, 1, 1, 1, 2, 3, 11]), min_size=0, max_size=400),
    st.integers(0, 40),  # offset.lag.max
)


def _pairs(first_upstream: int, first_downstream: int, steps: list[int]) -> list[tuple[int, int]]:
    pairs = [(first_upstream, first_downstream)]
    for step in steps:
        pairs.append((pairs[-1][0] + step, pairs[-1][1] + 1))
    return pairs


@settings(max_examples=200, deadline=None)
@given(_replication_runs)
def test_translation_over_emitted_syncs_never_skips_and_lags_less_than_offset_lag_max(
    run: tuple[int, int, list[int], int],
) -> None:
    first_upstream, first_downstream, steps, lag_max = run
    writer = OffsetSyncWriter(offset_lag_max=lag_max)
    pairs = _pairs(first_upstream, first_downstream, steps)
    emitted = _replicate(writer, pairs) + writer.commit()
    syncs = sync_pairs(emitted)
    for upstream, downstream in pairs:
        # a group positioned at this record still owes it: the translation must land at or before it
        translated = translate(syncs, upstream)
        assert translated is not None
        assert 0 <= downstream - translated < max(lag_max, 1)
    # after the commit, a caught-up group translates exactly to the end of the target
    last_upstream, last_downstream = pairs[-1]
    assert translate(syncs, last_upstream + 1) == last_downstream + 1


def test_store_keeps_everything_for_the_first_sync_and_overwrites_on_rewind() -> None:
    first = OffsetSync("orders", 0, 100, 90)
    assert update_sync_slots(None, first) == [first] * SYNC_SLOTS
    later = update_sync_slots([first] * SYNC_SLOTS, OffsetSync("orders", 0, 200, 190))
    rewound = OffsetSync("orders", 0, 50, 300)
    assert update_sync_slots(later, rewound) == [rewound] * SYNC_SLOTS


def test_store_forgets_intermediate_syncs_so_old_positions_translate_imprecisely() -> None:
    store = OffsetSyncStore()
    for upstream in range(0, 1000, 10):
        store.add(OffsetSync("orders", 0, upstream, upstream))
    retained = store.retained("orders", 0)
    assert retained[-1] == OffsetSync("orders", 0, 990, 990)
    assert len(retained) < 20
    # the full history would translate 505 to 501; MM2 only has an older sync to go on
    assert translate(sync_pairs(retained), 505) is not None
    assert translate(sync_pairs(retained), 505) < 501  # type: ignore[operator]
    assert store.retained("orders", 1) == []


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 5000), min_size=1, max_size=300), st.integers(0, 100_000))
def test_store_slots_keep_mm2_invariants_and_never_translate_past_the_full_history(
    upstream_steps: list[int], probe: int
) -> None:
    slots: list[OffsetSync] | None = None
    history: list[OffsetSync] = []
    upstream = 0
    for index, step in enumerate(upstream_steps):
        upstream += step
        sync = OffsetSync("orders", 0, upstream, index)
        history.append(sync)
        slots = update_sync_slots(slots, sync)
    assert slots is not None
    assert slots[0] is history[-1]  # invariant A: the latest sync
    assert slots[-1] is history[0]  # invariant D: the earliest sync (no rewind happened)
    # invariants B and C as OffsetSyncStoreTest.assertSparseSyncInvariant checks them
    for j in range(SYNC_SLOTS):
        for i in range(j + 1):
            i_upstream, j_upstream = slots[i].upstream_offset, slots[j].upstream_offset
            if i_upstream == j_upstream:
                continue
            assert i_upstream >= j_upstream + 2 ** max(i - 2, 0)
            assert i_upstream <= j_upstream + 2**j - 2**i
    retained = translate(sync_pairs(dict.fromkeys(reversed(slots))), probe)
    full = translate(sync_pairs(history), probe)
    if full is None:
        assert retained is None
    else:  # the store is never ahead of the full history, and never empty-handed above its oldest sync
        assert retained is not None
        assert retained <= full


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 64))
def test_store_expires_at_most_one_sync_per_update_for_evenly_spaced_syncs(step: int) -> None:
    store = OffsetSyncStore()
    last_count = 1
    for offset in range(0, 3000, step):
        store.add(OffsetSync("orders", 0, offset, offset))
        count = len(store.retained("orders", 0))
        assert count - last_count >= -1
        last_count = count
