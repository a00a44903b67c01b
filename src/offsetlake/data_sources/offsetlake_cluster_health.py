"""PySpark Python data source ``offsetlake_cluster_health``: one reachability check of one Kafka
cluster per micro-batch.

The pipeline streams it into the ``cluster_health`` table (one row per cluster per update), so an
operator and the apply can see which cluster was unreachable, since when, and why, next to the
gold tables. The check runs on the driver when the micro-batch is planned (latestOffset) and its
row travels in the input partition, so a dead cluster is asked once, never again on a worker.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.types import BooleanType, DoubleType, StringType, StructField, StructType, TimestampType

from offsetlake.data_sources.options import lower_names, parse_timeout_s, require_bootstrap_servers
from offsetlake.data_sources.spark_compat import SupportsTriggerAvailableNow
from offsetlake.kafka import admin as kafka_admin
from offsetlake.kafka.client_config import kafka_options_to_librdkafka
from offsetlake.kafka.offset_ranges import OffsetOptionError

CLUSTER_HEALTH_SOURCE_NAME = "offsetlake_cluster_health"
ROLES = ("source", "target")

CLUSTER_HEALTH_SCHEMA = StructType(
    [
        StructField("cluster", StringType()),
        StructField("role", StringType()),
        StructField("bootstrap_servers", StringType()),
        StructField("reachable", BooleanType()),
        StructField("error", StringType()),
        StructField("checked_at", TimestampType()),
        StructField("probe_seconds", DoubleType()),
    ]
)
_ARROW_SCHEMA = pa.schema(
    [
        pa.field("cluster", pa.string()),
        pa.field("role", pa.string()),
        pa.field("bootstrap_servers", pa.string()),
        pa.field("reachable", pa.bool_()),
        pa.field("error", pa.string()),
        pa.field("checked_at", pa.timestamp("us", tz="UTC")),
        pa.field("probe_seconds", pa.float64()),
    ]
)


@dataclass(frozen=True)
class HealthOptions:
    client_config: Mapping[str, str] = field(repr=False)  # may hold credentials
    cluster: str
    role: str
    timeout_s: float

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> HealthOptions:
        lowered = lower_names(options)
        require_bootstrap_servers(lowered)
        cluster, role = lowered.get("cluster", "").strip(), lowered.get("role", "").strip()
        if not cluster:
            raise OffsetOptionError("option cluster (the cluster's alias) is required")
        if role not in ROLES:
            raise OffsetOptionError(f"option role must be one of {', '.join(ROLES)}, not {role!r}")
        return cls(kafka_options_to_librdkafka(lowered), cluster, role, parse_timeout_s(lowered))

    def check(self) -> dict[str, object]:
        """One probe, as the row the table stores."""
        checked_at = datetime.now(UTC)
        probe = kafka_admin.probe_cluster(self.client_config, timeout_s=self.timeout_s)
        return {
            "cluster": self.cluster,
            "role": self.role,
            "bootstrap_servers": self.client_config.get("bootstrap.servers"),
            "reachable": probe.reachable,
            "error": probe.error,
            "checked_at": checked_at,
            "probe_seconds": round(probe.seconds, 3),
        }


@dataclass(frozen=True)
class HealthPartition(InputPartition):
    row: dict[str, object]


def _batch(row: dict[str, object]) -> Iterator[pa.RecordBatch]:
    yield pa.RecordBatch.from_pylist([row], schema=_ARROW_SCHEMA)


class HealthBatchReader(DataSourceReader):
    def __init__(self, options: HealthOptions) -> None:
        self.options = options

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _batch(self.options.check())


class HealthStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """One check per query run (an update): its offset is the check's time in epoch ms."""

    def __init__(self, options: HealthOptions) -> None:
        self.options = options
        self._row: dict[str, object] | None = None
        self._offset: dict[str, int] | None = None

    def initialOffset(self) -> dict[str, int]:  # noqa: N802 (Spark API)
        return {"checked_ms": 0}

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802 (Spark API)
        self._check()

    def latestOffset(self, start: dict[str, int] | None = None, *_: object) -> dict[str, int]:  # noqa: N802 (Spark API)
        # One offset per query run: asked again after its batch, the same offset means "no more".
        if self._offset is None:
            checked_ms = int(self._check()["checked_at"].timestamp() * 1000)  # type: ignore[attr-defined]
            previous = start["checked_ms"] if start else 0
            self._offset = {"checked_ms": max(checked_ms, previous + 1)}
        return self._offset

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        if end["checked_ms"] <= start["checked_ms"]:
            return []
        return [HealthPartition(self._check())]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, HealthPartition)
        return _batch(partition.row)

    def _check(self) -> dict[str, object]:
        if self._row is None:
            self._row = self.options.check()
        return self._row


class ClusterHealthDataSource(DataSource):
    """``spark.read`` / ``spark.readStream`` ``.format("offsetlake_cluster_health")``."""

    @classmethod
    def name(cls) -> str:
        return CLUSTER_HEALTH_SOURCE_NAME

    def schema(self) -> StructType:
        return CLUSTER_HEALTH_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return HealthBatchReader(HealthOptions.parse(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802 (Spark API)
        return HealthStreamReader(HealthOptions.parse(self.options))
