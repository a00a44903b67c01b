"""GoldGuard: a failed or interrupted update never leaves the local gold tables with less than before."""

from __future__ import annotations

from pathlib import Path

import pytest

from offsetlake.local.gold_guard import GUARDED_TABLES, GoldGuard


def _table(home: Path, name: str) -> Path:
    return home / "warehouse" / "offsetlake.db" / name


def _write(home: Path, name: str, files: dict[str, bytes]) -> None:
    table = _table(home, name)
    table.mkdir(parents=True, exist_ok=True)
    for file, data in files.items():
        (table / file).write_bytes(data)


def _files(home: Path, name: str) -> dict[str, bytes]:
    table = _table(home, name)
    return {path.name: path.read_bytes() for path in sorted(table.iterdir())} if table.exists() else {}


def _rewrite(home: Path, name: str, files: dict[str, bytes]) -> None:
    """What the engine does to a materialized view: old files unlinked, new ones written."""
    for path in _table(home, name).iterdir():
        path.unlink()
    _write(home, name, files)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    for name in GUARDED_TABLES:
        _write(tmp_path, name, {"part-0.parquet": f"{name} v1".encode(), "_SUCCESS": b""})
    return tmp_path


def test_tables_the_update_did_not_complete_get_their_previous_files_back(home: Path) -> None:
    guard = GoldGuard(home)
    guard.protect()
    _rewrite(home, "latest_offsets", {})  # truncated, then the update failed
    _rewrite(home, "offset_history", {"part-9.parquet": b"offset_history v2"})  # completed
    others = set(GUARDED_TABLES) - {"offset_history", "latest_offsets"}  # replication progress, data loss
    assert guard.settle(completed={"offset_history", *others}) == ["latest_offsets"]
    assert _files(home, "latest_offsets") == {"_SUCCESS": b"", "part-0.parquet": b"latest_offsets v1"}
    assert _files(home, "offset_history") == {"part-9.parquet": b"offset_history v2"}
    assert not (home / "pipeline" / "gold-backup").exists()


def test_a_successful_update_keeps_its_new_gold(home: Path) -> None:
    guard = GoldGuard(home)
    guard.protect()
    for name in GUARDED_TABLES:
        _rewrite(home, name, {"new.parquet": b"v2"})
    assert guard.settle(completed=GUARDED_TABLES) == []
    assert all(_files(home, name) == {"new.parquet": b"v2"} for name in GUARDED_TABLES)


def test_a_runner_killed_outright_is_recovered_at_the_next_start(home: Path) -> None:
    GoldGuard(home).protect()
    for name in GUARDED_TABLES:
        _rewrite(home, name, {})  # the runner died here: nothing settled
    assert sorted(GoldGuard(home).recover()) == sorted(GUARDED_TABLES)
    assert _files(home, "latest_offsets")["part-0.parquet"] == b"latest_offsets v1"
    assert GoldGuard(home).recover() == []  # nothing left to recover


def test_the_backup_is_hard_links_not_copies(home: Path) -> None:
    GoldGuard(home).protect()
    original = _table(home, "latest_offsets") / "part-0.parquet"
    backup = home / "pipeline" / "gold-backup" / "latest_offsets" / "part-0.parquet"
    assert backup.stat().st_ino == original.stat().st_ino


def test_a_first_update_has_nothing_to_restore(tmp_path: Path) -> None:
    guard = GoldGuard(tmp_path)
    guard.protect()
    _write(tmp_path, "latest_offsets", {"half.parquet": b"partial"})
    assert guard.settle(completed=()) == []
