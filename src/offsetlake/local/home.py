"""Where offsetlake keeps its local state (clusters, warehouse, pipeline storage).

Everything local lives under one directory so `make clean` and tests can isolate it:
``$OFFSETLAKE_HOME``, or ``.offsetlake`` in the current directory. ``LocalHome`` is the one place
that knows its layout: every other module asks it for a path instead of joining names to the root.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from offsetlake.contract.tables import DEFAULT_SCHEMA

HOME_ENV: Final = "OFFSETLAKE_HOME"
LOCAL_SCHEMA: Final = DEFAULT_SCHEMA
"""The schema the local pipeline writes (Databricks: the bundle's catalog and schema)."""


@dataclass(frozen=True)
class LocalHome:
    """The layout of one local home: what lives where under ``root`` (docs/architecture.md, "Local state")."""

    root: Path

    @classmethod
    def resolve(cls, root: Path | None = None) -> LocalHome:
        """``root``, else ``$OFFSETLAKE_HOME``, else ``./.offsetlake``; created on first use."""
        path = Path(root or os.environ.get(HOME_ENV) or Path.cwd() / ".offsetlake").resolve()
        path.mkdir(parents=True, exist_ok=True)
        return cls(path)

    def __str__(self) -> str:
        """Its directory: what a message about the home names."""
        return str(self.root)

    # the local clusters (offsetlake_dev writes it, commands read it)
    @property
    def clusters_file(self) -> Path:
        return self.root / "clusters.json"

    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"

    @property
    def spark_log(self) -> Path:
        return self.logs_dir / "spark.log"

    # the warehouse and its metastore
    @property
    def warehouse(self) -> Path:
        return self.root / "warehouse"

    @property
    def schema_dir(self) -> Path:
        """The local schema's directory: one directory per table (Hive layout)."""
        return self.schema_dir_for(LOCAL_SCHEMA)

    def schema_dir_for(self, schema: str) -> Path:
        return schema_dir_in(self.warehouse, schema)

    @property
    def derby_home(self) -> Path:
        """Derby's system home (``derby.system.home``): the metastore's parent."""
        return self.root

    @property
    def metastore(self) -> Path:
        return self.root / "metastore_db"

    @property
    def derby_lock(self) -> Path:
        """Derby's own lock file: held (POSIX lock) by the one JVM that has the metastore open."""
        return self.metastore / "dbex.lck"

    @property
    def bin_dir(self) -> Path:
        """Executables the local runtime writes: Spark's Python-worker launcher (local/worker_python.py)."""
        return self.root / "bin"

    # the pipeline's storage, spec, logs and locks
    @property
    def pipeline_dir(self) -> Path:
        return self.root / "pipeline"

    @property
    def pipeline_storage(self) -> Path:
        """The spec's ``storage``: the flows' streaming checkpoints."""
        return self.pipeline_dir / "storage"

    @property
    def pipeline_spec(self) -> Path:
        return self.pipeline_dir / "spark-pipeline.yml"

    @property
    def connect_server_log(self) -> Path:
        return self.pipeline_dir / "connect-server.log"

    @property
    def last_run_log(self) -> Path:
        return self.pipeline_dir / "last-run.log"

    @property
    def run_lock(self) -> Path:
        return self.pipeline_dir / "run.lock"

    @property
    def sync_loop_lock(self) -> Path:
        return self.pipeline_dir / "sync-loop.lock"

    @property
    def stand_aside(self) -> Path:
        return self.pipeline_dir / "stand-aside"

    @property
    def stand_aside_ack(self) -> Path:
        return self.pipeline_dir / "stand-aside.ack"

    @property
    def gold_backup(self) -> Path:
        return self.pipeline_dir / "gold-backup"

    # audit rows a run without Spark wrote, until they are folded into the audit table
    @property
    def audit_journal(self) -> Path:
        return self.root / "audit-pending"

    def audit_journal_for(self, schema: str) -> Path:
        return self.audit_journal / schema.lower()


def schema_dir_in(warehouse: Path, schema: str) -> Path:
    """Where Spark's Hive catalog keeps ``schema``'s tables in ``warehouse`` (the home's, or the one
    a test session was given): ``<warehouse>/<schema>.db``, the name lower-cased as the metastore does."""
    return warehouse / f"{schema.lower()}.db"


def local_home() -> Path:
    """The root of all local state; created on first use."""
    return LocalHome.resolve().root
