"""MM2's replicated position from Connect offsets and syncs, and the per-group data-loss split."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from offsetlake.mirror.progress import (
    INT64_MAX,
    DataLoss,
    PositionObservation,
    ReplicationStatus,
    data_loss,
    next_after,
    replicated_position,
)

T0 = datetime(2026, 11, 21, 9, 0, tzinfo=UTC)


def _at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


def _connect(seconds: int, offset: int | None, order: int = 0) -> PositionObservation:
    return PositionObservation("connect_offset", _at(seconds), order, offset)


def _sync(seconds: int, offset: int, order: int = 0) -> PositionObservation:
    return PositionObservation("offset_sync", _at(seconds), order, offset)


def test_connect_offset_is_the_last_replicated_record_so_the_next_offset_is_one_more() -> None:
    position = replicated_position([_connect(10, 41)], _at(20))
    assert (position.status, position.next_offset, position.method) == (
        ReplicationStatus.REPLICATING,
        42,
        "connect_offset",
    )
    assert position.last_progress_at == _at(10)


def test_a_fresher_sync_raises_the_position_an_older_one_does_not() -> None:
    observations = [_sync(5, 30), _connect(10, 41), _sync(15, 50)]
    position = replicated_position(observations, _at(20))
    assert (position.next_offset, position.method, position.last_progress_at) == (51, "offset_sync", _at(15))
    assert replicated_position(observations, _at(12)).next_offset == 42  # as of 12 s the sync is unknown


def test_a_reset_is_shown_as_such_until_a_sync_after_it() -> None:
    observations = [_connect(10, 41), _sync(12, 41), _connect(20, None)]
    assert replicated_position(observations, _at(25)).status == ReplicationStatus.RESET
    assert replicated_position(observations, _at(25)).next_offset is None
    restarted = replicated_position([*observations, _sync(30, 3)], _at(35))
    assert (restarted.status, restarted.next_offset, restarted.last_progress_at) == (
        ReplicationStatus.REPLICATING,
        4,
        _at(30),
    )


def test_nothing_observed_is_never_replicated_not_zero_lag() -> None:
    position = replicated_position([_connect(30, 5)], _at(20))
    assert (position.status, position.next_offset) == (ReplicationStatus.NEVER_REPLICATED, None)


def test_no_progress_keeps_the_time_the_position_was_first_reached() -> None:
    observations = [_connect(10, 41), _connect(20, 41, order=1), _sync(25, 30)]
    assert replicated_position(observations, _at(30)).last_progress_at == _at(10)


def test_data_loss_splits_at_the_committed_offset() -> None:
    assert data_loss(committed_offset=70, next_replicated=50, log_end=100) == DataLoss(20, 30)
    assert data_loss(committed_offset=40, next_replicated=50, log_end=100) == DataLoss(0, 50)
    assert data_loss(committed_offset=120, next_replicated=50, log_end=100) == DataLoss(50, 0)
    assert data_loss(committed_offset=100, next_replicated=100, log_end=100) == DataLoss(0, 0)


@given(
    committed=st.integers(0, 10_000),
    next_replicated=st.integers(0, 10_000),
    extra=st.integers(0, 10_000),
)
def test_data_loss_adds_up_to_the_unreplicated_records(
    committed: int, next_replicated: int, extra: int
) -> None:
    log_end = next_replicated + extra
    loss = data_loss(committed, next_replicated, log_end)
    assert loss.consumed_not_replicated >= 0 and loss.unconsumed_lost >= 0
    assert loss.consumed_not_replicated + loss.unconsumed_lost == log_end - next_replicated
    if committed <= next_replicated:
        assert loss.consumed_not_replicated == 0
    if committed >= log_end:
        assert loss.unconsumed_lost == 0


@given(
    st.lists(
        st.tuples(st.integers(0, 100), st.booleans(), st.one_of(st.none(), st.integers(0, 1000))),
        max_size=12,
    ),
    st.integers(0, 100),
)
def test_position_only_uses_what_was_known_and_never_goes_below_the_newest_connect_offset(
    events: list[tuple[int, bool, int | None]], as_of: int
) -> None:
    observations = [
        _connect(t, offset, order=i) if is_connect else _sync(t, offset or 0, order=i)
        for i, (t, is_connect, offset) in enumerate(events)
    ]
    position = replicated_position(observations, _at(as_of))
    known_connect = [o for o in observations if o.kind == "connect_offset" and o.observed_at <= _at(as_of)]
    if position.status == ReplicationStatus.REPLICATING:
        assert position.last_progress_at is not None and position.last_progress_at <= _at(as_of)
        newest = max(known_connect, key=lambda o: (o.observed_at, o.order), default=None)
        if newest is not None and newest.upstream_offset is not None:
            assert position.next_offset is not None and position.next_offset >= newest.upstream_offset + 1
    elif position.status == ReplicationStatus.NEVER_REPLICATED:
        assert not known_connect and not [o for o in observations if o.observed_at <= _at(as_of)]


def test_the_next_offset_saturates_at_the_largest_kafka_offset() -> None:
    assert next_after(41) == 42
    assert next_after(INT64_MAX - 1) == INT64_MAX
    assert next_after(INT64_MAX) == INT64_MAX  # never beyond what an INT64 column can hold
