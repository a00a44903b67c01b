"""The ground truth says which record a resumed group owes and whether a consumer skipped any, and
what failing over would cost each group."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offsetlake.mirror.progress import ReplicationStatus
from offsetlake_dev.simulate.data_loss_truth import ExpectedLoss, SourcePartition, expected_data_loss
from offsetlake_dev.simulate.ground_truth import GroundTruth, ReplicatedRecord, record_id


def _truth(source_offsets: list[int], first_target_offset: int = 5) -> GroundTruth:
    truth = GroundTruth()
    for index, offset in enumerate(source_offsets):
        truth.add(
            ReplicatedRecord(
                record_id("orders", 0, index),
                "orders",
                0,
                offset,
                "us-east.orders",
                0,
                first_target_offset + index,
            )
        )
    return truth


def test_record_ids_name_topic_partition_and_sequence() -> None:
    assert record_id("orders", 2, 42) == "orders:p2:r42"


def test_first_unprocessed_skips_upstream_gaps() -> None:
    truth = _truth([0, 1, 2, 4, 5, 9])  # 3 and 6-8: commit markers or filtered records
    owed = truth.first_unprocessed("orders", 0, 3)
    assert owed is not None
    assert (owed.source_offset, owed.target_offset) == (4, 8)
    assert truth.first_unprocessed("orders", 0, 6) == truth.get("orders:p0:r5")
    assert truth.first_unprocessed("orders", 0, 10) is None
    assert truth.first_unprocessed("payments", 0, 0) is None


def test_resume_before_the_owed_record_is_ok_and_counts_re_reads() -> None:
    truth = _truth([0, 1, 2, 4, 5, 9])
    values = [
        "preexisting:us-east.orders:p0:n4",
        "orders:p0:r0",
        "orders:p0:r1",
        "orders:p0:r2",
        "orders:p0:r3",
    ]
    values += ["orders:p0:r4", "orders:p0:r5"]
    assessment = truth.assess_resume("orders", 0, 4, resumed_at=4, values_read=values)
    assert assessment.ok
    assert assessment.re_reads == 3
    assert assessment.records_read == 7
    assert assessment.first_unprocessed == truth.get("orders:p0:r3")


def test_resume_after_the_owed_record_reports_what_was_skipped() -> None:
    truth = _truth([0, 1, 2, 4, 5, 9])
    assessment = truth.assess_resume(
        "orders", 0, 2, resumed_at=9, values_read=["orders:p0:r4", "orders:p0:r5"]
    )
    assert not assessment.ok
    assert assessment.skipped == ("orders:p0:r2", "orders:p0:r3")


def test_caught_up_group_owes_nothing() -> None:
    assessment = _truth([0, 1]).assess_resume("orders", 0, 2, resumed_at=7, values_read=[])
    assert assessment.ok
    assert assessment.first_unprocessed is None


def test_replication_must_keep_order_and_ids_must_be_unique() -> None:
    truth = _truth([0, 1])
    with pytest.raises(ValueError, match="already replicated"):
        truth.add(ReplicatedRecord("orders:p0:r1", "orders", 0, 7, "us-east.orders", 0, 70))
    with pytest.raises(ValueError, match="keeps order"):
        truth.add(ReplicatedRecord("orders:p0:r9", "orders", 0, 1, "us-east.orders", 0, 70))
    with pytest.raises(ValueError, match="committed_upstream_offset"):
        truth.assess_resume("orders", 0, -1, resumed_at=0, values_read=[])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(1, 4), min_size=1, max_size=60).map(
        lambda steps: [sum(steps[: i + 1]) for i in range(len(steps))]
    ),
    st.integers(0, 300),
    st.integers(-3, 3),
)
def test_reading_from_the_owed_records_target_offset_or_earlier_never_skips(
    source_offsets: list[int], committed: int, shift: int
) -> None:
    truth = _truth(source_offsets, first_target_offset=0)
    records = truth.records("orders", 0)
    owed = truth.first_unprocessed("orders", 0, committed)
    exact = owed.target_offset if owed is not None else len(records)
    resumed_at = max(0, exact + shift)
    values = [record.record_id for record in records[resumed_at:]]
    assessment = truth.assess_resume("orders", 0, committed, resumed_at, values)
    assert assessment.ok == (resumed_at <= exact or owed is None)
    assert assessment.re_reads == max(0, exact - resumed_at)


def _replicating(replicated_next: int, log_end: int, log_start: int = 0) -> SourcePartition:
    return SourcePartition(log_start, log_end, ReplicationStatus.REPLICATING, replicated_next)


def test_unreplicated_records_split_at_the_committed_offset() -> None:
    orders = {("orders", 0): _replicating(replicated_next=23, log_end=34)}
    loss = expected_data_loss(orders, {"behind": {("orders", 0): 5}, "ahead": {("orders", 0): 26}})
    # offsets 23..33 are not on the target: all unconsumed for "behind", 23..25 consumed by "ahead"
    assert loss[("behind", "orders", 0)] == ExpectedLoss(ReplicationStatus.REPLICATING, 23, 0, 11)
    assert loss[("ahead", "orders", 0)] == ExpectedLoss(ReplicationStatus.REPLICATING, 23, 3, 8)


def test_committed_past_the_log_end_consumed_the_whole_log() -> None:
    loss = expected_data_loss({("orders", 0): _replicating(23, 34)}, {"g": {("orders", 0): 40}})
    assert loss[("g", "orders", 0)] == ExpectedLoss(ReplicationStatus.REPLICATING, 23, 11, 0)


def test_caught_up_replication_loses_nothing() -> None:
    loss = expected_data_loss({("orders", 0): _replicating(34, 34)}, {"g": {("orders", 0): 34}})
    assert loss[("g", "orders", 0)] == ExpectedLoss(ReplicationStatus.REPLICATING, 34, 0, 0)


def test_a_reset_makes_every_figure_unknown_not_zero() -> None:
    reset = SourcePartition(0, 34, ReplicationStatus.RESET)
    loss = expected_data_loss({("orders", 1): reset}, {"g": {("orders", 1): 12}})
    assert loss[("g", "orders", 1)] == ExpectedLoss(ReplicationStatus.RESET, None, None, None)


def test_a_partition_never_replicated_misses_everything_from_its_log_start() -> None:
    audit = SourcePartition(4, 10, ReplicationStatus.NEVER_REPLICATED)
    loss = expected_data_loss(
        {("audit-log", 0): audit}, {"g": {("audit-log", 0): 7}, "new": {("audit-log", 0): 0}}
    )
    assert loss[("g", "audit-log", 0)] == ExpectedLoss(ReplicationStatus.NEVER_REPLICATED, 4, 3, 3)
    assert loss[("new", "audit-log", 0)] == ExpectedLoss(ReplicationStatus.NEVER_REPLICATED, 4, 0, 6)


def test_partitions_must_be_described_and_consistent() -> None:
    with pytest.raises(KeyError, match="does not describe"):
        expected_data_loss({}, {"g": {("orders", 0): 1}})
    with pytest.raises(ValueError, match="replicated_next"):
        SourcePartition(0, 5, ReplicationStatus.RESET, 3)
    with pytest.raises(ValueError, match="replicated_next"):
        SourcePartition(0, 5, ReplicationStatus.REPLICATING)
    with pytest.raises(ValueError, match="log_start <= log_end"):
        SourcePartition(6, 5, ReplicationStatus.NEVER_REPLICATED)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 50), st.integers(0, 50), st.integers(0, 60), st.integers(0, 60))
def test_missing_offsets_are_either_consumed_or_lost_and_more_commits_move_them_across(
    replicated_next: int, unreplicated: int, committed: int, more: int
) -> None:
    log_end = replicated_next + unreplicated
    partitions = {("t", 0): _replicating(replicated_next, log_end)}
    loss = expected_data_loss(partitions, {"a": {("t", 0): committed}, "b": {("t", 0): committed + more}})
    now, later = loss[("a", "t", 0)], loss[("b", "t", 0)]
    assert now.consumed_not_replicated is not None and now.unconsumed_lost is not None
    assert later.consumed_not_replicated is not None and later.unconsumed_lost is not None
    assert now.consumed_not_replicated + now.unconsumed_lost == unreplicated
    assert later.consumed_not_replicated + later.unconsumed_lost == unreplicated
    # committing `more` offsets further consumes at most `more` of the missing ones
    assert 0 <= later.consumed_not_replicated - now.consumed_not_replicated <= more
    if committed <= replicated_next:
        assert now.consumed_not_replicated == 0
    if committed >= log_end:
        assert now.unconsumed_lost == 0
