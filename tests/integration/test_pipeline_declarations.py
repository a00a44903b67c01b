"""What the silver and gold transformation files declare, recorded at the engine call.

Liquid clustering needs Delta, so it runs on Databricks only (``offsetlake.tables.clustering``
``liquid``, set by the bundle). Locally a Parquet table merely records the columns, and a streaming
table created without them refuses them later. Here the real transformation files run against a
recording pipelines module, with the Databricks settings and with the local ones. That exercises
every line but the engine's and checks the arguments it would get.

Silver's expectations exist on Databricks only: the open-source engine has no ``expect_all``, so
there the guard (pipeline/expectations.py) is the identity, and ``DatabricksPipelines`` below adds
a recording ``expect_all`` to check what Databricks would get.
"""

from __future__ import annotations

import runpy
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyspark
import pytest
from pyspark.sql.readwriter import DataFrameReader
from pyspark.sql.streaming.readwriter import DataStreamReader

from offsetlake.contract.refresh_selection import declared_tables
from offsetlake.contract.settings import MappingTopic, PipelineSettings
from offsetlake.contract.tables import (
    ALL_TABLES,
    APPLY_CLUSTER_KEY,
    FAILOVER_DATA_LOSS,
    LATEST_OFFSETS,
    OFFSET_HISTORY,
    OFFSET_VERSIONS,
    OFFSET_VERSIONS_AUTO_CDC,
    SILVER_GROUP_OFFSETS,
)
from offsetlake.k2k.routing import TracingRoute
from offsetlake.local.gold_guard import GUARDED_TABLES
from offsetlake.local.pipeline_spec import TRANSFORMATIONS_DIR
from offsetlake.mirror.clusters import ClusterEndpoint
from offsetlake.pipeline.expectations import SILVER_EXPECTATIONS
from offsetlake.pipeline.generated_code import FACTORY_MODE, INTERPRETED

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from pyspark.sql import DataFrame, SparkSession

pytestmark = pytest.mark.spark

APPLY_JOB_TABLES = {LATEST_OFFSETS.name, OFFSET_HISTORY.name, FAILOVER_DATA_LOSS.name}


@dataclass
class RecordingPipelines:
    """Stands in for ``pyspark.pipelines``: records each dataset's declaration by name."""

    datasets: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    queries: dict[str, list[Callable[[], Any]]] = field(default_factory=dict)
    """Dataset name -> the query functions that feed it (its own, or its append flows')."""
    flows: list[dict[str, Any]] = field(default_factory=list)
    expectations: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    """Dataset name -> the ``expect_all`` dicts its query function was decorated with."""
    pending_expectations: dict[Callable[[], Any], list[dict[str, str]]] = field(default_factory=dict)

    def _decorator(self, kind: str, arguments: dict[str, Any]) -> Callable[[Callable[[], Any]], None]:
        def register(query_function: Callable[[], Any]) -> None:
            self.datasets[arguments["name"]] = (kind, arguments)
            self.queries.setdefault(arguments["name"], []).append(query_function)
            if query_function in self.pending_expectations:
                self.expectations[arguments["name"]] = self.pending_expectations.pop(query_function)

        return register

    def table(self, **arguments: Any) -> Callable[[Callable[[], Any]], None]:
        return self._decorator("table", arguments)

    def materialized_view(self, **arguments: Any) -> Callable[[Callable[[], Any]], None]:
        return self._decorator("materialized_view", arguments)

    def temporary_view(self, **arguments: Any) -> Callable[[Callable[[], Any]], None]:
        return self._decorator("temporary_view", arguments)

    def create_streaming_table(self, **arguments: Any) -> None:
        self.datasets[arguments["name"]] = ("create_streaming_table", arguments)

    def create_auto_cdc_flow(self, **arguments: Any) -> None:
        self.flows.append(arguments)

    def append_flow(self, target: str, name: str) -> Callable[[Callable[[], Any]], None]:
        def register(query_function: Callable[[], Any]) -> None:
            self.flows.append({"target": target, "name": name})
            self.queries.setdefault(target, []).append(query_function)

        return register


@dataclass
class DatabricksPipelines(RecordingPipelines):
    """Databricks' ``pyspark.pipelines``: also has the expectation decorators (only ``expect_all``
    may be used: silver's expectations warn, never drop or fail)."""

    def expect_all(self, expectations: dict[str, str]) -> Callable[[Callable[[], Any]], Callable[[], Any]]:
        def decorate(query_function: Callable[[], Any]) -> Callable[[], Any]:
            self.pending_expectations.setdefault(query_function, []).append(expectations)
            return query_function

        return decorate

    def _refuse(self, *_arguments: Any) -> None:
        raise AssertionError("silver's expectations warn only: quarantine already holds bad records")

    expect = expect_or_drop = expect_or_fail = expect_all_or_drop = expect_all_or_fail = _refuse


def declarations(
    spark: SparkSession,
    monkeypatch: pytest.MonkeyPatch,
    settings: PipelineSettings,
    engine: RecordingPipelines | None = None,
) -> RecordingPipelines:
    """Run every transformation file with ``settings`` as the pipeline configuration."""
    engine = engine if engine is not None else RecordingPipelines()
    monkeypatch.setattr(pyspark, "pipelines", engine, raising=False)
    monkeypatch.setitem(sys.modules, "pyspark.pipelines", engine)
    conf = settings.to_conf()
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        for path in sorted(TRANSFORMATIONS_DIR.glob("*.py")):
            runpy.run_path(str(path))
    finally:
        for key in conf:
            spark.conf.unset(key)
    return engine


def _settings(**overrides: Any) -> PipelineSettings:
    return PipelineSettings(
        target_bootstrap_servers="target:9092",
        sources=(ClusterEndpoint("east", "east:9092"),),
        mappings_topics=(MappingTopic("east"),),
        k2k_tracing_routes=(TracingRoute("east", "{topic}"),),
        **overrides,
    )


def _clustered(engine: RecordingPipelines) -> dict[str, list[str]]:
    return {
        name: arguments["cluster_by"]
        for name, (_, arguments) in engine.datasets.items()
        if arguments.get("cluster_by") is not None
    }


def test_on_databricks_the_tables_the_apply_job_reads_are_clustered_by_its_keys(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = declarations(
        spark, monkeypatch, _settings(table_clustering="liquid", gold_incremental="auto_cdc")
    )
    clustered = _clustered(engine)
    assert set(clustered) == {SILVER_GROUP_OFFSETS.name, *APPLY_JOB_TABLES}
    specs = {spec.name: spec for spec in ALL_TABLES}
    for name, columns in clustered.items():
        assert columns == list(APPLY_CLUSTER_KEY), name
        assert set(columns) <= set(specs[name].column_names), name


def test_locally_no_table_is_clustered(spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = declarations(spark, monkeypatch, _settings())
    assert _clustered(engine) == {}
    assert set(engine.datasets) >= APPLY_JOB_TABLES, "the same tables, declared without clustering"


def test_every_stored_dataset_is_a_documented_table(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Including the decode-result tables: one per decoded input, each feeding silver and quarantine."""
    for settings in (_settings(), _settings(table_clustering="liquid", gold_incremental="auto_cdc")):
        specs = {spec.name: spec for spec in ALL_TABLES}
        if settings.gold_incremental == "auto_cdc":  # __START_AT/__END_AT typed as sequence_by
            specs[OFFSET_VERSIONS_AUTO_CDC.name] = OFFSET_VERSIONS_AUTO_CDC
        engine = declarations(spark, monkeypatch, settings)
        stored = {name: args for name, (kind, args) in engine.datasets.items() if kind != "temporary_view"}
        assert set(stored) <= set(specs)
        assert {"decoded_checkpoints", "decoded_offset_syncs", "decoded_mappings"} <= set(stored)
        assert "k2k_mapping_conflicts" in stored  # k2k_tracing_lookups is bronze's (live reads)
        assert "decoded_connect_offsets" in stored
        for name, arguments in stored.items():
            assert (arguments["comment"], arguments["schema"]) == (
                specs[name].comment,
                specs[name].schema_ddl,
            )


def test_on_databricks_every_silver_table_declares_its_warn_only_expectations(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = declarations(
        spark,
        monkeypatch,
        _settings(table_clustering="liquid", gold_incremental="auto_cdc"),
        DatabricksPipelines(),
    )
    assert set(engine.expectations) == set(SILVER_EXPECTATIONS), "silver tables only, all of them"
    assert set(engine.expectations) <= set(engine.datasets)
    for name, applied in engine.expectations.items():
        assert applied == [dict(SILVER_EXPECTATIONS[name])], name
        assert engine.datasets[name][0] == "table", name
    assert engine.pending_expectations == {}, "an expect_all on a function no dataset took"


def test_with_the_open_source_engine_silver_declares_no_expectations(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = declarations(spark, monkeypatch, _settings())
    assert not hasattr(engine, "expect_all")
    assert engine.expectations == {}
    assert set(SILVER_EXPECTATIONS) <= set(engine.datasets), "the same silver tables, without expectations"


_PLAIN = PipelineSettings(
    target_bootstrap_servers="target:9092", sources=(ClusterEndpoint("east", "east:9092"),)
)
_EVERY_GRAPH = (
    _settings(),
    _settings(gold_incremental="auto_cdc"),
    _settings(bronze_flows="per_source", table_clustering="liquid", gold_incremental="auto_cdc"),
    _PLAIN,
    PipelineSettings(
        target_bootstrap_servers="target:9092",
        sources=(ClusterEndpoint("east", "east:9092"),),
        connect_offsets_topics="",
    ),
)
"""The graphs the settings make: every optional input on and off, each gold and bronze mode."""


def test_the_failover_knows_every_table_the_transformations_declare(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """declared_tables decides whether a failover's refresh can be a selection (issue 31)."""
    for settings in _EVERY_GRAPH:
        engine = declarations(spark, monkeypatch, settings)
        stored = {name for name, (kind, _) in engine.datasets.items() if kind != "temporary_view"}
        assert stored == set(declared_tables(settings)), settings


def _reads(
    spark: SparkSession,
    monkeypatch: pytest.MonkeyPatch,
    engine: RecordingPipelines,
    settings: PipelineSettings,
    empty_dir: Path,
) -> dict[str, set[str]]:
    """Each stored dataset's query functions called, their table reads recorded: a temporary view
    read is its own reads (it is called in place), a table read returns no rows of that table's
    schema (a stream for ``readStream``); an AUTO CDC flow reads its source."""
    specs = {spec.name: spec for spec in ALL_TABLES}
    if settings.gold_incremental == "auto_cdc":
        specs[OFFSET_VERSIONS_AUTO_CDC.name] = OFFSET_VERSIONS_AUTO_CDC
    views = {name for name, (kind, _) in engine.datasets.items() if kind == "temporary_view"}
    reading: list[set[str]] = []

    def read(name: str, streaming: bool) -> DataFrame:
        if name in views:
            (view,) = engine.queries[name]
            return view()
        reading[-1].add(name)
        schema = specs[name].schema_ddl
        if streaming:
            return spark.readStream.schema(schema).parquet(str(empty_dir))
        return spark.createDataFrame([], schema)

    monkeypatch.setattr(DataFrameReader, "table", lambda _reader, name: read(name, streaming=False))
    monkeypatch.setattr(DataStreamReader, "table", lambda _reader, name: read(name, streaming=True))
    reads = {}
    for name, (kind, _) in engine.datasets.items():
        if kind == "temporary_view":
            continue
        reading.append(
            {flow["source"] for flow in engine.flows if flow["target"] == name and "source" in flow}
        )
        for query in engine.queries.get(name, []):
            query()
        reads[name] = reading.pop()
    monkeypatch.undo()
    return reads


def test_every_table_reads_exactly_the_inputs_its_spec_declares(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The specs' inputs are the lineage the failover's refresh follows (refresh_selection.py): a
    read no spec declares would leave that input stale after a failover's refresh."""
    specs = {spec.name: spec for spec in ALL_TABLES}
    for settings in _EVERY_GRAPH:
        declared = set(declared_tables(settings))
        engine = declarations(spark, monkeypatch, settings)
        reads = _reads(spark, monkeypatch, engine, settings, tmp_path)
        assert set(reads) == declared, settings
        for name, read in reads.items():
            assert read == {source.name for source in specs[name].inputs if source.name in declared}, (
                name,
                settings,
            )


def test_the_gold_guard_keeps_every_materialized_view_of_the_local_graph(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The local engine empties a materialized view when an update fails (local/gold_guard.py)."""
    engine = declarations(spark, monkeypatch, _settings())
    views = {name for name, (kind, _) in engine.datasets.items() if kind == "materialized_view"}
    assert set(GUARDED_TABLES) == views
    assert {spec.name for spec in ALL_TABLES if spec.kind == "materialized_view"} == views


EVERY_RECORD_FLOWS = {
    "decoded_checkpoints",
    "decoded_offset_syncs",
    "decoded_mappings",
    "decoded_connect_offsets",
    OFFSET_VERSIONS.name,
    LATEST_OFFSETS.name,
    OFFSET_HISTORY.name,
}


def test_where_the_pipeline_interprets_only_the_flows_over_every_record_generate_code(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The local spec interprets expressions (pipeline/generated_code.py); the decode and gold's
    window steps ask for generated code back. Where the pipeline generates code, no flow asks."""
    for mode, expected in (("NO_CODEGEN", EVERY_RECORD_FLOWS), ("FALLBACK", set())):
        spark.conf.set(FACTORY_MODE, mode)
        try:
            engine = declarations(spark, monkeypatch, _settings())
        finally:
            spark.conf.set(FACTORY_MODE, INTERPRETED[FACTORY_MODE])  # the tests' session's own
        asking = {
            name: args["spark_conf"] for name, (_, args) in engine.datasets.items() if args.get("spark_conf")
        }
        assert set(asking) == expected, mode
        assert all(conf == {FACTORY_MODE: "FALLBACK"} for conf in asking.values()), asking
