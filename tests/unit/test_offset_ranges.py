"""Planning of Kafka reads: subscriptions, offsets options, data loss, rate limits, splitting."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsetlake.kafka.offset_ranges import (
    EARLIEST,
    LATEST,
    DataLossError,
    OffsetOptionError,
    OffsetRange,
    OffsetsSpec,
    Subscription,
    cap_offsets,
    effective_start,
    from_stream_offset,
    next_stream_end,
    plan_batch_ranges,
    plan_stream_ranges,
    split_ranges,
    to_stream_offset,
)

COUNTS = {"orders": 2, "orders-eu": 1, "payments": 1, "__consumer_offsets": 50}


def test_subscribe_selects_existing_topics_and_ignores_missing_ones() -> None:
    subscription = Subscription.from_options({"subscribe": "orders, missing"})
    assert subscription.select(COUNTS) == [("orders", 0), ("orders", 1)]


def test_subscribe_pattern_is_a_full_match_and_skips_internal_topics() -> None:
    assert Subscription.from_options({"subscribePattern": "orders.*"}).select(COUNTS) == [
        ("orders", 0),
        ("orders", 1),
        ("orders-eu", 0),
    ]
    assert Subscription.from_options({"subscribePattern": "order"}).select(COUNTS) == []
    assert Subscription.from_options({"subscribePattern": ".*"}).select(COUNTS)[-1] == ("payments", 0)


def test_assign_selects_exactly_the_named_partitions_and_rejects_missing_ones() -> None:
    assert Subscription.from_options({"assign": '{"orders": [1], "payments": [0]}'}).select(COUNTS) == [
        ("orders", 1),
        ("payments", 0),
    ]
    with pytest.raises(OffsetOptionError, match="orders-2"):
        Subscription.from_options({"assign": '{"orders": [2]}'}).select(COUNTS)


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"subscribe": "a", "subscribePattern": "b"},
        {"subscribe": " , "},
        {"subscribePattern": "("},
        {"assign": "[1]"},
        {"assign": '{"a": ["x"]}'},
    ],
)
def test_bad_subscriptions_are_rejected(options: dict[str, str]) -> None:
    with pytest.raises(OffsetOptionError):
        Subscription.from_options(options).select(COUNTS)


def test_offsets_spec_keywords_and_json() -> None:
    assert OffsetsSpec.parse(None, option="startingOffsets", default=LATEST).default == LATEST
    assert OffsetsSpec.parse("Earliest", option="startingOffsets", default=LATEST).default == EARLIEST
    spec = OffsetsSpec.parse('{"orders": {"0": 23, "1": -2}}', option="startingOffsets", default=EARLIEST)
    assert spec.specific == {("orders", 0): 23, ("orders", 1): EARLIEST}
    resolved = spec.resolve(
        [("orders", 0), ("orders", 1), ("payments", 0)],
        {("orders", 0): 5, ("orders", 1): 7, ("payments", 0): 0},
        {("orders", 0): 50, ("orders", 1): 70, ("payments", 0): 9},
        option="startingOffsets",
    )
    assert resolved == {("orders", 0): 23, ("orders", 1): 7, ("payments", 0): 0}


@pytest.mark.parametrize("text", ["nope", '{"orders": {"0": -3}}', '{"orders": [1]}', '{"orders": {"x": 1}}'])
def test_bad_offsets_specs_are_rejected(text: str) -> None:
    with pytest.raises(OffsetOptionError, match="startingOffsets"):
        OffsetsSpec.parse(text, option="startingOffsets", default=EARLIEST)


def test_offsets_for_unsubscribed_partitions_are_rejected() -> None:
    spec = OffsetsSpec.parse('{"orderz": {"0": 1}}', option="startingOffsets", default=EARLIEST)
    with pytest.raises(OffsetOptionError, match="orderz-0"):
        spec.resolve([("orders", 0)], {("orders", 0): 0}, {("orders", 0): 1}, option="startingOffsets")


def test_start_below_log_start_is_data_loss() -> None:
    key = ("orders", 0)
    with pytest.raises(DataLossError, match=r"orders-0: offsets 3\.\.9 were deleted"):
        effective_start(key, 3, 10, 20, fail_on_data_loss=True)
    assert effective_start(key, 3, 10, 20, fail_on_data_loss=False) == 10
    assert effective_start(key, 10, 10, 20, fail_on_data_loss=True) == 10


def test_end_below_start_means_truncation_and_restarts_at_log_start() -> None:
    key = ("orders", 0)
    with pytest.raises(DataLossError, match="went back from 30 to 20"):
        effective_start(key, 30, 0, 20, fail_on_data_loss=True)
    assert effective_start(key, 30, 0, 20, fail_on_data_loss=False) == 0


def test_batch_plan_resolves_options_and_checks_them() -> None:
    keys = [("orders", 0), ("orders", 1)]
    log_start = {("orders", 0): 0, ("orders", 1): 4}
    log_end = {("orders", 0): 10, ("orders", 1): 8}
    starting = OffsetsSpec.parse('{"orders": {"0": 2}}', option="startingOffsets", default=EARLIEST)
    ending = OffsetsSpec.parse('{"orders": {"0": 6, "1": -1}}', option="endingOffsets", default=LATEST)
    assert plan_batch_ranges(keys, log_start, log_end, starting, ending, fail_on_data_loss=True) == [
        OffsetRange("orders", 0, 2, 6),
        OffsetRange("orders", 1, 4, 8),
    ]
    for bad_ending, message in [
        ("earliest", "cannot be earliest"),
        ('{"orders": {"0": 11}}', "past the log end"),
        ('{"orders": {"0": 1}}', "after endingOffsets"),
    ]:
        with pytest.raises(OffsetOptionError, match=message):
            plan_batch_ranges(
                keys,
                log_start,
                log_end,
                starting,
                OffsetsSpec.parse(bad_ending, option="endingOffsets", default=LATEST),
                fail_on_data_loss=True,
            )


def test_stream_end_reads_new_partitions_from_log_start_and_respects_the_available_now_target() -> None:
    start = {("orders", 0): 5}
    log_start = {("orders", 0): 0, ("orders", 1): 3}
    log_end = {("orders", 0): 9, ("orders", 1): 7}
    assert next_stream_end(start, log_start, log_end, fail_on_data_loss=True) == log_end
    target = {("orders", 0): 8}
    assert next_stream_end(start, log_start, log_end, fail_on_data_loss=True, target=target) == {
        ("orders", 0): 8
    }
    capped = next_stream_end(start, log_start, log_end, fail_on_data_loss=True, max_offsets=4)
    assert capped == {("orders", 0): 7, ("orders", 1): 5}
    assert plan_stream_ranges(start, capped, log_start, fail_on_data_loss=True) == [
        OffsetRange("orders", 0, 5, 7),
        OffsetRange("orders", 1, 3, 5),
    ]


def test_vanished_partition_is_data_loss() -> None:
    start = {("gone", 0): 5, ("orders", 0): 1}
    with pytest.raises(DataLossError, match="disappeared: gone-0"):
        next_stream_end(start, {("orders", 0): 0}, {("orders", 0): 2}, fail_on_data_loss=True)
    assert next_stream_end(start, {("orders", 0): 0}, {("orders", 0): 2}, fail_on_data_loss=False) == {
        ("orders", 0): 2
    }


def test_stream_offset_json_round_trip() -> None:
    offsets = {("orders", 1): 7, ("orders", 0): 3, ("payments", 0): 0}
    nested = to_stream_offset(offsets)
    assert nested == {"orders": {"0": 3, "1": 7}, "payments": {"0": 0}}
    assert from_stream_offset(nested) == offsets


ranges_strategy = st.lists(
    st.builds(
        OffsetRange,
        topic=st.sampled_from(["a", "b"]),
        partition=st.integers(0, 3),
        start=st.integers(0, 10_000),
        end=st.integers(0, 10_000),
    ),
    max_size=6,
)


@given(ranges=ranges_strategy, max_records=st.integers(1, 3_000))
def test_split_covers_each_nonempty_range_exactly_with_bounded_pieces(
    ranges: list[OffsetRange], max_records: int
) -> None:
    pieces = split_ranges(ranges, max_records)
    assert all(0 < piece.size <= max_records for piece in pieces)

    def starts_minus_ends(some: list[OffsetRange]) -> dict[tuple[str, int, int], int]:
        """Per partition and offset: how many nonempty ranges start there minus how many end there.

        Two lists with the same map hold every offset of every partition equally often, so a gap,
        an overlap, a piece too many or an offset outside the ranges each changes the map.
        """
        net: dict[tuple[str, int, int], int] = {}
        for r in some:
            if r.size > 0:
                net[(r.topic, r.partition, r.start)] = net.get((r.topic, r.partition, r.start), 0) + 1
                net[(r.topic, r.partition, r.end)] = net.get((r.topic, r.partition, r.end), 0) - 1
        return {key: count for key, count in net.items() if count}

    # Exactly the offsets of the nonempty ranges (each as often as the ranges hold it: two ranges
    # of one partition may overlap), in no more pieces than the bound needs.
    assert starts_minus_ends(pieces) == starts_minus_ends(ranges)
    assert len(pieces) == sum(-(-r.size // max_records) for r in ranges if r.size > 0)


@given(
    sizes=st.dictionaries(
        st.tuples(st.sampled_from("xyz"), st.integers(0, 2)), st.integers(0, 5_000), max_size=6
    ),
    max_offsets=st.integers(1, 8_000),
)
def test_cap_moves_exactly_min_of_limit_and_backlog_and_never_past_the_end(
    sizes: dict[tuple[str, int], int], max_offsets: int
) -> None:
    start = {key: 100 for key in sizes}
    end = {key: 100 + size for key, size in sizes.items()}
    capped = cap_offsets(start, end, max_offsets)
    assert set(capped) == set(end)
    assert all(start[key] <= capped[key] <= end[key] for key in end)
    assert sum(capped[key] - start[key] for key in end) == min(max_offsets, sum(sizes.values()))
