"""gold_rows.next_offsets: the one "highest offset + 1 per Kafka partition" rule both gold stores
read their high-water marks with (bronze_checkpoints', silver_offset_syncs')."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from offsetlake.apply.gold_rows import CHECKPOINT_COORDINATES, SYNC_COORDINATES, next_offsets

SYNCS = pa.schema(
    [("kafka_topic", pa.string()), ("kafka_partition", pa.int32()), ("kafka_offset", pa.int64())]
)

Row = tuple[str | None, int | None, int | None]


def syncs(rows: list[Row]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(SYNCS.names, row, strict=True)) for row in rows], schema=SYNCS)


def test_each_partition_resumes_after_its_highest_offset_and_a_null_coordinate_is_no_position() -> None:
    rows: list[Row] = [
        ("mm2-offset-syncs.east.internal", 0, 3),
        ("mm2-offset-syncs.east.internal", 0, 41),
        ("mm2-offset-syncs.east.internal", 0, 7),
        ("mm2-offset-syncs.east.internal", 1, 0),
        ("mm2-offset-syncs.east.internal", 2, None),
        ("mm2-offset-syncs.west.internal", 0, 9),
        ("mm2-offset-syncs.west.internal", None, 99),
        (None, 0, 99),
    ]

    assert next_offsets(syncs(rows), SYNC_COORDINATES) == {
        ("mm2-offset-syncs.east.internal", 0): 42,
        ("mm2-offset-syncs.east.internal", 1): 1,
        ("mm2-offset-syncs.west.internal", 0): 10,
    }


def test_no_rows_is_no_position() -> None:
    assert next_offsets(syncs([]), SYNC_COORDINATES) == {}


def test_other_columns_are_ignored_and_the_coordinates_are_named() -> None:
    bronze = pa.table(
        {
            "key": pa.array([None, None], pa.binary()),
            "topic": ["east.checkpoints.internal", "east.checkpoints.internal"],
            "partition": pa.array([0, 0], pa.int32()),
            "offset": pa.array([5, 2], pa.int64()),
        }
    )

    assert next_offsets(bronze, CHECKPOINT_COORDINATES) == {("east.checkpoints.internal", 0): 6}


rows_strategy = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", None]),
        st.one_of(st.none(), st.integers(0, 3)),
        st.one_of(st.none(), st.integers(0, 2**62)),
    ),
    max_size=40,
)


@given(rows_strategy)
def test_the_rule_is_max_plus_one_over_complete_rows_and_grouping_first_changes_nothing(
    rows: list[Row],
) -> None:
    expected: dict[tuple[str, int], int] = {}
    for topic, partition, offset in rows:
        if topic is not None and partition is not None and offset is not None:
            expected[(topic, partition)] = max(expected.get((topic, partition), -1), offset + 1)

    assert next_offsets(syncs(rows), SYNC_COORDINATES) == expected
    # The Spark store hands over one row a partition (its max, NULL when every offset is NULL).
    grouped: dict[tuple[str | None, int | None], int | None] = {}
    for topic, partition, offset in rows:
        highest = grouped.setdefault((topic, partition), None)
        if offset is not None:
            grouped[(topic, partition)] = offset if highest is None else max(highest, offset)
    pre_grouped = [(topic, partition, offset) for (topic, partition), offset in grouped.items()]
    assert next_offsets(syncs(pre_grouped), SYNC_COORDINATES) == expected
