"""Failback's reverse translation never skips a record, is exact at sync points and on K2K's headers,
and never guesses before the history starts.

Replication histories come from the forward translation's generator (tests/unit/test_translation.py:
MM2's OffsetSyncWriter over logs with upstream gaps for compacted and filtered records and
transaction markers, downstream gaps for the producer's markers, syncs lost to compaction), here
optionally with a task restart that replicates again from an earlier upstream offset (duplicates).
The truth of a committed downstream position D: the smallest upstream offset the forward flow
replicated and no copy of which lies below D (the group has not read it); past every record, the
last replicated upstream offset + 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offsetlake.k2k.reverse_tracing import BEFORE_LOG_START, NO_TRACED_RECORDS, reverse_search
from offsetlake.mirror.reverse_translation import NoReverseTranslation, current_history, translate_back
from tests.unit.test_k2k_tracing import SOUGHT, Partition, partitions, scanning_probe
from tests.unit.test_translation import Replication, _emit_offset_syncs, replications


def test_a_sync_at_the_position_is_exact() -> None:
    result = translate_back([(0, 10), (100, 98)], 98)
    assert (result.upstream_offset, result.exact, result.reread_bound) == (100, True, 0)


def test_past_a_sync_its_record_was_read_so_resume_one_after_it() -> None:
    result = translate_back([(0, 10), (100, 98), (200, 190)], 150)
    assert (result.upstream_offset, result.exact, result.matched) == (101, False, (100, 98))
    assert result.reread_bound == 200 - 101  # at most up to the next sync's record


def test_past_the_last_sync_the_source_log_end_bounds_the_re_reads() -> None:
    assert translate_back([(100, 98)], 120).reread_bound is None
    assert translate_back([(100, 98)], 120, source_log_end=130).reread_bound == 29


def test_before_the_first_sync_or_without_one_nothing_is_guessed() -> None:
    before = translate_back([(100, 98), (200, 190)], 97)
    assert before.upstream_offset is None
    assert before.untranslated is NoReverseTranslation.BEFORE_FIRST_SYNC
    assert "precedes the first retained sync (downstream 98)" in before.detail
    assert translate_back([], 5).untranslated is NoReverseTranslation.NO_SYNCS


def test_a_downstream_rewind_starts_a_new_history() -> None:
    # the target topic was recreated: syncs before the rewind name offsets that no longer exist
    syncs = [(0, 0), (500, 500), (600, 0), (650, 50)]
    assert current_history(syncs) == [(600, 0), (650, 50)]
    assert translate_back(syncs, 60).upstream_offset == 651
    assert translate_back(syncs, 0).upstream_offset == 600


def test_an_upstream_rewind_leaves_the_re_reads_unbounded() -> None:
    # MM2 restarted and replicated again from upstream 5: downstream 10.. are copies of 5..
    syncs = [(0, 0), (9, 9), (5, 10), (12, 17)]
    result = translate_back(syncs, 12)
    assert (result.upstream_offset, result.reread_bound) == (6, None)


def test_negative_positions_are_rejected() -> None:
    with pytest.raises(ValueError, match=r"downstream_offset must be >= 0"):
        translate_back([(0, 0)], -1)


@dataclass(frozen=True)
class History:
    """Replicated records in downstream order: (upstream, downstream), and the syncs written."""

    records: list[tuple[int, int]]
    syncs: list[tuple[int, int]]
    restarted: bool

    def truth(self, position: int) -> int:
        read = {upstream for upstream, downstream in self.records if downstream < position}
        unread = [upstream for upstream, _ in self.records if upstream not in read]
        return min(unread) if unread else max(upstream for upstream, _ in self.records) + 1


@st.composite
def histories(draw: st.DrawFn) -> History:
    first: Replication = draw(replications())
    records = list(zip(first.upstream, first.downstream, strict=True))
    syncs = list(first.syncs)
    restarted = len(records) > 1 and draw(st.booleans())
    if restarted:  # a new task lifetime replicates again from an earlier record (at least once)
        again = records[draw(st.integers(0, len(records) - 1)) :]
        base = records[-1][1] + 1 + draw(st.integers(0, 2))
        upstream = [upstream for upstream, _ in again]
        downstream = [base + index for index in range(len(again))]
        commits = draw(st.lists(st.booleans(), min_size=len(again), max_size=len(again)))
        syncs += _emit_offset_syncs(upstream, downstream, draw(st.integers(0, 15)), commits)
        records += list(zip(upstream, downstream, strict=True))
    return History(records, syncs, restarted)


@settings(max_examples=300)
@given(histories())
def test_reverse_translation_never_skips_is_exact_at_syncs_and_never_guesses(history: History) -> None:
    log_end = max(upstream for upstream, _ in history.records) + 1
    for position in range(history.records[-1][1] + 2):
        result = translate_back(history.syncs, position, source_log_end=log_end)
        if not any(downstream <= position for _, downstream in history.syncs):
            assert result.upstream_offset is None, f"guessed {result} for position {position}"
            assert result.untranslated is not None
            continue
        assert result.upstream_offset is not None
        truth = history.truth(position)
        assert result.upstream_offset <= truth, f"position {position} -> {result} skips to past {truth}"
        if result.reread_bound is not None and not history.restarted:
            # a restart the syncs do not show (its lifetime's last syncs lost) is beyond the bound
            assert truth - result.upstream_offset <= result.reread_bound, (position, result, truth)
        if not history.restarted and any(downstream == position for _, downstream in history.syncs):
            assert result.exact
            assert result.upstream_offset == truth


def sought_truth(partition: Partition, position: int) -> int | None:
    """The source offset of the first sought record at or after D; past them, the last + 1."""
    sought = partition.sought()
    if not sought:
        return None
    after = [source for target, source in sought if target >= position]
    return after[0] if after else sought[-1][1] + 1


@settings(max_examples=300)
@given(partitions(), st.integers(0, 1100), st.sampled_from([None, 1, 3]))
def test_tracing_headers_give_the_record_at_the_position_exactly(
    partition: Partition, offset: int, scan_limit: int | None
) -> None:
    position = min(offset, partition.high)
    probe = scanning_probe(partition, scan_limit)
    result = reverse_search(probe, partition.low, partition.high, position, where="orders[0]")
    if position < partition.low:
        assert (result.upstream_offset, result.untranslated) == (None, BEFORE_LOG_START)
        return
    truth = sought_truth(partition, position)
    if truth is None:
        assert (result.upstream_offset, result.untranslated) == (None, NO_TRACED_RECORDS)
        return
    assert result.upstream_offset == truth
    at_or_after = [target for target, _ in partition.sought() if target >= position]
    assert result.exact == bool(at_or_after)
    if at_or_after:
        assert result.matched_target_offset == at_or_after[0]


@given(partitions(), st.integers(0, 60), st.integers(1, 3))
def test_a_tracing_search_stopped_early_still_never_skips(
    partition: Partition, offset: int, probes: int
) -> None:
    position = partition.low + min(offset, len(partition.records))
    result = reverse_search(
        scanning_probe(partition, 1), partition.low, partition.high, position, where="w", max_probes=probes
    )
    truth = sought_truth(partition, position)
    if result.upstream_offset is not None:
        assert truth is not None
        assert result.upstream_offset <= truth


def test_tracing_past_the_last_traced_record_resumes_one_after_it() -> None:
    partition = Partition(100, ((SOUGHT, 7), ("untraced", -1), (SOUGHT, 9), ("untraced", -1)))
    result = reverse_search(scanning_probe(partition), 100, 104, 103, where="w")
    assert (result.upstream_offset, result.exact, result.matched_target_offset) == (10, False, 102)
    assert reverse_search(scanning_probe(partition), 100, 104, 101, where="w").upstream_offset == 9
