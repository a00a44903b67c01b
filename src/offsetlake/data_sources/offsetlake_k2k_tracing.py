"""PySpark Python data source ``offsetlake_k2k_tracing``: group snapshots translated on K2K's tracing headers.

Each micro-batch takes a snapshot of one source cluster's committed group offsets (as
``offsetlake_group_offsets`` does) and searches each committed position on the TARGET cluster
through K2K's record-tracing headers (offsetlake.kafka.tracing_reader), giving the rows of
``k2k_tracing_lookups``. Both the snapshot and the searches run in ``partitions()``, on the driver,
and the rows travel to the executor as Arrow IPC: executor-side ``read()`` runs in a Python worker
like a UDF, and Databricks documents no network for UDFs on serverless compute, while the driver
reaches the clusters the pipeline reads. A search that cannot translate is a row with its reason.

Options: the source cluster's as for ``offsetlake_group_offsets`` (``kafka.*``, ``groups.include``,
``groups.exclude``, ``timeoutMs``, ``onUnreachable``); ``alias`` (the source's MM2/K2K alias),
``route`` (the target-topic template, offsetlake.k2k.routing), ``headers`` (K2K's ``tracing.headers``
names, offsetlake.k2k.tracing.TracingHeaderNames) and the target's client options as
``target.kafka.*``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader
from pyspark.sql.types import (
    StructType,
)

from offsetlake.contract.tables import K2K_TRACING_LOOKUPS
from offsetlake.data_sources.offsetlake_group_offsets import (
    GroupOffsetsBatchReader,
    GroupOffsetsStreamReader,
    GroupSnapshotOptions,
    SnapshotPartition,
)
from offsetlake.data_sources.options import TARGET_OPTION_PREFIX, lower_names
from offsetlake.k2k.routing import TracingRoute
from offsetlake.k2k.tracing import TracingHeaderNames
from offsetlake.kafka.client_config import kafka_options_to_librdkafka
from offsetlake.kafka.group_offsets import snapshot_group_offsets
from offsetlake.kafka.offset_ranges import OffsetOptionError
from offsetlake.kafka.tracing_reader import SearchLimits, TracingLookup, look_up_snapshot

K2K_TRACING_SOURCE_NAME: Final = "offsetlake_k2k_tracing"
LOOKUPS_ARROW_SCHEMA: Final = K2K_TRACING_LOOKUPS.arrow_schema
"""k2k_tracing_lookups' columns: the source's rows are the table's rows."""


@dataclass(frozen=True)
class TracingSnapshotOptions:
    """A source cluster's snapshot options plus where and how its positions are searched."""

    group: GroupSnapshotOptions
    alias: str
    route: TracingRoute
    names: TracingHeaderNames
    target_config: Mapping[str, str] = field(repr=False)  # may hold credentials

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> TracingSnapshotOptions:
        lowered = lower_names(options)
        source = {name: value for name, value in lowered.items() if not name.startswith(TARGET_OPTION_PREFIX)}
        target = {
            name[len(TARGET_OPTION_PREFIX) :]: value
            for name, value in lowered.items()
            if name.startswith(TARGET_OPTION_PREFIX)
        }
        if not target.get("kafka.bootstrap.servers"):
            raise OffsetOptionError("option target.kafka.bootstrap.servers is required")
        alias, template = lowered.get("alias", ""), lowered.get("route", "")
        if not alias or not template:
            raise OffsetOptionError("options alias and route (the target-topic template) are required")
        return cls(
            GroupSnapshotOptions.parse(source),
            alias,
            TracingRoute(alias, template),
            TracingHeaderNames.parse(lowered.get("headers", "")),
            kafka_options_to_librdkafka(target),
        )

    # What GroupOffsetsStreamReader asks of its options: the source cluster it probes.
    @property
    def client_config(self) -> Mapping[str, str]:
        return self.group.client_config

    @property
    def timeout_s(self) -> float:
        return self.group.timeout_s

    @property
    def skip_unreachable(self) -> bool:
        return self.group.skip_unreachable

    def snapshot_partition(self) -> SnapshotPartition:
        """A snapshot and its searches, done here (the driver), carried to the executor as Arrow IPC."""
        group = self.group
        snapshot = snapshot_group_offsets(group.client_config, group.include, group.exclude, group.timeout_s)
        lookups = look_up_snapshot(
            self.target_config, snapshot, self.route, self.names, SearchLimits(timeout_s=group.timeout_s)
        )
        batch = lookup_batch(self.alias, lookups, datetime.now(UTC))
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, LOOKUPS_ARROW_SCHEMA) as writer:
            writer.write_batch(batch)
        return SnapshotPartition(sink.getvalue().to_pybytes(), batch.num_rows)


def lookup_batch(alias: str, lookups: Sequence[TracingLookup], looked_up_at: datetime) -> pa.RecordBatch:
    """k2k_tracing_lookups rows of one snapshot's searches."""
    rows = [
        {
            "source_cluster": alias,
            "consumer_group": lookup.snapshot.consumer_group,
            "topic": lookup.request.target_topic,
            "partition": lookup.request.target_partition,
            "upstream_topic": lookup.request.source_topic,
            "upstream_partition": lookup.request.source_partition,
            "upstream_offset": lookup.request.upstream_offset,
            "downstream_offset": lookup.result.translation.downstream_offset,
            "matched_source_offset": lookup.result.translation.matched_source_offset,
            "matched_target_offset": lookup.result.translation.matched_target_offset,
            "exact": lookup.result.translation.exact,
            "probes": lookup.result.translation.probes,
            "lookup_seconds": lookup.result.seconds,
            "reason": lookup.result.translation.reason,
            "metadata": lookup.snapshot.metadata,
            "snapshot_time": lookup.snapshot.snapshot_time,
            "looked_up_at": looked_up_at,
        }
        for lookup in lookups
    ]
    return pa.RecordBatch.from_pylist(rows, schema=LOOKUPS_ARROW_SCHEMA)


class TracingDataSource(DataSource):
    """``spark.read`` / ``spark.readStream`` ``.format("offsetlake_k2k_tracing")``."""

    @classmethod
    def name(cls) -> str:
        return K2K_TRACING_SOURCE_NAME

    def schema(self) -> str:
        """k2k_tracing_lookups' columns in DDL (the spec's; Spark parses it)."""
        return K2K_TRACING_LOOKUPS.spark_schema

    def reader(self, schema: StructType) -> DataSourceReader:
        return GroupOffsetsBatchReader(TracingSnapshotOptions.parse(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802 (Spark API)
        return GroupOffsetsStreamReader(TracingSnapshotOptions.parse(self.options))
