"""The local gold store: the apply's GoldStore on the local warehouse's Parquet files, without a JVM.

A local failover must not wait for a JVM (15-30 s on a loaded 2-core machine before the first row is
read), so locally ``offsetlake plan|apply|failover`` read gold here, with the same results as
offsetlake.apply.store.SparkGoldStore (tests/integration/test_gold_stores.py); pyarrow reads them.

Where local Spark keeps a table (the Hive catalog of offsetlake.local.spark, and the pipeline's
materialized views and streaming tables alike): ``<table>/`` in the schema's directory of the home's
warehouse (offsetlake.local.home.LocalHome), one
directory of ``part-*.parquet`` files beside Hadoop's ``_SUCCESS`` and ``.crc`` files (skipped: a
name starting with ``_`` or ``.`` is never data; a write in progress lives under ``_temporary``).
Timestamps are INT96 (Spark's default ``spark.sql.parquet.outputTimestampType``), or microseconds
adjusted to UTC when so configured; both are instants in UTC and are read as such. A table whose
directory is missing reads as empty, as the Spark store reads a table the pipeline never created.

The audit without a metastore: ``apply_audit`` is a table of the Derby metastore, which only Spark
can create or append to. :meth:`LocalGoldStore.append_audit` therefore writes each batch of audit
rows (the plan of a run, or its results) to the home's audit journal (offsetlake.local.audit_journal):
one Parquet file a batch, written whole or not at all. The store reads the audit as the table's
files plus the journal's, and the local commands that read ``apply_audit`` through Spark fold the
journal into it first (an explicit step, never a session's side effect), so every Spark query sees
every row.

Which files are a table: a materialized view is rewritten whole, so every data file of its
directory; a streaming table (``bronze_checkpoints``, ``cluster_health``: Spark's file sink) only
the files its sink log ``_spark_metadata/`` commits, as Spark reads it (:func:`committed_files`):
a part file of a batch killed before its commit is in the directory but not in the table.

Gold is read only when whole and only while it stays so: at its first read the store holds the
home's run lock shared until :meth:`LocalGoldStore.close` (it is a context manager), so no
pipeline update starts and rewrites gold under a run; one already running refuses the read (or
is waited for, ``lock_wait_s``); and gold an update killed outright left half-written is put back
from the gold guard's backup first (offsetlake.local.gold_guard.hold_whole_gold).
"""

from __future__ import annotations

import functools
import json
import operator
import re
from collections.abc import Callable, Collection, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Self, TypeVar
from urllib.parse import unquote, urlsplit

import pyarrow as pa
import pyarrow.compute as pc

from offsetlake.apply import audit
from offsetlake.apply.audit import AUDIT_TABLE, COMMITTING_MODES, Stage
from offsetlake.apply.gold_rows import (
    CHECKPOINT_COORDINATES,
    DATA_LOSS_COLUMNS,
    GROUP_SNAPSHOT_COLUMNS,
    MAPPING_CONFLICT_COLUMNS,
    OFFSET_SYNC_COLUMNS,
    SYNC_COORDINATES,
    UTC_MICROS,
    SyncHistories,
    choose_current,
    data_loss_totals,
    datetimes,
    gold_offsets,
    group_snapshots,
    mapping_conflicts_by_key,
    next_offsets,
    sync_histories,
)
from offsetlake.apply.key_spans import last_per_key
from offsetlake.apply.planner import GroupPartition, Selection
from offsetlake.contract.gold import (
    UPSTREAM,
    ClusterHealth,
    GoldOffset,
    GoldTableError,
    GroupDataLoss,
    LastApplied,
    selection_bounds,
    table_name,
)
from offsetlake.contract.tables import (
    BRONZE_CHECKPOINTS,
    CLUSTER_HEALTH,
    FAILOVER_DATA_LOSS,
    GROUP_PARTITION_KEY,
    K2K_MAPPING_CONFLICTS,
    LATEST_GROUP_OFFSETS,
    LATEST_OFFSETS,
    OFFSET_HISTORY,
    SILVER_OFFSET_SYNCS,
)
from offsetlake.kafka.group_offsets import GroupOffset
from offsetlake.local.audit_journal import AUDIT_SCHEMA, journal_files, write_journal
from offsetlake.local.gold_guard import hold_whole_gold
from offsetlake.local.home import LOCAL_SCHEMA, LocalHome, schema_dir_in
from offsetlake.local.locks import RunLockHold
from offsetlake.mirror.precedence import METHODS

if TYPE_CHECKING:
    import pyarrow.dataset as ds

SINK_LOG: Final = "_spark_metadata"
"""Where Spark's file sink commits a streaming table's files, in the table's directory."""
_SINK_LOG_VERSION: Final = "v1"
_SINK_LOG_BATCH: Final = re.compile(r"(\d+)(\.compact)?")
_T = TypeVar("_T")


class LocalGoldStore:
    """A GoldStore (offsetlake.apply.store) on a local home's warehouse and audit journal.

    ``warehouse`` defaults to the home's, where offsetlake.local.spark keeps the tables (a test's
    Spark session may keep them elsewhere).
    From its first read until :meth:`close` it holds the home's run lock shared; ``lock_wait_s``:
    how long that first read waits for a pipeline update to end (0: refused at once).
    """

    catalog: str | None = None

    def __init__(
        self,
        home: LocalHome,
        schema: str = LOCAL_SCHEMA,
        *,
        warehouse: Path | None = None,
        lock_wait_s: float = 0.0,
    ) -> None:
        self.home = home
        self.schema = schema
        self.warehouse = warehouse if warehouse is not None else home.warehouse
        self.lock_wait_s = lock_wait_s
        self._lock: RunLockHold | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Let go of the home's run lock: a pipeline update may start again. Reading again holds it
        again (and finds gold as that update left it)."""
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    @property
    def schema_dir(self) -> Path:
        return schema_dir_in(self.warehouse, self.schema)

    @property
    def audit_table(self) -> str:
        return audit.audit_table_name(self.schema)

    def latest_offsets(self, selection: Selection | None = None) -> list[GoldOffset]:
        name, dataset = self._table(LATEST_OFFSETS.name)
        if dataset is None:
            return []
        columns = [*_OFFSET_COLUMNS, "last_observed_at", *_upstream(dataset)]
        table = _read(dataset, name, columns, _narrowing(selection))
        return gold_offsets(table, name, observed="last_observed_at")

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
        return gold_offsets(choose_current(current, precedence), name, observed="source_timestamp")

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
        newest = last_per_key(checks, ["cluster"], "checked_at", ["role", "reachable", "error"])
        answered = (
            checks.filter(pc.fill_null(checks["reachable"], False))
            .group_by("cluster")
            .aggregate([("checked_at", "max")])
        )
        last_reachable = dict(
            zip(
                answered["cluster"].to_pylist(),
                datetimes(answered["checked_at_max"]),
                strict=True,
            )
        )
        rows = zip(
            newest["cluster"].to_pylist(),
            newest["role"].to_pylist(),
            newest["reachable"].to_pylist(),
            newest["error"].to_pylist(),
            datetimes(newest["checked_at"]),
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
        # By group only: this table's topic is the source topic; the selection's are target names.
        table = _read(dataset, name, DATA_LOSS_COLUMNS, _narrowing(selection, columns=("consumer_group",)))
        return data_loss_totals(table, selection)

    def last_applied(self, selection: Selection | None = None) -> dict[GroupPartition, LastApplied]:
        keys = ["consumer_group", "topic", "partition"]
        verified = (
            pc.field("mode").isin([mode.value for mode in COMMITTING_MODES])
            & (pc.field("stage") == Stage.RESULT.value)
            & pc.field("verified")
            & pc.field("recorded_at").is_valid()
        )
        columns = [*keys, "source_timestamp", "recorded_at", "read_back_offset"]
        table = self._audit(columns, _and(_narrowing(selection), verified))
        newest = last_per_key(table, keys, "recorded_at", ["source_timestamp", "read_back_offset"])
        rows = zip(
            newest["consumer_group"].to_pylist(),
            newest["topic"].to_pylist(),
            newest["partition"].to_pylist(),
            datetimes(newest["source_timestamp"]),
            datetimes(newest["recorded_at"]),
            newest["read_back_offset"].to_pylist(),
            strict=True,
        )
        return {
            (group, topic, partition): LastApplied(applied, committed, offset)
            for group, topic, partition, applied, committed, offset in rows
            if applied is not None
        }

    def failover_holds(self, selection: Selection | None = None) -> dict[str, datetime]:
        in_modes = pc.field("mode").isin([mode.value for mode in audit.HOLD_MODES])
        table = self._audit([*audit.HOLD_COLUMNS, "recorded_at"], in_modes)
        newest = table.group_by(list(audit.HOLD_COLUMNS), use_threads=False).aggregate(
            [("recorded_at", "max")]
        )
        columns = [newest[column].to_pylist() for column in audit.HOLD_COLUMNS]
        rows = zip(*columns, datetimes(newest["recorded_at_max"]), strict=True)
        return audit.failover_holds(rows, selection)

    def append_audit(self, records: Sequence[tuple[Any, ...]]) -> int:
        records = list(records)
        write_journal(self.home, self.schema, records)
        return len(records)

    def checkpoint_positions(self) -> dict[tuple[str, int], int]:
        name, dataset = self._table(BRONZE_CHECKPOINTS.name)
        if dataset is None:
            return {}
        return next_offsets(_read(dataset, name, CHECKPOINT_COORDINATES, None), CHECKPOINT_COORDINATES)

    def offset_sync_positions(self, source_cluster: str) -> dict[tuple[str, int], int]:
        name, dataset = self._table(SILVER_OFFSET_SYNCS.name)
        if dataset is None:
            return {}
        of_source = pc.field("source_cluster") == source_cluster
        return next_offsets(_read(dataset, name, SYNC_COORDINATES, of_source), SYNC_COORDINATES)

    def newest_group_offsets(self, selection: Selection | None = None) -> dict[str, list[GroupOffset]]:
        name, dataset = self._table(LATEST_GROUP_OFFSETS.name)
        if dataset is None:
            return {}
        # By group only: this table's topic is the source topic; the selection's are target names.
        narrowing = _narrowing(selection, columns=("consumer_group",))
        return group_snapshots(_read(dataset, name, GROUP_SNAPSHOT_COLUMNS, narrowing), selection)

    def mapping_conflicts(self, selection: Selection | None = None) -> dict[GroupPartition, str]:
        name, dataset = self._table(K2K_MAPPING_CONFLICTS.name)
        if dataset is None:  # no K2K mappings configured: the pipeline never created the table
            return {}
        table = _read(dataset, name, MAPPING_CONFLICT_COLUMNS, _narrowing(selection))
        rows = zip(*(table[column].to_pylist() for column in MAPPING_CONFLICT_COLUMNS), strict=True)
        return mapping_conflicts_by_key(rows, selection)

    def offset_syncs(self, source_cluster: str, topics: Collection[str]) -> SyncHistories:
        """The forward flow's offset syncs of ``topics`` (failback's reverse translation)."""
        name, dataset = self._table(SILVER_OFFSET_SYNCS.name)
        if dataset is None or not topics:
            return {}
        where = (pc.field("source_cluster") == source_cluster) & pc.field("topic").isin(sorted(topics))
        return sync_histories(_read(dataset, name, OFFSET_SYNC_COLUMNS, where))

    def _table(self, table: str) -> tuple[str, ds.Dataset | None]:
        """The table's name (as Spark names it, for messages) and its files; None when it has none."""
        self._hold_home()
        name = table_name(table, self.schema)
        return name, _guarded(name, lambda: open_table(self.schema_dir / table))

    def _audit(self, columns: Sequence[str], where: ds.Expression) -> pa.Table:
        """Rows of the audit: the ``apply_audit`` table's files and the journal's not folded yet
        (a row in both, between a fold's append and its removal of the file, counts once for every
        reader here: the last applied translation is a maximum)."""
        self._hold_home()
        name = self.audit_table
        schema = pa.schema([AUDIT_SCHEMA.field(column) for column in columns])
        parts = []
        for dataset in (
            _guarded(name, lambda: open_table(self.schema_dir / AUDIT_TABLE)),
            _guarded(name, lambda: open_files(journal_files(self.home, self.schema))),
        ):
            if dataset is not None:
                parts.append(_read(dataset, name, columns, where).cast(schema))
        return pa.concat_tables(parts) if parts else schema.empty_table()

    def _hold_home(self) -> None:
        """From the first read on, no pipeline update rewrites gold under this store, and gold an
        interrupted one left half-written has been put back; else HomeInUseError, one line."""
        if self._lock is None:
            self._lock = hold_whole_gold(self.home, wait_s=self.lock_wait_s)


_OFFSET_COLUMNS: Final = (*GROUP_PARTITION_KEY, "downstream_offset", "method", "metadata", "source_timestamp")


def open_table(path: Path) -> ds.Dataset | None:
    """The Parquet files of one table directory, every timestamp as microseconds in UTC (INT96 and
    TIMESTAMP_MICROS files alike); None when the directory is missing or holds no data file. A
    streaming table's files are those its sink log commits (:func:`committed_files`)."""
    if not path.is_dir():
        return None
    if (path / SINK_LOG).is_dir():
        return open_files(committed_files(path / SINK_LOG))
    return _utc(_dataset(path))


class SinkLogError(ValueError):
    """A file sink log this reader cannot follow (Spark would refuse it too)."""


def committed_files(log: Path) -> list[Path]:
    """The data files Spark's file sink log ``log`` (a table's ``_spark_metadata``) holds: added and
    not deleted, as Spark's batch reader lists them (FileStreamSinkLog.allFiles).

    Batch ``N`` is the file ``N``, or ``N.compact`` when it also carries every earlier batch's
    entries; each is written whole under a temporary name and renamed (hidden names are skipped).
    A file's first line is the log version (``v1``), then one JSON entry per line with ``path`` (a
    URI) and ``action`` (``add`` or ``delete``). The newest compact batch and the batches after it
    are read; batches before it may linger until Spark deletes them and are not needed.
    """
    batches: dict[int, Path] = {}
    compact = -1
    for entry in log.iterdir():
        matched = _SINK_LOG_BATCH.fullmatch(entry.name)
        if matched is None:
            continue
        batch = int(matched.group(1))
        if matched.group(2):
            compact = max(compact, batch)
        if batch not in batches or matched.group(2):
            batches[batch] = entry
    if not batches:
        return []
    newest = max(batches)
    missing = [batch for batch in range(max(compact, 0), newest + 1) if batch not in batches]
    if missing:
        raise SinkLogError(f"its file sink log {log} lacks batch {missing[0]} (newest: {newest})")
    added: dict[str, Path] = {}
    for batch in range(max(compact, 0), newest + 1):
        for path, action in _sink_log_entries(batches[batch]):
            if action == "delete":
                added.pop(path, None)
            elif action == "add":
                added[path] = _local_path(path, batches[batch])
            else:
                raise SinkLogError(f"{batches[batch]}: unknown action {action!r} for {path}")
    return list(added.values())


def _sink_log_entries(batch: Path) -> list[tuple[str, str]]:
    """(path, action) of each entry of one sink log batch file."""
    lines = batch.read_text(encoding="utf-8").splitlines()
    if not lines or lines[0] != _SINK_LOG_VERSION:
        found = repr(lines[0]) if lines else "nothing"
        raise SinkLogError(f"{batch}: expected log version {_SINK_LOG_VERSION}, found {found}")
    entries = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            entries.append((str(entry["path"]), str(entry["action"])))
        except (ValueError, KeyError, TypeError) as error:
            raise SinkLogError(f"{batch}, line {number}: not a sink log entry ({error})") from error
    return entries


def _local_path(uri: str, batch: Path) -> Path:
    """The local file a sink log entry's URI names (``file:///...``, or a path without a scheme)."""
    parts = urlsplit(uri)
    if parts.scheme not in ("", "file"):
        raise SinkLogError(f"{batch}: {uri} is not a local file")
    return Path(unquote(parts.path))


def open_files(paths: Sequence[Path]) -> ds.Dataset | None:
    """Like :func:`open_table`, for a list of Parquet files."""
    return _utc(_dataset([str(path) for path in paths])) if paths else None


def _utc(dataset: ds.Dataset) -> ds.Dataset | None:
    if not dataset.files:
        return None
    unified = pa.schema(
        [
            field.with_type(UTC_MICROS) if pa.types.is_timestamp(field.type) else field
            for field in dataset.schema
        ]
    )
    # A dataset of its own over the same files: fragments are cast to it as they are read (a
    # dataset's schema can only be replaced by one of the same types).
    return _dataset(dataset.files, schema=unified, filesystem=dataset.filesystem)


def _dataset(source: str | Path | list[str], **options: Any) -> ds.Dataset:
    """Parquet files as a dataset, INT96 timestamps read as microseconds. pyarrow.dataset is imported
    here, at the first read: it loads pandas (~0.5 s of a command's start), which a command refused
    on its flags never needs."""
    import pyarrow.dataset as ds

    parquet = ds.ParquetFileFormat(read_options=ds.ParquetReadOptions(coerce_int96_timestamp_unit="us"))
    return ds.dataset(source, format=parquet, **options)


def _guarded(name: str, read: Callable[[], _T]) -> _T:
    """``read()``, its I/O, Parquet or sink log error a GoldTableError naming the table."""
    try:
        return read()
    except (OSError, pa.ArrowException, SinkLogError) as error:
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
    at = pa.scalar(as_of, UTC_MICROS)
    return (pc.field("valid_from") <= at) & (pc.field("valid_to").is_null() | (pc.field("valid_to") > at))
