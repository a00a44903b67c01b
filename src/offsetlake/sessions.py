"""Where a command runs, and its Spark session: the Databricks runtime's there, a local one elsewhere.

Asked by the entry points only (the CLI, which is also the Databricks job tasks' entry): apply and
mm2_reset take the store or session they are given and never ask where they run.

On Databricks (a classic job cluster or serverless jobs) the session belongs to the runtime: it is
taken the way the Databricks CLI's job template takes it, ``from databricks.sdk.runtime import
spark``, and a local JVM is never started there (it would see none of the workspace's tables, and
on serverless there is no JVM to start). Off Databricks the CLI's shared local session is used
(``offsetlake.local.spark.get_local_spark``).

Where we are is decided by ``DATABRICKS_RUNTIME_VERSION`` (set on job clusters, e.g. ``17.3``,
and on serverless, e.g. ``client.4.9``) or, without it, by ``databricks.sdk.runtime`` reporting a
non-local implementation. That module is imported only when it can answer: off Databricks its
import tries to authenticate a workspace client (seconds, then a ``ValueError`` without
credentials), so it is not imported on a laptop unless something already did, or the runtime's
``dbruntime`` package is present.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from importlib import import_module
from importlib.util import find_spec
from types import ModuleType
from typing import TYPE_CHECKING, Any

from offsetlake.errors import ExternalError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from offsetlake.local.home import LocalHome

RUNTIME_ENV = "DATABRICKS_RUNTIME_VERSION"
RUNTIME_MODULE = "databricks.sdk.runtime"
# Set when the runtime gives this process its JVM (classic driver) or a Spark Connect endpoint:
# only then may SparkSession.builder.getOrCreate() be called, as it attaches instead of launching.
ATTACH_ENV = ("PYSPARK_GATEWAY_PORT", "SPARK_REMOTE")


class NoDatabricksSessionError(ExternalError):
    """On Databricks, but the runtime gives no Spark session (and a local one must not start)."""


def _runtime_module() -> ModuleType | None:
    """``databricks.sdk.runtime`` when it can be had without guessing, else None.

    Already imported: that module. Not imported: imported only if the Databricks runtime's own
    ``dbruntime`` package is present (off Databricks the import tries to authenticate and fails).
    Any failure to import means no runtime module.
    """
    module = sys.modules.get(RUNTIME_MODULE)
    if module is not None:
        return module
    try:
        if find_spec("dbruntime") is None:
            return None
        return import_module(RUNTIME_MODULE)
    except Exception:  # the SDK raises ValueError (auth) or anything at import
        return None


def on_databricks(environ: Mapping[str, str] | None = None) -> bool:
    """Whether this process runs on Databricks compute (a job cluster, serverless, a notebook)."""
    environ = os.environ if environ is None else environ
    if environ.get(RUNTIME_ENV):
        return True
    runtime = _runtime_module()
    return runtime is not None and getattr(runtime, "is_local_implementation", True) is False


def databricks_session(environ: Mapping[str, str] | None = None) -> SparkSession:
    """The runtime's session; ``NoDatabricksSessionError`` when it has none. Never starts a JVM.

    In order: ``databricks.sdk.runtime.spark`` (what the CLI's job template uses); the session
    PySpark already has (``SparkSession.getActiveSession()``, which never creates one); and, only
    when the runtime hands this process its JVM (``PYSPARK_GATEWAY_PORT``, a classic cluster's
    driver) or a Spark Connect endpoint (``SPARK_REMOTE``), ``SparkSession.builder.getOrCreate()``,
    which then attaches to that instead of launching a JVM.
    """
    environ = os.environ if environ is None else environ
    runtime = _runtime_module()
    if runtime is None and environ.get(RUNTIME_ENV):
        # On Databricks the SDK ships with the runtime; import it even without `dbruntime`.
        try:
            runtime = import_module(RUNTIME_MODULE)
        except Exception:  # reported below as "no session"
            runtime = None
    spark: Any = getattr(runtime, "spark", None) if runtime is not None else None
    if spark is None:
        spark = _active_session()
    if spark is None and any(environ.get(name) for name in ATTACH_ENV):
        spark = _attached_session()
    if spark is None:
        where = f"{RUNTIME_ENV}={environ[RUNTIME_ENV]}" if environ.get(RUNTIME_ENV) else RUNTIME_MODULE
        raise NoDatabricksSessionError(
            f"running on Databricks ({where}) but no Spark session is available ({RUNTIME_MODULE}"
            ".spark is None, no active PySpark session, no runtime JVM or Spark Connect endpoint to "
            "attach to); a local Spark is never started on Databricks"
        )
    return spark


def _active_session() -> Any:
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        return None
    try:
        return SparkSession.getActiveSession()
    except Exception:  # no JVM/connect session to ask: no session
        return None


def _attached_session() -> Any:
    from pyspark.sql import SparkSession

    try:
        return SparkSession.builder.getOrCreate()
    except Exception:  # reported by the caller as "no session"
        return None


def get_spark(environ: Mapping[str, str] | None = None, *, home: LocalHome | None = None) -> SparkSession:
    """The runtime's session on Databricks (never a local JVM there), the local one (on ``home``)
    elsewhere.

    Only a session, never a write: a local command that reads ``apply_audit`` through it folds the
    home's audit journal first, as its own step (offsetlake.local.audit_journal.fold_journal).
    """
    if on_databricks(environ):
        return databricks_session(environ)
    from offsetlake.local.spark import get_local_spark

    return get_local_spark(home)
