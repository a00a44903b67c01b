"""Gold never shrinks locally: a failed or interrupted update cannot erase what gold held before.

The open-source pipeline engine rewrites a materialized view in place, so an update that fails
or is interrupted after it started rewriting leaves ``offset_history``, ``latest_offsets`` and
the replication-progress views empty (measured: every translation -> 0 rows). On Databricks, a
materialized view refresh is a Delta transaction and a failed update leaves the previous version;
locally the tables are plain Parquet directories, so the runner keeps the last complete version
itself:

1. before an update, each gold table's files are hard-linked into a backup (Parquet files are
   never modified in place, so this costs one link per file, not a copy) and a marker is written;
2. after the update, every gold table whose flow did not complete gets its backup back;
3. a marker left by a runner that was killed outright is honoured at the next start, before
   anything else runs.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Final

from offsetlake.local.spark import LOCAL_SCHEMA
from offsetlake.pipeline.tables import (
    FAILOVER_DATA_LOSS,
    LATEST_GROUP_OFFSETS,
    LATEST_OFFSETS,
    OFFSET_HISTORY,
    OFFSET_VERSIONS,
    REPLICATION_PROGRESS,
    REPLICATION_PROGRESS_HISTORY,
)

# Every materialized view: the local engine empties one when an update fails or is interrupted.
GUARDED_TABLES: Final[tuple[str, ...]] = (
    OFFSET_VERSIONS.name,
    LATEST_GROUP_OFFSETS.name,
    OFFSET_HISTORY.name,
    LATEST_OFFSETS.name,
    REPLICATION_PROGRESS_HISTORY.name,
    REPLICATION_PROGRESS.name,
    FAILOVER_DATA_LOSS.name,
)
_MARKER: Final = "UPDATE-IN-PROGRESS"


class GoldGuard:
    """Backup and restore of the local gold tables around one pipeline update."""

    def __init__(self, home: Path, tables: Sequence[str] = GUARDED_TABLES) -> None:
        self._schema_dir = home / "warehouse" / f"{LOCAL_SCHEMA}.db"
        self._backup_dir = home / "pipeline" / "gold-backup"
        self._tables = tuple(tables)

    @property
    def _marker(self) -> Path:
        return self._backup_dir / _MARKER

    def recover(self) -> list[str]:
        """Restore every table from a backup an interrupted runner left behind; the names restored."""
        if not self._marker.exists():
            return []
        return self.settle(completed=())

    def protect(self) -> None:
        """Back up the tables as they are now (before an update starts)."""
        if self._backup_dir.exists():
            shutil.rmtree(self._backup_dir)
        self._backup_dir.mkdir(parents=True)
        for table in self._tables:
            source = self._schema_dir / table
            if source.is_dir():
                _link_tree(source, self._backup_dir / table)
        self._marker.write_text("a pipeline update is running; its runner restores gold if it fails\n")

    def settle(self, completed: Collection[str]) -> list[str]:
        """After an update: restore each table not in ``completed``; drop the backup. Names restored."""
        restored = []
        if self._marker.exists():
            for table in self._tables:
                backup = self._backup_dir / table
                if table in completed or not backup.is_dir():
                    continue
                target = self._schema_dir / table
                if target.exists():
                    shutil.rmtree(target)
                _link_tree(backup, target)
                restored.append(table)
        if self._backup_dir.exists():
            shutil.rmtree(self._backup_dir)
        return restored


def _link_tree(source: Path, destination: Path) -> None:
    shutil.copytree(source, destination, copy_function=os.link)
