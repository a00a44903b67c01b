"""Incremental gold: offset_versions as AUTO CDC keeps it, and what offset_history/latest_offsets read.

On Databricks, AUTO CDC (SCD type 2) applies each refresh's new observations to offset_versions;
locally a materialized view computes the table from every observation (``history.offset_versions``).
Both must hold the same rows. The engine call itself cannot run here (no MERGE into Parquet, no
SCD type 2 before Spark 4.3), so this module checks everything around it:

- ``AutoCdcScd2`` models the documented engine semantics (a change of a tracked column opens a
  version; any other change updates the current version in place; ``__START_AT``/``__END_AT`` are
  sequence values), configured with exactly the arguments ``versions_by_auto_cdc`` passes;
- hypothesis feeds it observation batches (out of order within a batch, in order per key across
  batches, as MM2's checkpoint topic and the snapshots deliver them) and compares the Spark view's
  result over all observations, row for row; a refresh with no new observations changes nothing;
- latest_offsets read from the versions equals the previous full recompute over the observations
  (kept here as the reference), row for row.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as sf

from offsetlake.contract.tables import (
    GROUP_PARTITION_KEY,
    LATEST_GROUP_OFFSETS,
    OFFSET_VERSIONS,
    SILVER_GROUP_OFFSETS,
    TRANSLATION_OBSERVATIONS,
)
from offsetlake.mirror.precedence import METHODS
from offsetlake.pipeline import history
from offsetlake.pipeline.frames import add_columns
from offsetlake.pipeline.latest_group_offsets import latest_group_offsets_by_auto_cdc
from offsetlake.pipeline.precedence_spark import choose_translation

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

EPOCH = datetime(2026, 11, 1, tzinfo=UTC)
Sequence = tuple[int, datetime]


@dataclass
class _Version:
    row: dict[str, Any]
    start: Sequence
    newest: Sequence
    end: Sequence | None = None


@dataclass
class AutoCdcScd2:
    """AUTO CDC's SCD type 2 as documented, for events that arrive in order per key across batches."""

    keys: tuple[str, ...]
    tracked: tuple[str, ...]
    versions: dict[tuple[Any, ...], list[_Version]] = field(default_factory=dict)

    def apply(self, batch: list[dict[str, Any]]) -> None:
        """One micro-batch: events are sequenced within it, whatever order they came in."""
        for event in sorted(batch, key=_sequence):
            key = tuple(event[name] for name in self.keys)
            versions = self.versions.setdefault(key, [])
            sequence = _sequence(event)
            current = versions[-1] if versions else None
            if current is not None:
                assert sequence > current.newest, "the generator keeps each key in order across batches"
            if current is not None and all(event[c] == current.row[c] for c in self.tracked):
                current.row, current.newest = dict(event), sequence
                continue
            if current is not None:
                current.end = sequence
            versions.append(_Version(dict(event), sequence, sequence))

    def rows(self) -> list[tuple[Any, ...]]:
        return sorted(
            _version_tuple(version.row, version.start, version.end)
            for versions in self.versions.values()
            for version in versions
        )


def _sequence(event: dict[str, Any]) -> Sequence:
    return (event["observation_order"], event["observed_at"])


def _version_tuple(row: dict[str, Any], start: Sequence, end: Sequence | None) -> tuple[Any, ...]:
    return (*(row[name] for name in history.OBSERVATION_COLUMNS), start, end)


@st.composite
def observation_batches(draw: st.DrawFn) -> list[list[dict[str, Any]]]:
    """Observations of a few keys by every method, cut into arrival batches."""
    per_key: list[list[dict[str, Any]]] = []
    for group in ("g1", "g2"):
        for partition in (0, 1):
            for method in METHODS:
                at = draw(st.integers(0, 5))
                observations = []
                for order in range(draw(st.integers(0, 6))):
                    # Checkpoints are ordered by their topic offset: their timestamps (MM2's worker
                    # clocks) may repeat or step back; a snapshot or mapping observation is one per
                    # snapshot time.
                    at += draw(st.integers(-2, 2)) if method == "checkpoint" else draw(st.integers(1, 2))
                    observations.append(
                        {
                            "source_cluster": "east",
                            "consumer_group": group,
                            "topic": "east.orders",
                            "partition": partition,
                            # Small ranges: offsets repeat, return to earlier values, move alone.
                            "downstream_offset": draw(st.integers(10, 12)),
                            "upstream_offset": draw(st.integers(20, 21)),
                            "method": method,
                            "metadata": draw(st.sampled_from(["", "m"])),
                            "observed_at": EPOCH + timedelta(seconds=at),
                            "observation_order": order if method == "checkpoint" else 0,
                        }
                    )
                per_key.append(observations)
    # Arrival: each key's observations in order, keys interleaved; then cut into batches and
    # shuffled within each batch (a micro-batch has no order).
    arrival: list[dict[str, Any]] = []
    cursors = [0] * len(per_key)
    shuffler = random.Random(draw(st.integers(0, 2**16)))
    while any(cursor < len(rows) for cursor, rows in zip(cursors, per_key, strict=True)):
        choice = shuffler.choice([i for i, rows in enumerate(per_key) if cursors[i] < len(rows)])
        arrival.append(per_key[choice][cursors[choice]])
        cursors[choice] += 1
    cuts = sorted(draw(st.lists(st.integers(0, len(arrival)), max_size=4)))
    batches = [arrival[a:b] for a, b in zip([0, *cuts], [*cuts, len(arrival)], strict=True)]
    for batch in batches:
        shuffler.shuffle(batch)
    return batches


def _frame(spark: SparkSession, observations: list[dict[str, Any]]) -> DataFrame:
    columns = TRANSLATION_OBSERVATIONS.column_names
    return spark.createDataFrame(
        [tuple(row[name] for name in columns) for row in observations], TRANSLATION_OBSERVATIONS.schema_ddl
    )


def _spark_versions(frame: DataFrame) -> list[tuple[Any, ...]]:
    rows = []
    for row in history.offset_versions(frame).collect():
        as_dict = row.asDict()
        start = as_dict[history.START_AT]
        end = as_dict[history.END_AT]
        rows.append(
            _version_tuple(
                {name: _utc(as_dict[name]) for name in history.OBSERVATION_COLUMNS},
                (start["observation_order"], _utc(start["observed_at"])),
                None if end is None else (end["observation_order"], _utc(end["observed_at"])),
            )
        )
    return sorted(rows)


def _utc(value: Any) -> Any:
    """Collected timestamps are naive in the session time zone (UTC in tests)."""
    return value.replace(tzinfo=UTC) if isinstance(value, datetime) and value.tzinfo is None else value


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(observation_batches())
def test_the_local_view_equals_auto_cdc_applied_batch_by_batch(
    spark: SparkSession, batches: list[list[dict[str, Any]]]
) -> None:
    engine = AutoCdcScd2(keys=history.VERSION_KEY, tracked=history.TRACKED_COLUMNS)
    for batch in batches:
        engine.apply(batch)
    incremental = engine.rows()
    engine.apply([])
    assert engine.rows() == incremental, "a refresh with no new observations changes nothing"
    everything = [row for batch in batches for row in batch]
    assert _spark_versions(_frame(spark, everything)) == incremental


@dataclass
class RecordingEngine:
    """Stands in for the pipelines module on the Databricks branch: records what would be declared."""

    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def create_streaming_table(self, **kwargs: Any) -> None:
        self.calls.append(("create_streaming_table", kwargs))

    def create_auto_cdc_flow(self, **kwargs: Any) -> None:
        self.calls.append(("create_auto_cdc_flow", kwargs))


def test_the_databricks_branch_declares_auto_cdc_with_the_arguments_the_model_checks() -> None:
    engine = RecordingEngine()
    calls = engine.calls
    history.versions_by_auto_cdc(
        engine,  # type: ignore[arg-type]
        source=TRANSLATION_OBSERVATIONS.name,
        target=OFFSET_VERSIONS.name,
        comment=OFFSET_VERSIONS.comment,
    )
    (table_call, table_args), (flow_call, flow_args) = calls
    assert table_call == "create_streaming_table" and table_args["name"] == OFFSET_VERSIONS.name
    # The declared schema must carry __START_AT/__END_AT with the sequence's type (Databricks docs).
    assert "__START_AT STRUCT<observation_order: BIGINT, observed_at: TIMESTAMP>" in table_args["schema"]
    assert flow_call == "create_auto_cdc_flow"
    assert (
        flow_args["target"] == OFFSET_VERSIONS.name and flow_args["source"] == TRANSLATION_OBSERVATIONS.name
    )
    assert flow_args["keys"] == list(history.VERSION_KEY) == [*GROUP_PARTITION_KEY, "method"]
    assert flow_args["stored_as_scd_type"] == 2
    assert flow_args["track_history_column_list"] == ["downstream_offset", "upstream_offset"]
    assert isinstance(flow_args["sequence_by"], Column)
    sequence = str(flow_args["sequence_by"])
    assert 0 <= sequence.index("observation_order") < sequence.index("observed_at"), sequence


def test_latest_group_offsets_on_databricks_is_auto_cdc_scd1_by_snapshot_time() -> None:
    engine = RecordingEngine()
    latest_group_offsets_by_auto_cdc(engine, source=SILVER_GROUP_OFFSETS.name)  # type: ignore[arg-type]
    (table_call, table_args), (flow_call, flow_args) = engine.calls
    assert (table_call, table_args["name"]) == ("create_streaming_table", LATEST_GROUP_OFFSETS.name)
    assert table_args["schema"] == LATEST_GROUP_OFFSETS.schema_ddl
    assert flow_call == "create_auto_cdc_flow" and flow_args["source"] == SILVER_GROUP_OFFSETS.name
    assert flow_args["keys"] == list(GROUP_PARTITION_KEY) and flow_args["stored_as_scd_type"] == 1
    assert "snapshot_time" in str(flow_args["sequence_by"])


def _full_recompute_latest(observations: DataFrame, precedence: tuple[str, ...]) -> DataFrame:
    """latest_offsets as every refresh computed it before offset_versions (from all observations), in
    the order of history.SEQUENCE: a checkpoint's topic offset, then the observation time."""
    in_order = Window.partitionBy(*GROUP_PARTITION_KEY, "method").orderBy("observation_order", "observed_at")
    running = in_order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    previous = sf.lag("downstream_offset").over(in_order)
    marked = add_columns(
        observations, {"_changed": previous.isNull() | (previous != sf.col("downstream_offset"))}
    )
    runs = add_columns(
        marked,
        {
            "_run_start": sf.last(sf.when(sf.col("_changed"), sf.col("observed_at")), ignorenulls=True).over(
                running
            )
        },
    )
    newest_first = Window.partitionBy(*GROUP_PARTITION_KEY, "method").orderBy(
        sf.col("observation_order").desc(), sf.col("observed_at").desc()
    )
    ranked = add_columns(runs, {"_rank": sf.row_number().over(newest_first)})
    chosen = choose_translation(ranked.where(sf.col("_rank") == 1), precedence, freshness="observed_at")
    return chosen.select(
        *GROUP_PARTITION_KEY,
        "downstream_offset",
        "upstream_offset",
        "method",
        "metadata",
        sf.col("_disagree").alias("methods_disagree"),
        sf.col("observed_at").alias("last_observed_at"),
    )


def _rows(frame: DataFrame) -> list[tuple[Any, ...]]:
    return sorted(tuple(row) for row in frame.collect())


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(observation_batches(), st.permutations(METHODS))
def test_latest_offsets_from_versions_equals_the_full_recompute(
    spark: SparkSession, batches: list[list[dict[str, Any]]], precedence: list[str]
) -> None:
    frame = _frame(spark, [row for batch in batches for row in batch])
    latest = history.latest_offsets(history.offset_versions(frame), tuple(precedence)).select(
        *GROUP_PARTITION_KEY,
        "downstream_offset",
        "upstream_offset",
        "method",
        "metadata",
        "methods_disagree",
        "last_observed_at",
    )
    assert _rows(latest) == _rows(_full_recompute_latest(frame, tuple(precedence)))
