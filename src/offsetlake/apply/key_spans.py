"""Spans of equal keys in a sorted Arrow table: the one way the apply's pure Arrow code groups rows.

A span is where one key's rows lie once the table is sorted by its key columns: the planner's
columns cut gold into group-partitions by it (apply/plan_columns.py), ``gold_rows.choose_current``
chooses among the rows of one key, and the local store takes each key's newest row
(:func:`last_per_key`). NULL equals NULL, as in Spark's grouping.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc


def key_spans(table: pa.Table, keys: Sequence[str]) -> tuple[pa.Array, pa.Array]:
    """Where each span of equal ``keys`` starts in ``table`` (sorted by them) and how many rows it
    has, both INT64; none for an empty table."""
    count = table.num_rows
    if count == 0:
        return pa.array([], pa.int64()), pa.array([], pa.int64())
    same: pa.Array | None = None
    for key in keys:
        column = table[key].combine_chunks()
        before, after = column.slice(0, count - 1), column.slice(1)
        equal = pc.equal(before, after)
        if column.null_count:
            both_null = pc.and_(pc.is_null(before), pc.is_null(after))
            equal = pc.or_kleene(pc.fill_null(equal, False), both_null)
        same = equal if same is None else pc.and_(same, equal)
    if same is None:
        raise ValueError("spans of no key")
    changes = pc.indices_nonzero(pc.invert(same)).cast(pa.int64())
    starts = pa.concat_arrays([pa.array([0], pa.int64()), pc.add(changes, 1)])
    ends = pa.concat_arrays([starts.slice(1), pa.array([count], pa.int64())])
    return starts, pc.subtract(ends, starts)


def last_per_key(table: pa.Table, keys: Sequence[str], ordering: str, values: Sequence[str]) -> pa.Table:
    """Per ``keys``, the ``values`` of the row with the greatest ``ordering`` and that ordering (Spark's
    max_by: the row, its NULL values included; of rows tied on it, the last in ``table``). Rows
    without an ordering are the caller's to drop."""
    ordered = table.sort_by([*((key, "ascending") for key in keys), (ordering, "ascending")])
    starts, sizes = key_spans(ordered, keys)
    lasts = pc.subtract(pc.add(starts, sizes), 1)
    return ordered.take(lasts).select([*keys, *values, ordering])
