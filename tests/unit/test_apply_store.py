"""The gold store without Spark: LocalGoldStore on Parquet files pyarrow writes as Spark does (INT96
or microsecond timestamps), the pending audit's files (named per batch, written atomically), the
home's pipeline lock, and run_apply on a store a test hands it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from offsetlake.apply import audit
from offsetlake.apply.planner import Action, PlanRow, Selection
from offsetlake.apply.reasons import NoTranslation
from offsetlake.apply.run import ApplyRequest, ApplyStatus, run_apply
from offsetlake.apply.store import GoldStore
from offsetlake.contract.gold import LastApplied
from offsetlake.contract.tables import APPLY_AUDIT, LATEST_OFFSETS
from offsetlake.local import audit_journal
from offsetlake.local.audit_journal import (
    fold_journal,
    journal_file_name,
    journal_files,
    write_journal,
)
from offsetlake.local.home import LocalHome
from offsetlake.local.locks import HomeInUseError, pipeline_run_lock
from offsetlake.local.warehouse_gold import LocalGoldStore

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def records(run_id: str, stage: audit.Stage = audit.Stage.PLAN, rows: int = 2) -> list[tuple[Any, ...]]:
    info = audit.RunInfo(run_id, audit.Mode.APPLY, T0, None)
    plan = [
        PlanRow("east", f"app-{index}", "orders", 0, 5, 5, 3, Action.APPLY, "r", T0, "checkpoint")
        for index in range(rows)
    ]
    if stage is audit.Stage.PLAN:
        return audit.plan_records(plan, info)
    return audit.result_records(plan, [], info)


def latest_table(rows: int, *, tz: str | None) -> pa.Table:
    """latest_offsets as Spark lays it out (contract/tables.py columns)."""
    moments = [T0 + timedelta(seconds=index) for index in range(rows)]
    if tz is None:
        moments = [moment.replace(tzinfo=None) for moment in moments]
    stamp = pa.timestamp("us", tz=tz)
    columns = {
        "source_cluster": pa.array(["east"] * rows),
        "consumer_group": pa.array([f"app-{index}" for index in range(rows)]),
        "topic": pa.array(["orders"] * rows),
        "partition": pa.array([0] * rows, pa.int32()),
        "downstream_offset": pa.array(range(rows), pa.int64()),
        "upstream_offset": pa.array([index + 10 for index in range(rows)], pa.int64()),
        "method": pa.array(["checkpoint"] * rows),
        "metadata": pa.array([None] * rows, pa.string()),
        "source_timestamp": pa.array(moments, stamp),
        "valid_from": pa.array(moments, stamp),
        "valid_to": pa.array([None] * rows, stamp),
        "methods_disagree": pa.array([False] * rows),
        "last_observed_at": pa.array(moments, stamp),
    }
    assert list(columns) == LATEST_OFFSETS.column_names
    return pa.table(columns)


def test_int96_and_microsecond_files_of_one_table_read_as_the_same_utc_instants(tmp_path: Path) -> None:
    table_dir = tmp_path / "warehouse" / "offsetlake.db" / "latest_offsets"
    table_dir.mkdir(parents=True)
    # Spark's default: INT96, which carries no zone (read as UTC); and TIMESTAMP_MICROS adjusted to UTC.
    pq.write_table(
        latest_table(2, tz=None), table_dir / "part-00000.parquet", use_deprecated_int96_timestamps=True
    )
    pq.write_table(latest_table(3, tz="UTC").slice(2), table_dir / "part-00001.parquet")
    (table_dir / "_SUCCESS").touch()
    (table_dir / ".part-00000.parquet.crc").write_bytes(b"not parquet")

    offsets = sorted(
        LocalGoldStore(LocalHome(tmp_path)).latest_offsets(), key=lambda offset: offset.consumer_group
    )

    assert [offset.source_timestamp for offset in offsets] == [T0 + timedelta(seconds=i) for i in range(3)]
    assert all(offset.observed_at == offset.source_timestamp for offset in offsets)
    assert {offset.source_timestamp.utcoffset() for offset in offsets} == {timedelta(0)}
    assert [(offset.method, offset.metadata) for offset in offsets] == [("checkpoint", "")] * 3
    assert LocalGoldStore(LocalHome(tmp_path)).count_translations() == 3
    assert len(LocalGoldStore(LocalHome(tmp_path)).latest_offsets(Selection(groups="app-1|app-9"))) == 1


def test_a_table_without_data_files_reads_as_empty(tmp_path: Path) -> None:
    table_dir = tmp_path / "warehouse" / "offsetlake.db" / "latest_offsets"
    table_dir.mkdir(parents=True)
    (table_dir / "_SUCCESS").touch()

    assert LocalGoldStore(LocalHome(tmp_path)).latest_offsets() == []
    assert LocalGoldStore(LocalHome(tmp_path)).count_translations() == 0


def test_gold_is_not_read_while_a_pipeline_update_runs_on_the_home(tmp_path: Path) -> None:
    with (
        pipeline_run_lock(LocalHome(tmp_path)),
        pytest.raises(HomeInUseError, match="in use by a pipeline update"),
    ):
        LocalGoldStore(LocalHome(tmp_path)).latest_offsets()
    assert LocalGoldStore(LocalHome(tmp_path)).latest_offsets() == []


def test_each_audit_batch_is_one_file_named_by_run_and_stage(tmp_path: Path) -> None:
    plan, results = records("run-a"), records("run-a", audit.Stage.RESULT, rows=3)

    written = write_journal(LocalHome(tmp_path), "Offsetlake", plan + results)

    directory = tmp_path / "audit-pending" / "offsetlake"
    assert [path.name for path in written] == ["run-a.plan.parquet", "run-a.result.parquet"]
    assert journal_file_name("run-a", "plan") == "run-a.plan.parquet"
    assert sorted(path.name for path in directory.iterdir()) == ["run-a.plan.parquet", "run-a.result.parquet"]
    table = pq.read_table(directory / "run-a.result.parquet")
    assert table.schema.equals(APPLY_AUDIT.arrow_schema)  # the contract's spec, column for column
    assert table.num_rows == 3
    assert table.column("run_started_at").to_pylist() == [T0] * 3
    assert journal_files(LocalHome(tmp_path), "offsetlake") == sorted(written)

    # The same batch written again replaces its file: never twice the rows.
    write_journal(LocalHome(tmp_path), "offsetlake", plan)
    assert pq.read_table(directory / "run-a.plan.parquet").num_rows == len(plan)


def test_an_audit_write_that_dies_leaves_no_file_and_no_half_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_journal(LocalHome(tmp_path), "offsetlake", records("run-a"))
    before = (tmp_path / "audit-pending" / "offsetlake" / "run-a.plan.parquet").read_bytes()

    def dies_half_way(table: pa.Table, where: Any, **kwargs: Any) -> None:
        where.write(b"PAR1 half a file")
        raise OSError("No space left on device")

    monkeypatch.setattr(audit_journal.pq, "write_table", dies_half_way)
    for run_id in ("run-a", "run-b"):
        with pytest.raises(OSError, match="No space left"):
            write_journal(LocalHome(tmp_path), "offsetlake", records(run_id))

    directory = tmp_path / "audit-pending" / "offsetlake"
    assert [path.name for path in directory.iterdir()] == ["run-a.plan.parquet"]
    assert (directory / "run-a.plan.parquet").read_bytes() == before


def test_pending_audit_rows_are_the_arrow_stores_audit(tmp_path: Path) -> None:
    store = LocalGoldStore(LocalHome(tmp_path))
    info = audit.RunInfo("run-a", audit.Mode.APPLY, T0, None)
    row = PlanRow(
        "east", "app", "orders", 0, 5, 5, 3, Action.APPLY, "r", T0 - timedelta(minutes=1), "checkpoint"
    )
    assert store.append_audit(audit.plan_records([row], info)) == 1
    assert store.last_applied() == {}

    from offsetlake.apply.executor import Outcome, PartitionResult

    done = PartitionResult(row, Outcome.APPLIED, 5, 5, None, T0 + timedelta(seconds=3))
    store.append_audit(audit.result_records([row], [done], info))

    assert store.last_applied() == {
        ("app", "orders", 0): LastApplied(T0 - timedelta(minutes=1), T0 + timedelta(seconds=3), 5)
    }
    assert store.last_applied(Selection(groups="other")) == {}


def test_an_unreadable_pending_file_is_set_aside_not_deleted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = tmp_path / "audit-pending" / "offsetlake"
    directory.mkdir(parents=True)
    (directory / "run-x.plan.parquet").write_bytes(b"garbage")

    assert fold_journal(None, LocalHome(tmp_path)) == 0  # type: ignore[arg-type]  # nothing left to fold

    assert [path.name for path in directory.iterdir()] == ["run-x.plan.parquet.unreadable"]
    assert "cannot be folded" in capsys.readouterr().err
    assert LocalGoldStore(LocalHome(tmp_path)).last_applied() == {}


class EmptyGold:
    """A GoldStore with nothing in it; records what the run asked."""

    schema = "offsetlake"
    catalog = None

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        answers: dict[str, Any] = {
            "latest_offsets": [], "offsets_as_of": [], "count_translations": 0, "cluster_health": [],
            "failover_data_loss": [], "last_applied": {}, "append_audit": 0, "checkpoint_positions": {},
        }  # fmt: skip

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            return answers[name]

        return call


def test_run_apply_reads_the_store_it_is_handed() -> None:
    store = EmptyGold()
    assert isinstance(store, GoldStore)
    request = ApplyRequest(dry_run=True, target_bootstrap_servers="localhost:1")

    result = run_apply(request, store=store)  # type: ignore[arg-type]

    assert result.status is ApplyStatus.OK
    assert isinstance(result.reasons[0], NoTranslation)
    assert store.calls == ["cluster_health", "latest_offsets"]
