"""Gold read only when whole (issue 31): the Arrow store reads a streaming table's files as Spark's
file sink log commits them, holds the home's run lock shared from its first read until it is closed,
puts back gold an interrupted update left half-written, and a run refuses an emptied gold that bronze
contradicts unless asked for the checkpoint tail alone."""

from __future__ import annotations

import io
import json
import signal
import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from offsetlake.apply import run as apply_run
from offsetlake.apply.planner import Selection
from offsetlake.apply.run import ApplyRequest, ApplyStatus, run_apply
from offsetlake.cli import pipeline as cli_pipeline
from offsetlake.cli import stores
from offsetlake.cli.context import Context
from offsetlake.cli.main import run_command
from offsetlake.codecs.mm2 import Checkpoint
from offsetlake.contract.gold import GoldOffset, GoldTableError
from offsetlake.contract.settings import PipelineSettings
from offsetlake.contract.tables import CLUSTER_HEALTH, LATEST_OFFSETS
from offsetlake.errors import ExternalError, InvalidValueError, StopSignalError
from offsetlake.kafka.checkpoint_tail import CheckpointTail, TailRecord
from offsetlake.local.gold_guard import GoldGuard
from offsetlake.local.home import LocalHome
from offsetlake.local.locks import HomeInUseError, RunLockHold, pipeline_run_lock
from offsetlake.local.warehouse_gold import LocalGoldStore, committed_files
from offsetlake.mirror.clusters import ClusterEndpoint
from offsetlake.mirror.policy import ReplicationPolicy

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
_TYPES = {
    "STRING": pa.string(),
    "INT": pa.int32(),
    "BIGINT": pa.int64(),
    "BOOLEAN": pa.bool_(),
    "DOUBLE": pa.float64(),
    "TIMESTAMP": pa.timestamp("us", tz="UTC"),
}


def table_dir(home: Path, name: str) -> Path:
    return home / "warehouse" / "offsetlake.db" / name


def health(cluster: str, minutes: int, *, reachable: bool = True) -> dict[str, Any]:
    return {
        "cluster": cluster,
        "role": "source",
        "bootstrap_servers": f"{cluster}:9092",
        "reachable": reachable,
        "error": None if reachable else "timed out",
        "checked_at": T0 + timedelta(minutes=minutes),
        "probe_seconds": 0.1,
    }


def latest(group: str, offset: int) -> dict[str, Any]:
    return {
        "source_cluster": "east",
        "consumer_group": group,
        "topic": "east.orders",
        "partition": 0,
        "downstream_offset": offset,
        "upstream_offset": offset + 10,
        "method": "checkpoint",
        "metadata": "",
        "source_timestamp": T0,
        "valid_from": T0,
        "valid_to": None,
        "methods_disagree": False,
        "last_observed_at": T0,
    }


def write_part(directory: Path, name: str, rows: list[dict[str, Any]], columns: Any) -> Path:
    """One Parquet part file of a table with ``columns`` (contract/tables.py (name, type, comment))."""
    directory.mkdir(parents=True, exist_ok=True)
    schema = pa.schema([(column, _TYPES[kind]) for column, kind, _ in columns])
    path = directory / name
    pq.write_table(pa.Table.from_pylist(rows, schema), path)
    return path


def write_batch(log: Path, name: str, entries: list[tuple[Path, str]], *, version: str = "v1") -> None:
    """One batch of a file sink log as Spark writes it: the version, then one JSON entry per line."""
    log.mkdir(parents=True, exist_ok=True)
    lines = [version] + [
        json.dumps({"path": path.as_uri(), "size": 1, "isDir": False, "modificationTime": 0,
                    "blockReplication": 1, "blockSize": 1, "action": action})
        for path, action in entries
    ]  # fmt: skip
    (log / name).write_text("\n".join(lines), encoding="utf-8")


def test_a_streaming_table_is_the_files_its_sink_log_commits(tmp_path: Path) -> None:
    """Batches 0 and 1 were compacted into 2.compact (and deleted by Spark's cleanup); batch 3 adds a
    file and deletes one; a killed batch 4 left its part file but never committed it."""
    directory = table_dir(tmp_path, CLUSTER_HEALTH.name)
    p0 = write_part(directory, "part-0.parquet", [health("east", 0)], CLUSTER_HEALTH.columns)
    p1 = write_part(directory, "part-1.parquet", [health("west", 1)], CLUSTER_HEALTH.columns)
    p2 = write_part(directory, "part-2.parquet", [health("east", 2, reachable=False)], CLUSTER_HEALTH.columns)
    p3 = write_part(directory, "part-3.parquet", [health("tgt", 3)], CLUSTER_HEALTH.columns)
    write_part(
        directory, "part-4-orphan.parquet", [health("east", 9), health("ghost", 9)], CLUSTER_HEALTH.columns
    )
    log = directory / "_spark_metadata"
    write_batch(log, "2.compact", [(p0, "add"), (p1, "add"), (p2, "add")])
    write_batch(log, "3", [(p3, "add"), (p1, "delete")])
    (log / ".3.crc").write_bytes(b"crc")
    (log / ".4.9d3c.tmp").write_text("v1\n", encoding="utf-8")  # a batch being written: not committed

    assert sorted(committed_files(log)) == [p0, p2, p3]
    with LocalGoldStore(LocalHome(tmp_path)) as store:
        checks = {check.cluster: check for check in store.cluster_health()}
    assert sorted(checks) == ["east", "tgt"]
    assert checks["east"].checked_at == T0 + timedelta(minutes=2)
    assert not checks["east"].reachable
    assert checks["east"].last_reachable_at == T0


def test_a_sink_log_spark_could_not_follow_is_one_clear_error(tmp_path: Path) -> None:
    directory = table_dir(tmp_path, CLUSTER_HEALTH.name)
    part = write_part(directory, "part-0.parquet", [health("east", 0)], CLUSTER_HEALTH.columns)
    log = directory / "_spark_metadata"
    write_batch(log, "0", [(part, "add")])
    write_batch(log, "2", [(part, "add")])
    with LocalGoldStore(LocalHome(tmp_path)) as store, pytest.raises(GoldTableError, match="lacks batch 1"):
        store.cluster_health()

    write_batch(log, "1", [(part, "add")], version="v2")
    with (
        LocalGoldStore(LocalHome(tmp_path)) as store,
        pytest.raises(GoldTableError, match="expected log version v1"),
    ):
        store.cluster_health()

    (log / "1").write_text('v1\n{"path": "file:///x"}', encoding="utf-8")
    with (
        LocalGoldStore(LocalHome(tmp_path)) as store,
        pytest.raises(GoldTableError, match="line 2: not a sink log"),
    ):
        store.cluster_health()


def test_an_empty_sink_log_is_an_empty_table_whatever_lies_in_the_directory(tmp_path: Path) -> None:
    directory = table_dir(tmp_path, CLUSTER_HEALTH.name)
    write_part(directory, "part-0.parquet", [health("east", 0)], CLUSTER_HEALTH.columns)
    (directory / "_spark_metadata").mkdir()
    with LocalGoldStore(LocalHome(tmp_path)) as store:
        assert store.cluster_health() == []


def test_an_open_store_keeps_pipeline_updates_off_gold_until_it_is_closed(tmp_path: Path) -> None:
    store = LocalGoldStore(LocalHome(tmp_path))
    with pipeline_run_lock(LocalHome(tmp_path)):  # nothing read yet: nothing held
        pass
    assert store.latest_offsets() == []
    other = LocalGoldStore(LocalHome(tmp_path))
    assert other.count_translations() == 0  # readers share the lock
    with (
        pytest.raises(HomeInUseError, match=r"is in use by process \d+"),
        pipeline_run_lock(LocalHome(tmp_path)),
    ):
        pass
    store.close()
    other.close()
    with (
        pipeline_run_lock(LocalHome(tmp_path)),
        pytest.raises(HomeInUseError, match="in use by a pipeline update"),
    ):
        store.latest_offsets()  # read again: held again, so refused while a run holds it
    with store:
        store.latest_offsets()
    with pipeline_run_lock(LocalHome(tmp_path)):
        pass


def test_a_store_may_wait_a_bounded_time_for_an_update_to_end(tmp_path: Path) -> None:
    read: list[object] = []
    store = LocalGoldStore(LocalHome(tmp_path), lock_wait_s=600)
    reader = threading.Thread(target=lambda: read.append(store.latest_offsets()))
    with pipeline_run_lock(LocalHome(tmp_path)):
        reader.start()
        reader.join(0.5)
        assert reader.is_alive()  # waiting: the run holds the lock
    reader.join(60)
    assert read == [[]]
    with pytest.raises(HomeInUseError), pipeline_run_lock(LocalHome(tmp_path)):
        pass
    store.close()

    waited = LocalGoldStore(LocalHome(tmp_path), lock_wait_s=0.2)
    with pipeline_run_lock(LocalHome(tmp_path)), pytest.raises(HomeInUseError, match=r"\(waited 0.2 s\)"):
        waited.latest_offsets()


def truncated_by_a_killed_update(home: Path) -> Path:
    """latest_offsets with three rows, then an update that backed gold up and emptied the view, and
    was killed before its runner could put it back (the marker stays)."""
    directory = table_dir(home, LATEST_OFFSETS.name)
    write_part(directory, "part-0.parquet", [latest(f"app-{n}", n) for n in range(3)], LATEST_OFFSETS.columns)
    with pipeline_run_lock(LocalHome(home)):
        GoldGuard(LocalHome(home)).protect()
        for part in directory.glob("part-*"):
            part.unlink()
    assert GoldGuard(LocalHome(home)).interrupted
    return directory


def test_gold_an_interrupted_update_emptied_is_put_back_before_it_is_read(tmp_path: Path) -> None:
    truncated_by_a_killed_update(tmp_path)

    with LocalGoldStore(LocalHome(tmp_path)) as store:
        offsets = store.latest_offsets()

    assert sorted(offset.consumer_group for offset in offsets) == ["app-0", "app-1", "app-2"]
    assert not GoldGuard(LocalHome(tmp_path)).interrupted


def test_gold_to_put_back_while_another_reader_holds_the_home_is_refused_in_one_line(tmp_path: Path) -> None:
    directory = truncated_by_a_killed_update(tmp_path)
    reader = RunLockHold(LocalHome(tmp_path))
    assert reader.take()
    with pytest.raises(HomeInUseError, match=r"an interrupted pipeline update left gold .* to be put back"):
        LocalGoldStore(LocalHome(tmp_path)).latest_offsets()
    assert list(directory.glob("part-*")) == []  # untouched
    reader.close()
    with LocalGoldStore(LocalHome(tmp_path)) as store:
        assert len(store.latest_offsets()) == 3


class Gold:
    """A GoldStore whose latest_offsets is empty and whose bronze holds checkpoints of two topics."""

    schema = "offsetlake"
    catalog = None

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.answers: dict[str, Any] = {
            "latest_offsets": [], "count_translations": 0, "cluster_health": [], "close": None,
            "checkpoint_positions": {("east.checkpoints.internal", 0): 7, ("west.checkpoints", 1): 3},
        }  # fmt: skip

    def __getattr__(self, name: str) -> Any:
        answers = self.answers

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            return answers[name]

        return call


def test_gold_emptied_while_bronze_holds_checkpoints_is_refused_unless_the_tail_alone_is_asked_for() -> None:
    request = ApplyRequest(
        dry_run=False, target_bootstrap_servers="localhost:1", checkpoint_tail=ReplicationPolicy()
    )
    with pytest.raises(GoldTableError) as refused:
        run_apply(request, store=Gold())  # type: ignore[arg-type]
    message = str(refused.value)
    assert "`offsetlake`.`latest_offsets` is empty while bronze_checkpoints holds the checkpoint " in message
    assert "records of 2 checkpoint topic-partition(s)" in message
    assert "--tail-only" in message
    assert "\n" not in message

    # Without the tail, an empty gold is "no translation" as before; the tail alone needs the tail.
    without_tail = run_apply(replace(request, checkpoint_tail=None), store=Gold())  # type: ignore[arg-type]
    assert without_tail.status is ApplyStatus.FAILED
    with pytest.raises(InvalidValueError, match="--tail-only plans from the target's checkpoint records"):
        run_apply(replace(request, checkpoint_tail=None, tail_only=True), store=Gold())  # type: ignore[arg-type]


class _PlannedError(Exception):
    """Raised where the run would read the target: carries the rows it plans from."""

    def __init__(self, offsets: list[GoldOffset]) -> None:
        super().__init__()
        self.offsets = offsets


def test_tail_only_on_a_healthy_gold_keeps_golds_fresher_translation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 46: the source group was reset from 140 to 20 and gold translated the new snapshot (15);
    the tail's newest checkpoint is still of 140. --tail-only once dropped gold and planned 140."""
    fresh = GoldOffset("east", "app", "east.orders", 0, 15, T0, "offset_sync", T0, upstream_offset=20)
    stale = TailRecord(
        "east", "east.checkpoints.internal", 0, 4, T0 + timedelta(hours=1),
        Checkpoint("app", "east.orders", 0, 140, 140, ""),
    )  # fmt: skip
    tail = CheckpointTail((stale,), ("east.checkpoints.internal",), 0.1)
    monkeypatch.setattr(apply_run, "read_checkpoint_tail", lambda *args, **kwargs: tail)

    def planned(run: Any, admin: Any, offsets: list[GoldOffset]) -> None:
        raise _PlannedError(list(offsets))

    monkeypatch.setattr(apply_run, "_read_target", planned)
    store = Gold()
    store.answers |= {"latest_offsets": [fresh], "count_translations": 1, "failover_data_loss": []}
    request = ApplyRequest(
        dry_run=True,
        target_bootstrap_servers="localhost:1",
        checkpoint_tail=ReplicationPolicy(),
        tail_only=True,
    )
    with pytest.raises(_PlannedError) as plan:
        run_apply(request, store=store)  # type: ignore[arg-type]
    assert [(o.downstream_offset, o.method) for o in plan.value.offsets] == [(15, "offset_sync")]


def test_a_run_holds_the_home_from_its_first_read_and_lets_go_when_it_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refused: list[str] = []

    class Watched(LocalGoldStore):
        def latest_offsets(self, selection: Selection | None = None) -> list[Any]:
            try:
                with pipeline_run_lock(LocalHome(tmp_path)):
                    refused.append("")
            except HomeInUseError as error:
                refused.append(str(error))
            return super().latest_offsets(selection)

    monkeypatch.setattr(stores, "gold_store_for", lambda request, home: Watched(LocalHome(tmp_path)))
    err = io.StringIO()
    # `offsetlake plan` opens the store, runs on it, and closes it (cli/apply.py).
    assert run_command(["plan", "--target", "localhost:1"], Context(out=io.StringIO(), err=err)) == 0

    assert "no translation in gold" in err.getvalue()  # gold_rows == 0
    assert len(refused) == 1
    assert "is in use by process" in refused[0]  # cluster_health, the first read, took the lock
    with pipeline_run_lock(LocalHome(tmp_path)):
        pass


def test_the_sync_loop_skips_an_update_while_a_run_reads_gold_and_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Server:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.url = "sc://localhost:1"

        def __enter__(self) -> Server:
            return self

        def __exit__(self, *args: object) -> None:
            pass

        def alive(self) -> bool:
            return True

    updates: list[int] = []

    def update(*args: Any, **kwargs: Any) -> Any:
        updates.append(len(updates) + 1)
        if len(updates) == 1:
            with pipeline_run_lock(
                LocalHome(tmp_path)
            ):  # what run_pipeline does first: refused by the reader
                pass
        raise StopSignalError(signal.SIGTERM)

    monkeypatch.setattr(cli_pipeline, "WarmServer", Server)
    monkeypatch.setattr(cli_pipeline, "run_pipeline", update)
    out = io.StringIO()
    with LocalGoldStore(LocalHome(tmp_path)) as reader:
        reader.latest_offsets()
        with pytest.raises(StopSignalError):
            cli_pipeline.run_every(
                PipelineSettings("t:9092", (ClusterEndpoint("east", "e:9092"),)),
                LocalHome(tmp_path),
                timedelta(microseconds=1),
                None,
                Context(out=out),
            )
    assert updates == [1, 2]
    assert " update 1: skipped: local home " in out.getvalue()


def test_a_home_whose_run_lock_cannot_be_opened_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "pipeline").write_text("a file where the directory should be", encoding="utf-8")
    with pytest.raises(ExternalError, match=r"cannot open local home .*'s run lock: \[Errno"):
        LocalGoldStore(LocalHome(tmp_path)).latest_offsets()
