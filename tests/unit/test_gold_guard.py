"""GoldGuard: a failed or interrupted update never leaves the local gold tables with less than before."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from offsetlake.local.gold_guard import GUARDED_TABLES, GoldGuard
from offsetlake.local.home import LocalHome


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
    guard = GoldGuard(LocalHome(home))
    guard.protect()
    _rewrite(home, "latest_offsets", {})  # truncated, then the update failed
    _rewrite(home, "offset_history", {"part-9.parquet": b"offset_history v2"})  # completed
    others = set(GUARDED_TABLES) - {"offset_history", "latest_offsets"}  # replication progress, data loss
    assert guard.settle(completed={"offset_history", *others}) == ["latest_offsets"]
    assert _files(home, "latest_offsets") == {"_SUCCESS": b"", "part-0.parquet": b"latest_offsets v1"}
    assert _files(home, "offset_history") == {"part-9.parquet": b"offset_history v2"}
    assert not (home / "pipeline" / "gold-backup").exists()


def test_a_successful_update_keeps_its_new_gold(home: Path) -> None:
    guard = GoldGuard(LocalHome(home))
    guard.protect()
    for name in GUARDED_TABLES:
        _rewrite(home, name, {"new.parquet": b"v2"})
    assert guard.settle(completed=GUARDED_TABLES) == []
    assert all(_files(home, name) == {"new.parquet": b"v2"} for name in GUARDED_TABLES)


def test_a_runner_killed_outright_is_recovered_at_the_next_start(home: Path) -> None:
    GoldGuard(LocalHome(home)).protect()
    for name in GUARDED_TABLES:
        _rewrite(home, name, {})  # the runner died here: nothing settled
    assert sorted(GoldGuard(LocalHome(home)).recover()) == sorted(GUARDED_TABLES)
    assert _files(home, "latest_offsets")["part-0.parquet"] == b"latest_offsets v1"
    assert GoldGuard(LocalHome(home)).recover() == []  # nothing left to recover


def test_the_backup_is_hard_links_not_copies(home: Path) -> None:
    GoldGuard(LocalHome(home)).protect()
    original = _table(home, "latest_offsets") / "part-0.parquet"
    backup = home / "pipeline" / "gold-backup" / "latest_offsets" / "part-0.parquet"
    assert backup.stat().st_ino == original.stat().st_ino


def test_a_first_update_has_nothing_to_restore(tmp_path: Path) -> None:
    guard = GoldGuard(LocalHome(tmp_path))
    guard.protect()
    _write(tmp_path, "latest_offsets", {"half.parquet": b"partial"})
    assert guard.settle(completed=()) == []


class _Crash(BaseException):
    """The process dying at this filesystem step (BaseException: no ``except Exception`` stops it)."""


_STEPS = ("unlink", "rmdir", "link", "replace", "rename")
"""Every filesystem change the guard makes goes through one of these (shutil.rmtree and copytree too)."""


@dataclass
class _Dying:
    """Counts the guard's filesystem changes and raises _Crash instead of change number ``at``."""

    at: int | None
    done: list[str] = field(default_factory=list)
    counting: bool = True

    def patch(self, monkeypatch: pytest.MonkeyPatch) -> None:
        for name in _STEPS:
            monkeypatch.setattr(os, name, self._step(name, getattr(os, name)))

    def _step(self, name: str, real: Callable[..., object]) -> Callable[..., object]:
        def change(*args: object, **kwargs: object) -> object:
            if self.counting:
                if len(self.done) == self.at:
                    raise _Crash(name)
                self.done.append(name)
            return real(*args, **kwargs)

        return change


V1 = {"_SUCCESS": b"", "part-0.parquet": b"v1 a", "part-1.parquet": b"v1 b", "part-2.parquet": b"v1 c"}
V2 = {"part-7.parquet": b"v2 a", "part-8.parquet": b"v2 b"}
COMPLETED = frozenset(GUARDED_TABLES[::2])


def _update(home: Path, *, crash: int | None, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """One update's guard: protect, the engine rewrites every table (the completed ones whole, the
    others truncated), settle; the process dies at the guard's filesystem change ``crash``. The
    guard's changes."""
    for name in GUARDED_TABLES:
        _write(home, name, V1)
    dying = _Dying(crash)
    with monkeypatch.context() as patched:
        dying.patch(patched)
        try:
            GoldGuard(LocalHome(home)).protect()
            dying.counting = False  # the engine's changes are not the guard's
            for name in GUARDED_TABLES:
                _rewrite(home, name, V2 if name in COMPLETED else {"part-9.parquet": b"half"})
            dying.counting = True
            GoldGuard(LocalHome(home)).settle(COMPLETED)
        except _Crash:
            pass
    return dying.done


def test_a_crash_at_any_step_of_the_guard_never_puts_a_partial_backup_over_gold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 46: killed while it deleted its backup, the guard left its marker beside a partial
    backup, and the next failover restored the partial copy over complete gold (a group missing).
    Here the process dies at each filesystem change in turn, then the next reader recovers: every
    table is whole, the old version or (once the update settled it as completed) the new one."""
    steps = len(_update(tmp_path / "whole", crash=None, monkeypatch=monkeypatch))
    assert steps > 2 * len(V1) * len(GUARDED_TABLES)  # links in, links back, deletions
    settled = None
    for crash in range(steps + 1):
        home = tmp_path / f"crash-{crash}"
        _update(home, crash=crash, monkeypatch=monkeypatch)
        GoldGuard(LocalHome(home)).recover()
        tables = {name: _files(home, name) for name in GUARDED_TABLES}
        for name, files in tables.items():
            assert files in (V1, V2) if name in COMPLETED else files == V1, (crash, name, sorted(files))
        if all(tables[name] == V2 for name in COMPLETED) and settled is None:
            settled = crash  # from here on the update's completed tables are kept
        assert settled is None or all(tables[name] == V2 for name in COMPLETED), (crash, settled)
        assert not GoldGuard(LocalHome(home)).interrupted
    assert settled is not None and settled < steps
