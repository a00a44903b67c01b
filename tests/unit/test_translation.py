"""The reference translation never skips a record, is exact where a sync is exact, and never guesses."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offsetlake.codecs.mm2 import OffsetSync
from offsetlake.mirror.translation import sync_pairs, translate


def test_exact_sync_gives_its_downstream_position() -> None:
    assert translate([(0, 10), (100, 98)], 100) == 98


def test_between_syncs_gives_one_past_the_best_sync_below() -> None:
    assert translate([(0, 10), (100, 98), (200, 190)], 150) == 99
    assert translate([(0, 10), (100, 98), (200, 190)], 10_000) == 191


def test_no_sync_at_or_below_means_no_answer() -> None:
    assert translate([], 5) is None
    assert translate([(100, 98), (200, 190)], 99) is None


def test_write_order_breaks_ties_and_does_not_limit_the_choice() -> None:
    # the same upstream offset re-synced later (e.g. after MM2 re-mirrored it): the latest write wins
    assert translate([(50, 40), (50, 75)], 50) == 75
    assert translate([(50, 75), (50, 40)], 60) == 41
    # a sync written later with a smaller upstream offset does not hide a better one
    assert translate([(90, 80), (10, 5)], 95) == 81


def test_negative_positions_are_rejected() -> None:
    with pytest.raises(ValueError, match=r"upstream_offset must be >= 0"):
        translate([(0, 0)], -1)


def test_offset_sync_records_can_be_used_as_input() -> None:
    syncs = [OffsetSync("orders", 0, 0, 10), OffsetSync("orders", 0, 100, 98)]
    assert sync_pairs(syncs) == [(0, 10), (100, 98)]
    assert translate(sync_pairs(syncs), 100) == 98


@dataclass(frozen=True)
class Replication:
    """One mirrored partition: record i sits at upstream[i] upstream and downstream[i] downstream."""

    upstream: list[int]
    downstream: list[int]
    syncs: list[tuple[int, int]]


def _emit_offset_syncs(
    upstream: list[int], downstream: list[int], offset_lag_max: int, commit_after: list[bool]
) -> list[tuple[int, int]]:
    """MM2's OffsetSyncWriter (docs/mm2-reference.md §2.1), one task lifetime, in write order."""
    written: list[tuple[int, int]] = []
    previous_upstream = previous_downstream = last_sync_downstream = -1
    delayed: tuple[int, int] | None = None
    for upstream_offset, downstream_offset, commit in zip(upstream, downstream, commit_after, strict=True):
        if (
            last_sync_downstream == -1
            or downstream_offset - (last_sync_downstream + 1) >= offset_lag_max
            or upstream_offset - previous_upstream != 1
            or downstream_offset < previous_downstream
        ):
            last_sync_downstream = downstream_offset
            written.append((upstream_offset, downstream_offset))
            delayed = None
        else:
            delayed = (upstream_offset, downstream_offset)
        previous_upstream, previous_downstream = upstream_offset, downstream_offset
        if commit and delayed is not None:  # the periodic commit() promotes the held-back sync
            written.append(delayed)
            delayed = None
    return written


@st.composite
def replications(draw: st.DrawFn) -> Replication:
    count = draw(st.integers(1, 40))
    # upstream log: may start after 0 (retention); gaps are compacted records and transaction markers
    upstream_gaps = draw(st.lists(st.sampled_from([0, 0, 0, 0, 1, 2, 7]), min_size=count, max_size=count))
    # downstream log: may hold pre-existing target data; gaps are the producer's own markers
    downstream_gaps = draw(st.lists(st.sampled_from([0, 0, 0, 0, 0, 1]), min_size=count, max_size=count))
    upstream = [draw(st.integers(0, 5))]
    downstream = [draw(st.integers(0, 50))]
    for index in range(1, count):
        upstream.append(upstream[-1] + 1 + upstream_gaps[index])
        downstream.append(downstream[-1] + 1 + downstream_gaps[index])
    offset_lag_max = draw(st.integers(0, 15))
    commit_after = draw(st.lists(st.booleans(), min_size=count, max_size=count))
    syncs = _emit_offset_syncs(upstream, downstream, offset_lag_max, commit_after)
    if draw(st.booleans()):  # compaction, lost sends or a late start leave only some syncs behind
        kept = draw(st.lists(st.booleans(), min_size=len(syncs), max_size=len(syncs)))
        syncs = [sync for sync, keep in zip(syncs, kept, strict=True) if keep]
    return Replication(upstream, downstream, syncs)


@settings(max_examples=300)
@given(replications())
def test_translation_never_skips_is_exact_on_syncs_and_never_guesses(replication: Replication) -> None:
    copies = dict(zip(replication.upstream, replication.downstream, strict=True))
    log_end = replication.upstream[-1] + 1
    for position in range(log_end + 3):
        translated = translate(replication.syncs, position)
        if not any(sync_upstream <= position for sync_upstream, _ in replication.syncs):
            assert translated is None, f"guessed {translated} for position {position}"
            continue
        assert translated is not None
        unread = [copies[offset] for offset in replication.upstream if offset >= position]
        assert all(downstream >= translated for downstream in unread), (
            f"position {position} -> {translated} skips downstream records {unread}"
        )
        if any(sync_upstream == position for sync_upstream, _ in replication.syncs):
            assert translated == copies[position]


@given(replications())
def test_emitted_syncs_follow_mm2_rules(replication: Replication) -> None:
    """Guards the simulator itself: syncs are real (U, D) pairs of the replication, in write order."""
    copies = dict(zip(replication.upstream, replication.downstream, strict=True))
    assert all(copies[upstream] == downstream for upstream, downstream in replication.syncs)
    assert [upstream for upstream, _ in replication.syncs] == sorted(u for u, _ in replication.syncs)


def test_simulator_emits_on_gaps_lag_and_commits() -> None:
    upstream = [0, 1, 2, 5, 6, 7, 8, 9]
    downstream = [10, 11, 12, 13, 14, 15, 16, 17]
    no_commits = [False] * len(upstream)
    # first record, then the gap 2 -> 5; offset.lag.max 100 holds back everything else
    assert _emit_offset_syncs(upstream, downstream, 100, no_commits) == [(0, 10), (5, 13)]
    # offset.lag.max 2: a sync once downstream is 2 past last-sync + 1
    assert _emit_offset_syncs(upstream, downstream, 2, no_commits) == [(0, 10), (5, 13), (8, 16)]
    # a commit after record 6 promotes the held-back sync for it
    commits = [False, False, False, False, True, False, False, False]
    assert _emit_offset_syncs(upstream, downstream, 100, commits) == [(0, 10), (5, 13), (6, 14)]
