"""Which Spark session a job task takes: the Databricks runtime's on Databricks, never a local JVM
there; the local one elsewhere. No Spark: the runtime is a fake ``databricks.sdk.runtime``."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from offsetlake import sessions
from offsetlake.apply import run
from offsetlake.apply.store import SparkGoldStore
from offsetlake.cli import stores
from offsetlake.cli.context import Context
from offsetlake.errors import ExternalError, OffsetlakeError
from offsetlake.local import spark as local_spark
from offsetlake.local.home import LOCAL_SCHEMA, LocalHome
from offsetlake.local.warehouse_gold import LocalGoldStore

ENV_VARS = ("DATABRICKS_RUNTIME_VERSION", "PYSPARK_GATEWAY_PORT", "SPARK_REMOTE")


class FakeSession:
    """Stands in for the runtime's SparkSession."""


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delitem(sys.modules, sessions.RUNTIME_MODULE, raising=False)
    # No PySpark session of the test process may answer for the runtime.
    monkeypatch.setattr(sessions, "_active_session", lambda: None)


def _fake_runtime(monkeypatch: pytest.MonkeyPatch, *, spark: object | None, local: bool) -> types.ModuleType:
    module = types.ModuleType(sessions.RUNTIME_MODULE)
    module.spark = spark  # type: ignore[attr-defined]
    module.is_local_implementation = local  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, sessions.RUNTIME_MODULE, module)
    return module


def _local_spark_forbidden(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("get_local_spark called on Databricks")

    monkeypatch.setattr(local_spark, "get_local_spark", refuse)


def _local_spark_marker(monkeypatch: pytest.MonkeyPatch) -> object:
    marker = object()
    monkeypatch.setattr(local_spark, "get_local_spark", lambda *args, **kwargs: marker)
    return marker


def _apply_session(catalog: str | None = None) -> object:
    """The Spark session the apply job's gold store reads through."""
    store = stores.gold_store_for(
        run.ApplyRequest(dry_run=True, catalog=catalog), stores.command_home(Context())
    )
    assert isinstance(store, SparkGoldStore)
    return store.spark


@pytest.mark.parametrize("version", ["17.3", "client.4.9"])
def test_on_databricks_the_runtime_session_is_returned(monkeypatch: pytest.MonkeyPatch, version: str) -> None:
    """A job cluster (17.3) or serverless (client.*): databricks.sdk.runtime.spark, no local JVM."""
    monkeypatch.setenv("DATABRICKS_RUNTIME_VERSION", version)
    session = FakeSession()
    # The SDK falls back to its "local" implementation on Spark Connect runtimes; the env var wins.
    _fake_runtime(monkeypatch, spark=session, local=True)
    _local_spark_forbidden(monkeypatch)

    assert sessions.on_databricks()
    assert sessions.get_spark() is session
    assert _apply_session() is session


def test_runtime_reporting_a_non_local_implementation_is_databricks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without the env var, databricks.sdk.runtime's own verdict decides."""
    session = FakeSession()
    _fake_runtime(monkeypatch, spark=session, local=False)
    _local_spark_forbidden(monkeypatch)

    assert sessions.on_databricks()
    assert _apply_session() is session


def test_off_databricks_the_apply_job_reads_the_local_warehouse_without_spark(
    monkeypatch: pytest.MonkeyPatch, offsetlake_home: Path
) -> None:
    _fake_runtime(monkeypatch, spark=None, local=True)
    _local_spark_forbidden(monkeypatch)

    assert not sessions.on_databricks()
    store = stores.gold_store_for(run.ApplyRequest(dry_run=True), stores.command_home(Context()))
    assert isinstance(store, LocalGoldStore)
    assert (store.home, store.schema) == (LocalHome(offsetlake_home), LOCAL_SCHEMA)
    assert store.schema_dir == offsetlake_home / "warehouse" / "offsetlake.db"


def test_off_databricks_a_named_catalog_is_read_through_the_local_session(
    monkeypatch: pytest.MonkeyPatch, offsetlake_home: Path
) -> None:
    """Only Spark resolves a catalog: the local session then, as before."""
    _fake_runtime(monkeypatch, spark=None, local=True)
    marker = _local_spark_marker(monkeypatch)

    assert _apply_session(catalog="spark_catalog") is marker


def test_off_databricks_the_sdk_runtime_is_not_imported(
    monkeypatch: pytest.MonkeyPatch, offsetlake_home: Path
) -> None:
    """Its import tries to authenticate a workspace client: not done without the runtime."""
    monkeypatch.setattr(sessions, "find_spec", lambda name: None)

    def no_import(name: str) -> None:
        raise AssertionError(f"imported {name}")

    monkeypatch.setattr(sessions, "import_module", no_import)
    marker = _local_spark_marker(monkeypatch)

    assert not sessions.on_databricks({})
    assert sessions.get_spark({}) is marker
    assert sessions.RUNTIME_MODULE not in sys.modules


def test_on_databricks_without_a_session_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABRICKS_RUNTIME_VERSION", "client.4.9")
    _fake_runtime(monkeypatch, spark=None, local=True)
    _local_spark_forbidden(monkeypatch)

    with pytest.raises(sessions.NoDatabricksSessionError) as raised:
        _apply_session()

    assert isinstance(raised.value, ExternalError)
    assert isinstance(raised.value, OffsetlakeError)
    message = str(raised.value)
    assert "\n" not in message
    assert "DATABRICKS_RUNTIME_VERSION=client.4.9" in message
    assert "a local Spark is never started on Databricks" in message


def test_on_databricks_an_unimportable_sdk_runtime_is_the_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DATABRICKS_RUNTIME_VERSION", "17.3")
    monkeypatch.setattr(sessions, "find_spec", lambda name: None)

    def failing_import(name: str) -> None:
        raise ValueError("default auth: cannot configure default credentials")

    monkeypatch.setattr(sessions, "import_module", failing_import)
    _local_spark_forbidden(monkeypatch)

    with pytest.raises(sessions.NoDatabricksSessionError, match="no Spark session"):
        sessions.get_spark()


def test_on_databricks_the_runtime_jvm_is_attached_to_only_when_handed_over(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A classic driver without databricks.sdk.runtime.spark: builder.getOrCreate() attaches to
    the runtime's JVM (PYSPARK_GATEWAY_PORT), it is not called without one."""
    monkeypatch.setenv("DATABRICKS_RUNTIME_VERSION", "17.3")
    _fake_runtime(monkeypatch, spark=None, local=False)
    _local_spark_forbidden(monkeypatch)
    session = FakeSession()
    monkeypatch.setattr(sessions, "_attached_session", lambda: session)

    with pytest.raises(sessions.NoDatabricksSessionError):
        sessions.get_spark()

    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "41234")
    assert sessions.get_spark() is session
