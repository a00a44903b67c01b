"""Gold never shrinks locally: a failed or interrupted update cannot erase what gold held before.

The open-source pipeline engine rewrites a materialized view in place, so an update that fails
or is interrupted after it started rewriting leaves ``offset_history``, ``latest_offsets`` and
the replication-progress views empty (measured: every translation -> 0 rows). On Databricks, a
materialized view refresh is a Delta transaction and a failed update leaves the previous version;
locally the tables are plain Parquet directories, so the runner keeps the last complete version
itself:

1. before an update, each gold table's files are hard-linked into a backup (Parquet files are
   never modified in place, so this costs one link per file, not a copy); then a marker naming
   the tables backed up is put in place, atomically: a marker only ever names a complete backup;
2. after the update, the marker is rewritten (atomically) to name only the tables whose flow did
   not complete, those get their backup back, the marker is removed, and only then the backup:
   a process killed at any point leaves either no marker (gold as the update left it, completed
   tables kept) or a marker naming complete backups, which the next start puts back again;
3. a marker left by a runner that was killed outright is honoured at the next start, before
   anything else runs, and by the next reader of gold (:func:`hold_whole_gold`), which may come
   first: a failover with the source down starts no update.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Final

from offsetlake.contract.tables import ALL_TABLES
from offsetlake.errors import ExternalError
from offsetlake.local.home import LocalHome
from offsetlake.local.locks import HomeInUseError, RunLockHold, check_home_free

# Every materialized view: the local engine empties one when an update fails or is interrupted.
GUARDED_TABLES: Final[tuple[str, ...]] = tuple(
    spec.name for spec in ALL_TABLES if spec.kind == "materialized_view"
)
_MARKER: Final = "UPDATE-IN-PROGRESS"
_MARKER_HEADER: Final = "a pipeline update is running; its runner restores these tables if it fails:"
_POLL_S: Final = 0.1


class GoldRecoveryError(ExternalError):
    """Gold was left half-written by an interrupted update and could not be put back."""


class GoldGuard:
    """Backup and restore of the local gold tables around one pipeline update."""

    def __init__(self, home: LocalHome, tables: Sequence[str] = GUARDED_TABLES) -> None:
        self._schema_dir = home.schema_dir
        self.backup_dir = home.gold_backup
        self._tables = tuple(tables)

    @property
    def _marker(self) -> Path:
        return self.backup_dir / _MARKER

    @property
    def interrupted(self) -> bool:
        """Whether an update's marker is there: while no run holds the lock, one was interrupted."""
        return self._marker.exists()

    def recover(self) -> list[str]:
        """Restore every table from a backup an interrupted runner left behind; the names restored."""
        if not self._marker.exists():
            return []
        return self.settle(completed=())

    def protect(self) -> None:
        """Back up the tables as they are now (before an update starts); the marker goes last."""
        if self.interrupted:
            raise GoldRecoveryError(f"{self._marker} names a backup not yet put back: recover() first")
        if self.backup_dir.exists():
            shutil.rmtree(self.backup_dir)  # what a settled run's cleanup did not finish: no marker names it
        self.backup_dir.mkdir(parents=True)
        backed_up = []
        for table in self._tables:
            source = self._schema_dir / table
            if source.is_dir():
                _link_tree(source, self.backup_dir / table)
                backed_up.append(table)
        self._name_backups(backed_up)

    def settle(self, completed: Collection[str]) -> list[str]:
        """After an update: restore each table not in ``completed``; drop the backup. Names restored.

        Crash-safe in this order: the marker first stops naming the completed tables, the others
        are restored (again, after a crash: each restore starts from the complete backup), the
        marker goes, and only then the backup it named."""
        restored = []
        if self._marker.exists():
            named = self._named_backups()
            restored = [table for table in named if table not in completed]
            if restored != named:
                self._name_backups(restored)
            for table in restored:
                target = self._schema_dir / table
                if target.exists():
                    shutil.rmtree(target)
                _link_tree(self.backup_dir / table, target)
            self._marker.unlink()
        if self.backup_dir.exists():
            shutil.rmtree(self.backup_dir)
        return restored

    def _name_backups(self, tables: Sequence[str]) -> None:
        """Put the marker in place naming ``tables`` (each backed up whole), in one rename."""
        partial = self.backup_dir / f".{_MARKER}"
        partial.write_text("".join(f"{line}\n" for line in (_MARKER_HEADER, *tables)))
        partial.replace(self._marker)

    def _named_backups(self) -> list[str]:
        """The tables the marker names. An older offsetlake's marker names none: then every table
        with a backup, as that version restored."""
        header, *tables = self._marker.read_text().splitlines() or [""]
        if header == _MARKER_HEADER:
            return tables
        return [table for table in self._tables if (self.backup_dir / table).is_dir()]


def hold_whole_gold(home: LocalHome, *, wait_s: float = 0.0) -> RunLockHold:
    """The home's run lock held shared (no update can start until it is closed), with gold whole:
    a backup an interrupted update left is put back first, under the lock taken exclusively for
    that moment. Waits up to ``wait_s`` for an update (or readers holding off the repair) to end,
    then refuses in one line."""
    try:
        lock = RunLockHold(home)
    except OSError as error:
        raise ExternalError(f"cannot open local home {home}'s run lock: {error}") from error
    deadline = time.monotonic() + wait_s
    try:
        while (refusal := _hold_whole(lock, home)) is not None:
            if time.monotonic() >= deadline:
                waited = f" (waited {wait_s:g} s)" if wait_s > 0 else ""
                raise HomeInUseError(refusal + waited)
            time.sleep(_POLL_S)
    except BaseException:
        lock.close()
        raise
    return lock


def _hold_whole(lock: RunLockHold, home: LocalHome) -> str | None:
    """One attempt of :func:`hold_whole_gold`: None when held with gold whole, else why not."""
    if not lock.take():
        return lock.refusal()
    guard = GoldGuard(home)
    if not guard.interrupted:
        return None
    if not lock.take(exclusive=True):
        return (
            f"an interrupted pipeline update left gold on local home {home} to be put back from "
            f"{guard.backup_dir}, and another process is reading the home; retry when it is done"
        )
    check_home_free(home)  # nothing else writes gold: a killed run's Spark may live on
    try:
        guard.recover()
    except OSError as error:
        raise GoldRecoveryError(
            f"an interrupted pipeline update left gold on local home {home} half-written and putting "
            f"it back from {guard.backup_dir} failed: {error}"
        ) from error
    if not lock.take():  # flock converts in place; were it not atomic, an update may have come first
        return f"a pipeline update took local home {home} as gold was put back"
    return None


def _link_tree(source: Path, destination: Path) -> None:
    shutil.copytree(source, destination, copy_function=os.link)
