"""The failover's K2K search merged into gold (apply/k2k_search.py): the pipeline's rules, pure."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from offsetlake.apply.k2k_search import METHOD, CutShort, merge_searched
from offsetlake.apply.tail_merge import tail_replaces
from offsetlake.contract.gold import GoldOffset
from offsetlake.k2k.tracing import TracingTranslation
from offsetlake.kafka.group_offsets import GroupOffset
from offsetlake.kafka.tracing_reader import TracingLookup, TracingRequest, TracingResult
from offsetlake.mirror.precedence import METHODS

SNAPSHOT = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
TARGET = "east.orders"


def lookup(
    group: str, upstream: int, downstream: int | None, reason: str | None = None
) -> tuple[str, TracingLookup]:
    snapshot = GroupOffset(group, "EMPTY", "orders", 0, upstream, "m", SNAPSHOT)
    request = TracingRequest(TARGET, 0, "orders", 0, upstream)
    translation = TracingTranslation(downstream, reason=reason)
    return "east", TracingLookup(snapshot, request, TracingResult(request, translation, 0.01))


def gold(
    group: str, upstream: int, downstream: int, method: str, observed: datetime = SNAPSHOT
) -> GoldOffset:
    return GoldOffset(
        source_cluster="east",
        consumer_group=group,
        topic=TARGET,
        partition=0,
        downstream_offset=downstream,
        source_timestamp=observed - timedelta(hours=1),
        method=method,
        observed_at=observed,
        upstream_offset=upstream,
    )


def only(offsets: tuple[GoldOffset, ...], group: str) -> GoldOffset:
    (found,) = [offset for offset in offsets if offset.consumer_group == group]
    return found


def test_a_search_that_now_finds_more_replicated_records_replaces_the_pipelines_answer() -> None:
    # At the refresh, U=100 was past the last replicated record (its next offset: 91); now exact.
    result = merge_searched([gold("a", 100, 91, METHOD)], [lookup("a", 100, 104)], METHODS)
    now = only(result.offsets, "a")
    assert (now.downstream_offset, now.method, now.from_tail) == (104, METHOD, True)
    assert now.observed_at == SNAPSHOT, "observed at the snapshot's time, as the pipeline records it"
    assert (result.searched, result.replaced, result.unanswered) == (1, 1, ())


def test_the_same_answer_as_the_pipeline_changes_nothing() -> None:
    row = gold("a", 100, 104, METHOD)
    result = merge_searched([row], [lookup("a", 100, 104)], METHODS)
    assert result.offsets == (row,) and result.replaced == 0


def test_a_fresher_offset_sync_keeps_its_place_and_precedence_decides_a_tie() -> None:
    fresher = gold("a", 120, 110, "offset_sync", observed=SNAPSHOT + timedelta(minutes=1))
    tie = gold("b", 100, 95, "offset_sync")
    result = merge_searched([fresher, tie], [lookup("a", 100, 104), lookup("b", 100, 99)], METHODS)
    assert only(result.offsets, "a") == fresher, "the freshest upstream offset wins first"
    assert only(result.offsets, "b").method == METHOD, "same upstream: K2K's headers before offset syncs"
    assert result.replaced == 1


def test_a_search_of_a_stale_snapshot_never_replaces_a_fresher_row_of_its_method() -> None:
    """Issue 46's reproduction: the source group reset from 73 to 43; gold's lookup of the newer
    snapshot says 37, while latest_group_offsets (not refreshed) still held the older snapshot at 73,
    which the search translates to 66 (29 records skipped)."""
    fresher = gold("a", 43, 37, METHOD, observed=SNAPSHOT + timedelta(minutes=1))
    result = merge_searched([fresher], [lookup("a", 73, 66)], METHODS)
    assert only(result.offsets, "a") == fresher
    assert (result.replaced, result.older) == (0, 1)
    # The same position from a snapshot taken a minute before the lookup's own (the two flows'
    # snapshots differ): the same input, searched on a target holding more, replaces gold's answer.
    past_the_end = gold("a", 73, 60, METHOD, observed=SNAPSHOT + timedelta(minutes=1))
    exact = only(merge_searched([past_the_end], [lookup("a", 73, 66)], METHODS).offsets, "a")
    assert (exact.downstream_offset, exact.observed_at) == (66, SNAPSHOT + timedelta(minutes=1))
    # The same snapshot searched again (equal times) is at least as new: its answer replaces gold's.
    same_time = gold("a", 73, 60, METHOD)
    assert (
        only(merge_searched([same_time], [lookup("a", 73, 66)], METHODS).offsets, "a").downstream_offset == 66
    )


def test_a_checkpoint_stamped_by_a_clock_ahead_of_ours_does_not_win_by_its_stamp() -> None:
    """MM2's worker clock is an hour ahead: its checkpoint of the group's old position (140) looks
    fresher than the snapshot taken after the source reset (20 -> 15). No clock orders the two, so
    the lower translation wins (a re-read, never a skip); the same upstream offset: the method order."""
    ahead = gold("a", 140, 140, "checkpoint", observed=SNAPSHOT + timedelta(hours=1))
    result = merge_searched([ahead], [lookup("a", 20, 15)], METHODS)
    assert only(result.offsets, "a").downstream_offset == 15
    behind = gold("a", 20, 15, "checkpoint", observed=SNAPSHOT - timedelta(hours=1))
    assert only(merge_searched([behind], [lookup("a", 140, 140)], METHODS).offsets, "a") == behind
    same_upstream = gold("a", 20, 16, "checkpoint", observed=SNAPSHOT + timedelta(hours=1))
    assert only(merge_searched([same_upstream], [lookup("a", 20, 15)], METHODS).offsets, "a").method == METHOD


def test_a_group_gold_never_translated_is_added_and_a_reason_leaves_gold_alone() -> None:
    kept = gold("b", 7, 5, "offset_sync")
    result = merge_searched(
        [kept], [lookup("a", 3, 2), lookup("b", 7, None, reason="the partition starts after U")], METHODS
    )
    assert only(result.offsets, "a").downstream_offset == 2
    assert only(result.offsets, "b") == kept
    assert result.unanswered == ("orders[0] in east.orders[0]: the partition starts after U",)


def test_replaces_follows_the_configured_precedence() -> None:
    searched = gold("a", 100, 104, METHOD)
    sync = gold("a", 100, 95, "offset_sync")
    assert tail_replaces(searched, sync, METHODS)
    assert not tail_replaces(searched, sync, ("offset_sync", METHOD, "mapping", "checkpoint"))


def test_searches_cut_short_are_counted_by_what_stood_in() -> None:
    """A bound stopped four searches: one answered safely (used), one without an answer where gold
    has the row, one with no gold row (no translation), one whose safe answer lost to fresher gold."""
    limit = "time limit reached: safe, but may re-read more than needed"
    cut = [
        ("east", replace_translation(lookup("a", 100, 101, reason=limit)[1], cut_short=True)),
        ("east", replace_translation(lookup("b", 50, None, reason="time limit reached")[1], cut_short=True)),
        ("east", replace_translation(lookup("c", 9, None, reason="budget ran out")[1], cut_short=True)),
        ("east", replace_translation(lookup("d", 5, 4, reason=limit)[1], cut_short=True)),
        lookup("e", 3, 3),
    ]
    fresher_d = gold("d", 7, 7, METHOD, observed=SNAPSHOT + timedelta(minutes=1))
    result = merge_searched([gold("b", 40, 38, "offset_sync"), fresher_d], cut, METHODS)
    assert result.cut_short == CutShort(searched=1, gold=2, none=1)
    assert result.cut_short.total == 4
    assert only(result.offsets, "b").downstream_offset == 38 and only(result.offsets, "d") == fresher_d
    assert not [offset for offset in result.offsets if offset.consumer_group == "c"]


def replace_translation(found: TracingLookup, **changes: object) -> TracingLookup:
    result = found.result
    return replace(found, result=replace(result, translation=replace(result.translation, **changes)))


searched_rows = st.lists(
    st.tuples(
        st.sampled_from("ab"),  # group
        st.integers(0, 3),  # upstream
        st.integers(0, 3),  # downstream
        st.integers(-3, 3),  # snapshot minute
        st.booleans(),  # gold's row (True) or a search (False)
        st.sampled_from((METHOD, METHOD, "offset_sync")),
    ),
    max_size=10,
)


@given(searched_rows)
def test_the_merged_row_of_a_key_is_never_older_than_another_candidates_input(
    rows: list[tuple[str, int, int, int, bool, str]],
) -> None:
    """Whatever gold holds and the searches say, in any order (every method here on offsetlake's
    clock): per key, the merged row translates the upstream offset of the newest input, and is
    observed when that input was."""
    golds: dict[str, GoldOffset] = {}
    lookups: list[tuple[str, TracingLookup]] = []
    for group, upstream, downstream, minute, is_gold, method in rows:
        at = SNAPSHOT + timedelta(minutes=minute)
        if is_gold:
            golds[group] = gold(group, upstream, downstream, method, observed=at)
        else:
            alias, found = lookup(group, upstream, downstream)
            lookups.append((alias, replace(found, snapshot=replace(found.snapshot, snapshot_time=at))))
    merged = merge_searched(list(golds.values()), lookups, METHODS)
    for row in merged.offsets:
        inputs = [
            (found.snapshot.snapshot_time, found.request.upstream_offset)
            for _, found in lookups
            if found.snapshot.consumer_group == row.consumer_group
        ]
        original = golds.get(row.consumer_group)
        if original is not None and original.observed_at is not None:
            inputs.append((original.observed_at, original.upstream_offset))
        newest = max(at for at, _ in inputs)
        assert row.observed_at == newest, (row, inputs)
        assert row.upstream_offset in {upstream for at, upstream in inputs if at == newest}, (row, inputs)
