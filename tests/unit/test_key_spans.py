"""Spans of equal keys (apply/key_spans.py), the one Arrow grouping of the planner's columns, gold's
choice among a key's rows and the local store's newest row per key: held to Python's own grouping."""

from __future__ import annotations

import itertools

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from offsetlake.apply.key_spans import key_spans, last_per_key

ROWS = st.lists(
    st.tuples(
        st.none() | st.sampled_from(["a", "b", "é"]),
        st.none() | st.integers(0, 2),
        st.integers(0, 3),
        st.none() | st.integers(0, 9),
    ),
    max_size=30,
)


def table(rows: list[tuple[str | None, int | None, int, int | None]]) -> pa.Table:
    names = ["group", "partition", "at", "value"]
    return pa.table(
        {name: list(column) for name, column in zip(names, zip(*rows, strict=True), strict=True)}
        if rows
        else {name: [] for name in names},
        schema=pa.schema(
            [("group", pa.string()), ("partition", pa.int64()), ("at", pa.int64()), ("value", pa.int64())]
        ),
    )


def sort_key(row: tuple[str | None, int | None, int, int | None]) -> tuple[object, ...]:
    """Arrow's order: NULLs after every value."""
    group, partition, at, _ = row
    return (group is None, group or "", partition is None, partition or 0, at)


@given(ROWS)
def test_spans_are_the_runs_of_equal_keys(rows: list[tuple[str | None, int | None, int, int | None]]) -> None:
    rows = sorted(rows, key=sort_key)
    starts, sizes = key_spans(table(rows), ["group", "partition"])
    expected = [len(list(run)) for _, run in itertools.groupby(rows, key=lambda row: row[:2])]
    assert sizes.to_pylist() == expected
    assert starts.to_pylist() == list(itertools.accumulate([0, *expected[:-1]]))[: len(expected)]
    assert starts.type == sizes.type == pa.int64()


@given(ROWS)
def test_the_last_row_per_key_is_spark_max_by(
    rows: list[tuple[str | None, int | None, int, int | None]],
) -> None:
    """Per key, the row of the greatest ordering, its NULL value included; of tied rows, the last."""
    newest: dict[tuple[str | None, int | None], tuple[str | None, int | None, int, int | None]] = {}
    for row in rows:
        if row[:2] not in newest or row[2] >= newest[row[:2]][2]:
            newest[row[:2]] = row
    got = last_per_key(table(rows), ["group", "partition"], "at", ["value"])
    assert got.column_names == ["group", "partition", "value", "at"]
    assert sorted(got.to_pylist(), key=lambda row: sort_key((row["group"], row["partition"], 0, None))) == [
        {"group": group, "partition": partition, "value": value, "at": at}
        for group, partition, at, value in sorted(newest.values(), key=sort_key)
    ]
