"""The failover's K2K search merged into gold (apply/k2k_search.py): the pipeline's rules, pure."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from offsetlake.apply.k2k_search import METHOD, merge_searched
from offsetlake.apply.planner import GoldOffset
from offsetlake.apply.tail_merge import tail_replaces
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


def test_a_fresher_checkpoint_keeps_its_place_and_precedence_decides_a_tie() -> None:
    fresher = gold("a", 120, 110, "checkpoint", observed=SNAPSHOT + timedelta(minutes=1))
    tie = gold("b", 100, 95, "offset_sync")
    result = merge_searched([fresher, tie], [lookup("a", 100, 104), lookup("b", 100, 99)], METHODS)
    assert only(result.offsets, "a") == fresher, "the freshest upstream offset wins first"
    assert only(result.offsets, "b").method == METHOD, "same upstream: K2K's headers before offset syncs"
    assert result.replaced == 1


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
