"""Gold rows as the apply takes them, each rule once for both gold stores.

Both stores only scan: they hand over gold's columns, filtered, as an Arrow table (the Spark store
through ``toArrow``, the local one from the Parquet files), and the rules are here:

- :func:`choose_current`: of the ``offset_history`` rows valid at a time, one per group-partition,
  by offsetlake.mirror.precedence.choose (the pure twin of the pipeline's choose_translation);
- :func:`data_loss_totals`: ``failover_data_loss`` summed per source cluster and group;
- :func:`mapping_conflicts_by_key`: ``k2k_mapping_conflicts`` folded per group-partition, with its reason;
- :func:`next_offsets`: per Kafka topic-partition a table's rows came from, the next offset after the
  highest (what the pipeline ingested of it: bronze_checkpoints', silver_offset_syncs');
- :func:`gold_offsets`: rows -> GoldOffsets, timestamps of any zone as UTC datetimes, NULL method
  and metadata as "", and a row without its key, offset or source timestamp a GoldTableError
  naming the row, so both stores say the same about every row.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import fields
from datetime import datetime
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc

from offsetlake.apply.key_spans import key_spans
from offsetlake.apply.planner import Selection
from offsetlake.contract.gold import UPSTREAM, GoldOffset, GoldTableError, GroupDataLoss, from_micros
from offsetlake.contract.tables import GROUP_PARTITION_KEY
from offsetlake.kafka.group_offsets import GroupOffset
from offsetlake.mirror.positions import GroupPartition

UTC_MICROS: Final = pa.timestamp("us", tz="UTC")


def choose_current(current: pa.Table, precedence: Sequence[str]) -> pa.Table:
    """One row per group-partition key of ``current`` (offset_history rows valid at one time), by
    offsetlake.mirror.precedence.choose with valid_from as the freshness. A key with one row keeps
    it, without Python work per row; only keys several methods translate are chosen row by row."""
    if current.num_rows == 0:
        return current
    current = current.sort_by([(key, "ascending") for key in GROUP_PARTITION_KEY])
    starts, sizes = key_spans(current, GROUP_PARTITION_KEY)
    alone = pc.equal(sizes, 1)
    chosen = [pc.filter(starts, alone)]
    shared_starts = pc.filter(starts, pc.invert(alone)).to_pylist()
    if shared_starts:
        shared_sizes = pc.filter(sizes, pc.invert(alone)).to_pylist()
        chosen.append(pa.array(_choose_shared(current, shared_starts, shared_sizes, precedence), pa.int64()))
    return current.take(pa.concat_arrays([indices.cast(pa.int64()) for indices in chosen]))


def _choose_shared(
    current: pa.Table, starts: list[int], sizes: list[int], precedence: Sequence[str]
) -> list[int]:
    """The chosen row of each key whose rows start at ``starts`` (``sizes`` rows each)."""
    from offsetlake.mirror.precedence import Candidate, choose

    rows = [row for start, size in zip(starts, sizes, strict=True) for row in range(start, start + size)]
    subset = current.take(pa.array(rows, pa.int64()))
    candidates = [
        Candidate(method=method, upstream_offset=upstream, downstream_offset=downstream, freshness=freshness)
        for method, upstream, downstream, freshness in zip(
            pylist(subset["method"]),
            subset[UPSTREAM].to_pylist(),
            subset["downstream_offset"].to_pylist(),
            datetimes(subset["valid_from"]),
            strict=True,
        )
    ]
    chosen, offset = [], 0
    for start, size in zip(starts, sizes, strict=True):
        group = candidates[offset : offset + size]
        winner, _disagree = choose(group, precedence)
        position = next((i for i, candidate in enumerate(group) if candidate is winner), None)
        chosen.append(start + (group.index(winner) if position is None else position))
        offset += size
    return chosen


DATA_LOSS_COLUMNS: Final = ("source_cluster", "consumer_group", "status", "consumed_not_replicated",
                             "unconsumed_lost", "progress_at")  # fmt: skip
"""The ``failover_data_loss`` columns :func:`data_loss_totals` takes."""


def data_loss_totals(table: pa.Table, selection: Selection) -> list[GroupDataLoss]:
    """Per source cluster and group ``selection``'s group regexes select, what failing over now
    costs, from ``failover_data_loss`` rows (DATA_LOSS_COLUMNS): partitions, records consumed but
    not replicated and records lost to the group (NULL counts as 0), partitions whose position is
    unknown (status NULL or ``reset``), and the newest progress; by group, then cluster."""
    unknown = pc.or_kleene(pc.is_null(table["status"]), pc.equal(table["status"], "reset"))
    table = table.append_column("unknown", pc.cast(pc.fill_null(unknown, False), pa.int64()))
    totals = table.group_by(["source_cluster", "consumer_group"]).aggregate(
        [
            ([], "count_all"),
            ("consumed_not_replicated", "sum"),
            ("unconsumed_lost", "sum"),
            ("unknown", "sum"),
            ("progress_at", "max"),
        ]
    )
    totals = totals.sort_by([("consumer_group", "ascending"), ("source_cluster", "ascending")])
    rows = zip(
        totals["source_cluster"].to_pylist(),
        totals["consumer_group"].to_pylist(),
        totals["count_all"].to_pylist(),
        totals["consumed_not_replicated_sum"].to_pylist(),
        totals["unconsumed_lost_sum"].to_pylist(),
        totals["unknown_sum"].to_pylist(),
        datetimes(totals["progress_at_max"]),
        strict=True,
    )
    return [
        GroupDataLoss(
            source_cluster=cluster,
            consumer_group=group,
            partitions=partitions,
            consumed_not_replicated=consumed or 0,
            unconsumed_lost=lost or 0,
            partitions_unknown=unknown_count or 0,
            as_of=as_of,
        )
        for cluster, group, partitions, consumed, lost, unknown_count, as_of in rows
        if selection.selects_group(group)
    ]


def gold_offsets(table: pa.Table, name: str, *, observed: str) -> list[GoldOffset]:
    """GoldOffsets from gold columns (``observed``: the column ``observed_at`` comes from, either
    timestamp; upstream_offset when there). A NULL in a column the apply needs is a
    GoldTableError naming the row."""
    source_micros = _micros(table["source_timestamp"])
    observed_micros = _micros(table[observed])
    required = {column: table[column] for column in _REQUIRED_COLUMNS} | {"source_micros": source_micros}
    nulls = functools.reduce(pc.or_, [pc.is_null(column) for column in required.values()])
    if pc.any(nulls).as_py():
        index = pc.indices_nonzero(nulls)[0].as_py()
        row = {column: table[column][index].as_py() for column in _ERROR_COLUMNS}
        row |= {
            "source_micros": source_micros[index].as_py(),
            "observed_micros": observed_micros[index].as_py(),
        }
        if UPSTREAM in table.column_names:
            row[UPSTREAM] = table[UPSTREAM][index].as_py()
        raise null_row_error(name, row)
    upstream = table[UPSTREAM].to_pylist() if UPSTREAM in table.column_names else [None] * table.num_rows
    columns = {
        "source_cluster": pylist(table["source_cluster"]),
        "consumer_group": table["consumer_group"].to_pylist(),
        "topic": pylist(table["topic"]),
        "partition": table["partition"].to_pylist(),
        "downstream_offset": table["downstream_offset"].to_pylist(),
        "source_timestamp": datetimes(table["source_timestamp"]),
        "method": pylist(pc.fill_null(table["method"], "")),
        "observed_at": datetimes(table[observed]),
        "metadata": pylist(pc.fill_null(table["metadata"], "")),
        UPSTREAM: upstream,
    }
    return _construct(columns)


_REQUIRED_COLUMNS: Final = (*GROUP_PARTITION_KEY, "downstream_offset")
_ERROR_COLUMNS: Final = (*GROUP_PARTITION_KEY, "downstream_offset", "method", "metadata")


def _construct(columns: dict[str, list[Any]]) -> list[GoldOffset]:
    """One GoldOffset per row of ``columns`` (by field name): positionally when they are GoldOffset's
    leading fields (the fastest call: a third less than by keyword), else by keyword."""
    names = [field.name for field in fields(GoldOffset)]
    ordered = [name for name in names if name in columns]
    if names[: len(ordered)] == ordered:
        return list(map(GoldOffset, *(columns[name] for name in ordered)))
    return [
        GoldOffset(**dict(zip(ordered, values, strict=True)))
        for values in zip(*(columns[n] for n in ordered), strict=True)
    ]


def pylist(column: pa.ChunkedArray | pa.Array) -> list[Any]:
    """Python values of a column whose values repeat (cluster, topic, method): each distinct value
    is converted once, and the rows share it."""
    encoded = pc.dictionary_encode(_combined(column), null_encoding="encode")
    values = encoded.dictionary.to_pylist()
    return [values[index] for index in encoded.indices.to_pylist()]


def _micros(column: pa.ChunkedArray) -> pa.Array:
    return _combined(column).cast(UTC_MICROS).cast(pa.int64())


def datetimes(column: pa.ChunkedArray | pa.Array) -> list[datetime | None]:
    """UTC datetimes of a timestamp column, each distinct instant converted once (pyarrow's own
    conversion of zone-aware timestamps costs ~10 µs a value: 10 s for a million rows)."""
    encoded = pc.dictionary_encode(_micros(column), null_encoding="encode")
    values = [None if micros is None else from_micros(micros) for micros in encoded.dictionary.to_pylist()]
    return [values[index] for index in encoded.indices.to_pylist()]


def _combined(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


GROUP_SNAPSHOT_COLUMNS: Final = (
    "source_cluster",
    "consumer_group",
    "group_state",
    "topic",
    "partition",
    "committed_offset",
    "metadata",
    "snapshot_time",
)
"""What the failover's K2K search reads of latest_group_offsets (apply/k2k_search.py)."""


def group_snapshots(table: pa.Table, selection: Selection | None) -> dict[str, list[GroupOffset]]:
    """latest_group_offsets rows (GROUP_SNAPSHOT_COLUMNS) per source alias, of the selected groups
    (the topic is the source topic, so only the group regexes apply here)."""
    by_alias: dict[str, list[GroupOffset]] = {}
    rows = zip(
        *(table[column].to_pylist() for column in GROUP_SNAPSHOT_COLUMNS[:-1]),
        datetimes(table["snapshot_time"]),
        strict=True,
    )
    for alias, group, state, topic, partition, committed, metadata, snapshot_time in rows:
        if committed is None or snapshot_time is None or (selection and not selection.selects_group(group)):
            continue
        snapshot = GroupOffset(group, state or "", topic, partition, committed, metadata or "", snapshot_time)
        by_alias.setdefault(alias, []).append(snapshot)
    return by_alias


OFFSET_SYNC_COLUMNS: Final = ("topic", "partition", "upstream_offset", "downstream_offset",
                              "kafka_topic", "kafka_partition", "kafka_offset")  # fmt: skip
"""What failback's reverse translation reads of silver_offset_syncs (the forward flow's history)."""

SyncHistories = dict[tuple[str, int], list[tuple[int, int]]]
"""Per upstream (topic, partition), its offset syncs (upstream, downstream) in the order written."""


def sync_histories(table: pa.Table) -> SyncHistories:
    """silver_offset_syncs rows (OFFSET_SYNC_COLUMNS) per upstream partition, in the order MM2 wrote
    them: their offsets in the syncs topic (a source's syncs in two topics: one topic after the other)."""
    table = table.sort_by(
        [(column, "ascending") for column in ("kafka_topic", "kafka_partition", "kafka_offset")]
    )
    histories: SyncHistories = {}
    rows = zip(*(table[column].to_pylist() for column in OFFSET_SYNC_COLUMNS[:4]), strict=True)
    for topic, partition, upstream, downstream in rows:
        if None not in (topic, partition, upstream, downstream):
            histories.setdefault((topic, partition), []).append((upstream, downstream))
    return histories


CHECKPOINT_COORDINATES: Final = ("topic", "partition", "offset")
"""bronze_checkpoints' Kafka coordinates: the checkpoint record's topic, partition and offset."""
SYNC_COORDINATES: Final = ("kafka_topic", "kafka_partition", "kafka_offset")
"""silver_offset_syncs' Kafka coordinates: the offset-sync record's place in its syncs topic."""


def next_offsets(table: pa.Table, coordinates: Sequence[str]) -> dict[tuple[str, int], int]:
    """Per (topic, partition) of ``table``'s ``coordinates`` (topic, partition, offset columns), the
    highest offset + 1: where reading that partition resumes past what the pipeline ingested. A row
    with any coordinate NULL is no position (either store may hand a table pre-grouped: the rule is
    the same on one row a partition as on every row)."""
    topic, partition, offset = coordinates
    known = pc.and_(
        pc.and_(pc.is_valid(table[topic]), pc.is_valid(table[partition])), pc.is_valid(table[offset])
    )
    highest = (
        table.select([topic, partition, offset])
        .filter(known)
        .group_by([topic, partition], use_threads=False)
        .aggregate([(offset, "max")])
    )
    rows = zip(
        highest[topic].to_pylist(),
        highest[partition].to_pylist(),
        highest[f"{offset}_max"].to_pylist(),
        strict=True,
    )
    return {(name, number): last + 1 for name, number, last in rows}


_REQUIRED: Final = (
    "source_cluster",
    "consumer_group",
    "topic",
    "partition",
    "downstream_offset",
    "source_micros",
)


def null_row_error(name: str, row: dict[str, object]) -> GoldTableError:
    """A gold row the apply cannot use: which required columns are NULL, and the row."""
    missing = [column for column in _REQUIRED if row.get(column) is None]
    return GoldTableError(f"gold table {name} has a row with NULL {', '.join(missing)}: {row}")


MAPPING_CONFLICT_COLUMNS: Final = (
    "consumer_group",
    "topic",
    "partition",
    "upstream_topic",
    "upstream_partition",
    "mapped_source_offset",
    "target_topics",
)


def mapping_conflicts_by_key(
    rows: Iterable[Sequence[Any]], selection: Selection | None
) -> dict[GroupPartition, str]:
    """k2k_mapping_conflicts rows (MAPPING_CONFLICT_COLUMNS, in order) as the planner takes them: the
    selected group-partitions, each with what an operator reads about it. Both gold stores fold
    their rows here, so they say the same; several rows of one key (two source clusters) are
    joined in sorted order, whatever order storage returned them in."""
    reasons: dict[GroupPartition, set[str]] = defaultdict(set)
    for group, topic, partition, upstream_topic, upstream_partition, mapped, targets in rows:
        if selection is None or selection.selects(group, topic):
            reasons[(group, topic, partition)].add(
                f"K2K mapped source record {upstream_topic}[{upstream_partition}]@{mapped} to "
                f"{len(targets)} target topics ({', '.join(targets)})"
            )
    return {key: "; ".join(sorted(texts)) for key, texts in reasons.items()}
