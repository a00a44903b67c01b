"""The apply job's gold store without a JVM: the local warehouse's Parquet files, read with pyarrow.

A local failover must not wait for a JVM (15-30 s on a loaded 2-core machine before the first row is
read), so locally ``offsetlake plan|apply|failover`` read gold here, with the same results as
offsetlake.apply.store.SparkGoldStore (tests/integration/test_gold_stores.py).

Where local Spark keeps a table (the Hive catalog of offsetlake.local.spark, and the pipeline's
materialized views and streaming tables alike): ``<home>/warehouse/<schema>.db/<table>/``, one
directory of ``part-*.parquet`` files beside Hadoop's ``_SUCCESS`` and ``.crc`` files (skipped: a
name starting with ``_`` or ``.`` is never data; a write in progress lives under ``_temporary``).
Timestamps are INT96 (Spark's default ``spark.sql.parquet.outputTimestampType``), or microseconds
adjusted to UTC when so configured; both are instants in UTC and are read as such. A table whose
directory is missing reads as empty, as the Spark store reads a table the pipeline never created.

The audit without a metastore: ``apply_audit`` is a table of the Derby metastore, which only Spark
can create or append to. :meth:`ArrowGoldStore.append_audit` therefore writes each batch of audit
rows (the plan of a run, or its results) as one Parquet file under
``<home>/audit-pending/<schema>/``: written under a temporary name, fsynced, renamed, so a crash
never leaves half a file. The store reads the audit as the table's files plus the pending files,
and offsetlake.apply.pending_audit folds the pending files into ``apply_audit`` through Spark before
a local Spark session reads it (``offsetlake sql`` included), so every Spark query sees every row.

While a pipeline update runs on the home its gold tables are rewritten in place, so reading them
is refused then, as the Spark store's session was refused while the pipeline's JVM held the home.
"""

from __future__ import annotations

import fcntl
import functools
import operator
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import fields
from datetime import datetime
from pathlib import Path
from typing import Any, Final, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from offsetlake.apply import audit
from offsetlake.apply.audit import AUDIT_TABLE, LastApplied, Mode, Stage
from offsetlake.apply.gold import (
    MAPPING_CONFLICT_COLUMNS,
    UPSTREAM,
    ClusterHealth,
    GoldTableError,
    GroupDataLoss,
    from_micros,
    mapping_conflicts_by_key,
    null_row_error,
    selection_bounds,
    table_name,
)
from offsetlake.apply.pending_audit import AUDIT_SCHEMA, pending_files, write_pending_audit
from offsetlake.apply.planner import GoldOffset, GroupPartition, Selection
from offsetlake.local.locks import RUN_LOCK, HomeInUseError
from offsetlake.local.spark import LOCAL_SCHEMA
from offsetlake.pipeline.precedence import METHODS
from offsetlake.pipeline.tables import (
    BRONZE_CHECKPOINTS,
    CLUSTER_HEALTH,
    FAILOVER_DATA_LOSS,
    GROUP_PARTITION_KEY,
    K2K_MAPPING_CONFLICTS,
    LATEST_OFFSETS,
    OFFSET_HISTORY,
)

WAREHOUSE: Final = "warehouse"
_UTC_MICROS: Final = pa.timestamp("us", tz="UTC")
_FORMAT: Final = ds.ParquetFileFormat(read_options=ds.ParquetReadOptions(coerce_int96_timestamp_unit="us"))
_T = TypeVar("_T")
_LAST: Final = pc.ScalarAggregateOptions(skip_nulls=False)
"""The last row's value even when NULL: Spark's max_by(value, ordering) takes the row, not a value."""


class ArrowGoldStore:
    """A GoldStore (offsetlake.apply.store) on ``<warehouse>/<schema>.db/`` and the pending audit.

    ``warehouse`` defaults to ``<home>/warehouse``, where offsetlake.local.spark keeps the tables.
    """

    catalog: str | None = None

    def __init__(self, home: Path, schema: str = LOCAL_SCHEMA, *, warehouse: Path | None = None) -> None:
        self.home = home
        self.schema = schema
        self.warehouse = warehouse if warehouse is not None else home / WAREHOUSE
        self._checked_home = False

    @property
    def schema_dir(self) -> Path:
        return self.warehouse / f"{self.schema.lower()}.db"

    @property
    def audit_table(self) -> str:
        return audit.audit_table_name(self.schema)

    def latest_offsets(self, selection: Selection | None = None) -> list[GoldOffset]:
        name, dataset = self._table(LATEST_OFFSETS.name)
        if dataset is None:
            return []
        columns = [*_OFFSET_COLUMNS, "last_observed_at", *_upstream(dataset)]
        table = _read(dataset, name, columns, _narrowing(selection))
        return _gold_offsets(table, name, observed="last_observed_at")

    def offsets_as_of(
        self,
        as_of: datetime,
        *,
        precedence: Sequence[str] = METHODS,
        selection: Selection | None = None,
    ) -> list[GoldOffset]:
        if as_of.tzinfo is None:
            raise GoldTableError(f"--as-of needs a time zone: {as_of.isoformat()}")
        name, dataset = self._table(OFFSET_HISTORY.name)
        if dataset is None:
            return []
        columns = [*_OFFSET_COLUMNS, UPSTREAM, "valid_from", "valid_to"]
        valid = _and(_narrowing(selection), _valid_at(as_of))
        current = _read(dataset, name, columns, valid)
        return _gold_offsets(_choose(current, precedence), name, observed="source_timestamp")

    def count_translations(self, as_of: datetime | None = None) -> int:
        name, dataset = self._table(OFFSET_HISTORY.name if as_of else LATEST_OFFSETS.name)
        if dataset is None:
            return 0
        if as_of is None:
            return _guarded(name, dataset.count_rows)
        _require(dataset, name, ("valid_from", "valid_to"))
        return _guarded(name, lambda: dataset.count_rows(filter=_valid_at(as_of)))

    def cluster_health(self) -> list[ClusterHealth]:
        name, dataset = self._table(CLUSTER_HEALTH.name)
        if dataset is None:
            return []
        columns = ["cluster", "role", "reachable", "error", "checked_at"]
        checks = _read(dataset, name, columns, pc.field("checked_at").is_valid())
        newest = _last_per_key(checks, ["cluster"], "checked_at", ["role", "reachable", "error"])
        answered = (
            checks.filter(pc.fill_null(checks["reachable"], False))
            .group_by("cluster")
            .aggregate([("checked_at", "max")])
        )
        last_reachable = dict(
            zip(
                answered["cluster"].to_pylist(),
                _datetimes(answered["checked_at_max"]),
                strict=True,
            )
        )
        rows = zip(
            newest["cluster"].to_pylist(),
            newest["role"].to_pylist(),
            newest["reachable"].to_pylist(),
            newest["error"].to_pylist(),
            _datetimes(newest["checked_at"]),
            strict=True,
        )
        return sorted(
            (
                ClusterHealth(
                    cluster=cluster,
                    role=role,
                    reachable=bool(reachable),
                    error=error,
                    checked_at=checked_at,
                    last_reachable_at=last_reachable.get(cluster),
                )
                for cluster, role, reachable, error, checked_at in rows
            ),
            key=lambda health: health.cluster,
        )

    def failover_data_loss(self, selection: Selection) -> list[GroupDataLoss]:
        name, dataset = self._table(FAILOVER_DATA_LOSS.name)
        if dataset is None:
            return []
        columns = ["source_cluster", "consumer_group", "status", "consumed_not_replicated",
                   "unconsumed_lost", "progress_at"]  # fmt: skip
        # By group only: this table's topic is the source topic; the selection's are target names.
        table = _read(dataset, name, columns, _narrowing(selection, columns=("consumer_group",)))
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
            _datetimes(totals["progress_at_max"]),
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

    def last_applied(self, selection: Selection | None = None) -> dict[GroupPartition, LastApplied]:
        keys = ["consumer_group", "topic", "partition"]
        verified = (
            (pc.field("mode") == Mode.APPLY.value)
            & (pc.field("stage") == Stage.RESULT.value)
            & pc.field("verified")
            & pc.field("recorded_at").is_valid()
        )
        table = self._audit([*keys, "source_timestamp", "recorded_at"], _and(_narrowing(selection), verified))
        newest = _last_per_key(table, keys, "recorded_at", ["source_timestamp"])
        rows = zip(
            newest["consumer_group"].to_pylist(),
            newest["topic"].to_pylist(),
            newest["partition"].to_pylist(),
            _datetimes(newest["source_timestamp"]),
            _datetimes(newest["recorded_at"]),
            strict=True,
        )
        return {
            (group, topic, partition): LastApplied(applied, committed)
            for group, topic, partition, applied, committed in rows
            if applied is not None
        }

    def append_audit(self, records: Sequence[tuple[Any, ...]]) -> int:
        records = list(records)
        write_pending_audit(self.home, self.schema, records)
        return len(records)

    def checkpoint_positions(self) -> dict[tuple[str, int], int]:
        name, dataset = self._table(BRONZE_CHECKPOINTS.name)
        if dataset is None:
            return {}
        ingested = (
            pc.field("topic").is_valid() & pc.field("partition").is_valid() & pc.field("offset").is_valid()
        )
        table = _read(dataset, name, ["topic", "partition", "offset"], ingested)
        highest = table.group_by(["topic", "partition"]).aggregate([("offset", "max")])
        return {
            (topic, partition): offset + 1
            for topic, partition, offset in zip(
                highest["topic"].to_pylist(),
                highest["partition"].to_pylist(),
                highest["offset_max"].to_pylist(),
                strict=True,
            )
        }

    def mapping_conflicts(self, selection: Selection | None = None) -> dict[GroupPartition, str]:
        name, dataset = self._table(K2K_MAPPING_CONFLICTS.name)
        if dataset is None:  # no K2K mappings configured: the pipeline never created the table
            return {}
        table = _read(dataset, name, MAPPING_CONFLICT_COLUMNS, _narrowing(selection))
        rows = zip(*(table[column].to_pylist() for column in MAPPING_CONFLICT_COLUMNS), strict=True)
        return mapping_conflicts_by_key(rows, selection)

    def _table(self, table: str) -> tuple[str, ds.Dataset | None]:
        """The table's name (as Spark names it, for messages) and its files; None when it has none."""
        self._check_home()
        name = table_name(table, self.schema)
        return name, _guarded(name, lambda: open_table(self.schema_dir / table))

    def _audit(self, columns: Sequence[str], where: ds.Expression) -> pa.Table:
        """Rows of the audit: the ``apply_audit`` table's files and the pending files not folded yet
        (a row in both, between a fold's append and its removal of the file, counts once for every
        reader here: the last applied translation is a maximum)."""
        self._check_home()
        name = self.audit_table
        schema = pa.schema([AUDIT_SCHEMA.field(column) for column in columns])
        parts = []
        for dataset in (
            _guarded(name, lambda: open_table(self.schema_dir / AUDIT_TABLE)),
            _guarded(name, lambda: open_files(pending_files(self.home, self.schema))),
        ):
            if dataset is not None:
                parts.append(_read(dataset, name, columns, where).cast(schema))
        return pa.concat_tables(parts) if parts else schema.empty_table()

    def _check_home(self) -> None:
        """Refuse while a pipeline update runs on the home: it rewrites gold in place."""
        if self._checked_home:
            return
        holder = pipeline_update_holder(self.home)
        if holder is not None:
            who = f"process {holder}" if holder else "another process"
            raise HomeInUseError(
                f"local home {self.home} is in use by a pipeline update ({who}), which rewrites gold "
                "while it runs; wait for it to finish, stop it, or set OFFSETLAKE_HOME to another directory"
            )
        self._checked_home = True


_OFFSET_COLUMNS: Final = (*GROUP_PARTITION_KEY, "downstream_offset", "method", "metadata", "source_timestamp")


def pipeline_update_holder(home: Path) -> int | None:
    """The process running a pipeline update on ``home`` (0 when it cannot be told), else None.

    A run holds ``pipeline/run.lock`` exclusively for its whole length (offsetlake.local.locks); a
    shared lock taken and released at once tells whether one does, without waiting.
    """
    try:
        descriptor = os.open(home / RUN_LOCK, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(descriptor, 32, 0).decode(errors="replace").strip()
            return int(holder) if holder.isdigit() else 0
        fcntl.flock(descriptor, fcntl.LOCK_UN)
        return None
    finally:
        os.close(descriptor)


def open_table(path: Path) -> ds.Dataset | None:
    """The Parquet files of one table directory, every timestamp as microseconds in UTC (INT96 and
    TIMESTAMP_MICROS files alike); None when the directory is missing or holds no data file."""
    if not path.is_dir():
        return None
    return _utc(ds.dataset(path, format=_FORMAT))


def open_files(paths: Sequence[Path]) -> ds.Dataset | None:
    """Like :func:`open_table`, for a list of Parquet files."""
    return _utc(ds.dataset([str(path) for path in paths], format=_FORMAT)) if paths else None


def _utc(dataset: ds.Dataset) -> ds.Dataset | None:
    if not dataset.files:
        return None
    unified = pa.schema(
        [
            field.with_type(_UTC_MICROS) if pa.types.is_timestamp(field.type) else field
            for field in dataset.schema
        ]
    )
    # A dataset of its own over the same files: fragments are cast to it as they are read (a
    # dataset's schema can only be replaced by one of the same types).
    return ds.dataset(dataset.files, schema=unified, format=_FORMAT, filesystem=dataset.filesystem)


def _guarded(name: str, read: Callable[[], _T]) -> _T:
    """``read()``, its I/O or Parquet error a GoldTableError naming the table."""
    try:
        return read()
    except (OSError, pa.ArrowException) as error:
        raise GoldTableError(f"cannot read gold table {name}: {error}") from error


def _require(dataset: ds.Dataset, name: str, columns: Iterable[str]) -> None:
    missing = [column for column in columns if column not in dataset.schema.names]
    if missing:
        raise GoldTableError(f"cannot read gold table {name}: it has no column {', '.join(missing)}")


def _read(dataset: ds.Dataset, name: str, columns: Sequence[str], where: ds.Expression | None) -> pa.Table:
    _require(dataset, name, columns)
    return _guarded(name, lambda: dataset.to_table(columns=list(columns), filter=where))


def _upstream(dataset: ds.Dataset) -> tuple[str, ...]:
    return (UPSTREAM,) if UPSTREAM in dataset.schema.names else ()


def _and(*conditions: ds.Expression | None) -> ds.Expression | None:
    present = [condition for condition in conditions if condition is not None]
    return functools.reduce(operator.and_, present) if present else None


def _narrowing(
    selection: Selection | None, *, columns: Iterable[str] = ("consumer_group", "topic")
) -> ds.Expression | None:
    """The selection's literal names and prefixes as a scan filter (offsetlake.apply.gold.narrowed)."""
    conditions = []
    for column, bounds in selection_bounds(selection).items():
        if column not in columns:
            continue
        within = [pc.field(column).isin(sorted(bounds.names))] if bounds.names else []
        within += [pc.starts_with(pc.field(column), pattern=prefix) for prefix in bounds.prefixes]
        conditions.append(functools.reduce(operator.or_, within))
    return _and(*conditions)


def _valid_at(as_of: datetime) -> ds.Expression:
    """offset_history's rows valid at ``as_of``: valid_from <= T AND (valid_to IS NULL OR valid_to > T)."""
    at = pa.scalar(as_of, _UTC_MICROS)
    return (pc.field("valid_from") <= at) & (pc.field("valid_to").is_null() | (pc.field("valid_to") > at))


def _last_per_key(table: pa.Table, keys: list[str], ordering: str, values: list[str]) -> pa.Table:
    """Per ``keys``, the ``values`` of the row with the greatest ``ordering`` (Spark's max_by; rows
    without an ordering are the caller's to drop) and that greatest ``ordering``."""
    ordered = table.sort_by([(ordering, "ascending")])
    newest = ordered.group_by(keys, use_threads=False).aggregate(
        [(value, "last", _LAST) for value in values] + [(ordering, "max")]
    )
    return newest.rename_columns(
        [name.removesuffix("_last").removesuffix("_max") for name in newest.column_names]
    )


def _choose(current: pa.Table, precedence: Sequence[str]) -> pa.Table:
    """One row per group-partition key of ``current`` (offset_history rows valid at one time), by
    offsetlake.pipeline.precedence.choose with valid_from as the freshness. A key with one row keeps
    it, without Python work per row; only keys several methods translate are chosen row by row."""
    if current.num_rows == 0:
        return current
    current = current.sort_by([(key, "ascending") for key in GROUP_PARTITION_KEY])
    starts, sizes = _runs(current, GROUP_PARTITION_KEY)
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
    from offsetlake.pipeline.precedence import Candidate, choose

    rows = [row for start, size in zip(starts, sizes, strict=True) for row in range(start, start + size)]
    subset = current.take(pa.array(rows, pa.int64()))
    candidates = [
        Candidate(method=method, upstream_offset=upstream, downstream_offset=downstream, freshness=freshness)
        for method, upstream, downstream, freshness in zip(
            _pylist(subset["method"]),
            subset[UPSTREAM].to_pylist(),
            subset["downstream_offset"].to_pylist(),
            _datetimes(subset["valid_from"]),
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


def _runs(table: pa.Table, keys: Sequence[str]) -> tuple[pa.Array, pa.Array]:
    """Where each run of equal ``keys`` starts in ``table`` (sorted by them) and how long it is;
    NULL equals NULL, as in Spark's grouping."""
    count = table.num_rows
    same: pa.Array | None = None
    for key in keys:
        column = table[key].combine_chunks()
        before, after = column.slice(0, count - 1), column.slice(1)
        equal = pc.or_kleene(
            pc.fill_null(pc.equal(before, after), False), pc.and_(pc.is_null(before), pc.is_null(after))
        )
        same = equal if same is None else pc.and_(same, equal)
    assert same is not None
    starts = pa.concat_arrays(
        [pa.array([0], pa.uint64()), pc.add(pc.indices_nonzero(pc.invert(same)), 1).cast(pa.uint64())]
    ).cast(pa.int64())
    ends = pa.concat_arrays([starts.slice(1), pa.array([count], pa.int64())])
    return starts, pc.subtract(ends, starts)


def _gold_offsets(table: pa.Table, name: str, *, observed: str) -> list[GoldOffset]:
    """GoldOffsets from gold columns (``observed``: the column ``observed_at`` comes from). A NULL
    in a column the apply job needs is a GoldTableError naming the row, as the Spark store's."""
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
        "source_cluster": _pylist(table["source_cluster"]),
        "consumer_group": table["consumer_group"].to_pylist(),
        "topic": _pylist(table["topic"]),
        "partition": table["partition"].to_pylist(),
        "downstream_offset": table["downstream_offset"].to_pylist(),
        "source_timestamp": _datetimes(table["source_timestamp"]),
        "method": _pylist(pc.fill_null(table["method"], "")),
        "observed_at": _datetimes(table[observed]),
        "metadata": _pylist(pc.fill_null(table["metadata"], "")),
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


def _pylist(column: pa.ChunkedArray | pa.Array) -> list[Any]:
    """Python values of a column whose values repeat (cluster, topic, method): each distinct value
    is converted once, and the rows share it."""
    encoded = pc.dictionary_encode(_combined(column), null_encoding="encode")
    values = encoded.dictionary.to_pylist()
    return [values[index] for index in encoded.indices.to_pylist()]


def _micros(column: pa.ChunkedArray) -> pa.Array:
    return _combined(column).cast(_UTC_MICROS).cast(pa.int64())


def _datetimes(column: pa.ChunkedArray | pa.Array) -> list[datetime | None]:
    """UTC datetimes of a timestamp column, each distinct instant converted once (pyarrow's own
    conversion of zone-aware timestamps costs ~10 µs a value: 10 s for a million rows)."""
    encoded = pc.dictionary_encode(_micros(column), null_encoding="encode")
    values = [None if micros is None else from_micros(micros) for micros in encoded.dictionary.to_pylist()]
    return [values[index] for index in encoded.indices.to_pylist()]


def _combined(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
