"""Table names, comments and column schemas (with a COMMENT on every column) for every pipeline table.

The transformations pass these to ``dp.table`` / ``dp.materialized_view`` so each table is
documented in the catalog, and the apply job, sql/ examples and tests refer to the same names.
Gold columns are the contract in docs/architecture.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class TableSpec:
    name: str
    comment: str
    columns: tuple[tuple[str, str, str], ...]
    """(name, Spark SQL type, comment) in table order."""

    @property
    def schema_ddl(self) -> str:
        return ", ".join(f"{name} {kind} COMMENT '{_quote(comment)}'" for name, kind, comment in self.columns)

    @property
    def column_names(self) -> list[str]:
        return [name for name, _, _ in self.columns]


def _quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")


_KAFKA_RECORD: Final = (
    ("key", "BINARY", "Raw record key bytes as read from Kafka (NULL when the record had no key)"),
    ("value", "BINARY", "Raw record value bytes as read from Kafka (NULL for a tombstone)"),
    ("topic", "STRING", "Kafka topic the record was read from"),
    ("partition", "INT", "Kafka partition the record was read from"),
    ("offset", "BIGINT", "Offset of the record in its Kafka partition"),
    ("timestamp", "TIMESTAMP", "Kafka record timestamp"),
    ("timestampType", "INT", "Kafka timestamp type: 0 CreateTime, 1 LogAppendTime"),
    ("headers", "ARRAY<STRUCT<key: STRING, value: BINARY>>", "Kafka record headers"),
)
_SOURCE_CLUSTER: Final = ("source_cluster", "STRING", "MM2 alias of the source cluster the record describes")
_INGESTED_AT: Final = ("ingested_at", "TIMESTAMP", "When the pipeline ingested the record")
_KAFKA_COORDINATES: Final = (
    ("kafka_topic", "STRING", "Kafka topic the raw record came from"),
    ("kafka_partition", "INT", "Kafka partition the raw record came from"),
    ("kafka_offset", "BIGINT", "Offset of the raw record in its Kafka partition"),
)

BRONZE_CHECKPOINTS: Final = TableSpec(
    "bronze_checkpoints",
    "Raw MM2 checkpoint records from every <alias><sep>checkpoints<sep>internal topic on the target "
    "cluster; append-only, nothing dropped.",
    (*_KAFKA_RECORD, _SOURCE_CLUSTER, _INGESTED_AT),
)
BRONZE_OFFSET_SYNCS: Final = TableSpec(
    "bronze_offset_syncs",
    "Raw MM2 offset-sync records (mm2-offset-syncs<sep><alias><sep>internal), the full retained history; "
    "append-only, nothing dropped.",
    (*_KAFKA_RECORD, _SOURCE_CLUSTER, _INGESTED_AT),
)
BRONZE_MAPPINGS: Final = TableSpec(
    "bronze_mappings",
    "Raw record-level offset mappings (e.g. Lenses K2K) from the target cluster; "
    "append-only, nothing dropped.",
    (*_KAFKA_RECORD, _INGESTED_AT),
)
BRONZE_GROUP_OFFSETS: Final = TableSpec(
    "bronze_group_offsets",
    "Snapshots of consumer-group committed offsets on each source cluster, one snapshot per pipeline "
    "update; append-only.",
    (
        ("consumer_group", "STRING", "Consumer group id on the source cluster"),
        ("group_state", "STRING", "Group state when the snapshot was taken (e.g. Stable, Empty)"),
        ("topic", "STRING", "Upstream (source-cluster) topic"),
        ("partition", "INT", "Partition of the upstream topic"),
        ("committed_offset", "BIGINT", "Committed position (next record to read); negative = no commit"),
        ("metadata", "STRING", "Commit metadata as the group wrote it"),
        ("snapshot_time", "TIMESTAMP", "When the offsets were listed on the source cluster"),
        _SOURCE_CLUSTER,
        _INGESTED_AT,
    ),
)
CLUSTER_HEALTH: Final = TableSpec(
    "cluster_health",
    "Whether each Kafka cluster answered, once per pipeline update; append-only. An unreachable "
    "cluster costs a bounded time and adds no rows to the other tables, it never fails the update.",
    (
        ("cluster", "STRING", "MM2 alias of the cluster"),
        ("role", "STRING", "source or target"),
        ("bootstrap_servers", "STRING", "Bootstrap servers that were tried"),
        ("reachable", "BOOLEAN", "True when a broker answered a metadata request in time"),
        ("error", "STRING", "Why it was not reachable (the Kafka client's error); NULL when reachable"),
        ("checked_at", "TIMESTAMP", "When the check was made"),
        ("probe_seconds", "DOUBLE", "How long the check took"),
    ),
)

SILVER_CHECKPOINTS: Final = TableSpec(
    "silver_checkpoints",
    "Decoded MM2 checkpoints: a source group's committed upstream offset and MM2's translated "
    "downstream offset, keyed by the downstream (target-cluster) topic.",
    (
        _SOURCE_CLUSTER,
        ("consumer_group", "STRING", "Consumer group id"),
        ("topic", "STRING", "Downstream (target-cluster) topic name, as MM2 renamed it"),
        ("partition", "INT", "Partition"),
        ("upstream_offset", "BIGINT", "The source group's committed offset"),
        ("downstream_offset", "BIGINT", "MM2's translated offset on the target cluster"),
        ("metadata", "STRING", "The source group's commit metadata, passed through by MM2"),
        ("checkpoint_timestamp", "TIMESTAMP", "Kafka timestamp of the checkpoint (when MM2 listed offsets)"),
        *_KAFKA_COORDINATES,
        _INGESTED_AT,
    ),
)
SILVER_OFFSET_SYNCS: Final = TableSpec(
    "silver_offset_syncs",
    "Decoded MM2 offset syncs: upstream record upstream_offset was written at downstream_offset. "
    "Full history, ordered by kafka_offset within each syncs topic.",
    (
        _SOURCE_CLUSTER,
        ("topic", "STRING", "Upstream (source-cluster) topic name"),
        ("partition", "INT", "Partition"),
        ("upstream_offset", "BIGINT", "Offset of the record on the source cluster"),
        ("downstream_offset", "BIGINT", "Offset the record was written at on the target cluster"),
        ("sync_timestamp", "TIMESTAMP", "Kafka timestamp of the sync (producer CreateTime)"),
        *_KAFKA_COORDINATES,
        _INGESTED_AT,
    ),
)
SILVER_MAPPINGS: Final = TableSpec(
    "silver_mappings",
    "Decoded record-level offset mappings: each replicated record's source and target position.",
    (
        ("source_topic", "STRING", "Upstream topic"),
        ("source_partition", "INT", "Upstream partition"),
        ("source_offset", "BIGINT", "Upstream record offset"),
        ("target_topic", "STRING", "Target-cluster topic"),
        ("target_partition", "INT", "Target-cluster partition"),
        ("target_offset", "BIGINT", "Offset the record was written at on the target cluster"),
        ("mapping_timestamp", "TIMESTAMP", "Kafka timestamp of the mapping record"),
        *_KAFKA_COORDINATES,
        _INGESTED_AT,
    ),
)
SILVER_GROUP_OFFSETS: Final = TableSpec(
    "silver_group_offsets",
    "Source consumer-group committed offsets per snapshot, typed; the input of syncs- and "
    "mapping-based translation.",
    BRONZE_GROUP_OFFSETS.columns,
)
QUARANTINE: Final = TableSpec(
    "quarantine",
    "Records that could not be decoded, kept with their raw bytes, Kafka coordinates and the reason; "
    "never dropped, never failing the pipeline.",
    (
        ("source_table", "STRING", "Bronze table the record came from"),
        ("kind", "STRING", "Expected format: checkpoint, offset_sync or the mapping format name"),
        ("source_cluster", "STRING", "MM2 alias of the source cluster, when known"),
        *_KAFKA_COORDINATES,
        ("kafka_timestamp", "TIMESTAMP", "Kafka record timestamp"),
        ("key", "BINARY", "Raw record key bytes"),
        ("value", "BINARY", "Raw record value bytes"),
        ("reason", "STRING", "Why decoding failed: the pure codec's error message"),
        _INGESTED_AT,
    ),
)

_GOLD_KEY_AND_OFFSET: Final = (
    ("source_cluster", "STRING", "MM2 alias of the source cluster the group committed on"),
    ("consumer_group", "STRING", "Consumer group id"),
    ("topic", "STRING", "Target-cluster topic name"),
    ("partition", "INT", "Target-cluster partition"),
    ("downstream_offset", "BIGINT", "Translated offset to commit on the target cluster"),
    ("upstream_offset", "BIGINT", "The source group's committed offset this translation is based on"),
    ("method", "STRING", "How it was translated: checkpoint, offset_sync or mapping"),
    ("metadata", "STRING", "The source group's commit metadata"),
    ("source_timestamp", "TIMESTAMP", "When the source observation (checkpoint or snapshot) was made"),
    ("valid_from", "TIMESTAMP", "Start of validity: first observation of this translated offset"),
    ("valid_to", "TIMESTAMP", "End of validity (exclusive); NULL while current"),
)
OFFSET_HISTORY: Final = TableSpec(
    "offset_history",
    "Every distinct translated offset per (source_cluster, consumer_group, topic, partition, method) "
    "with its validity interval. As of T: valid_from <= T AND (valid_to IS NULL OR valid_to > T).",
    _GOLD_KEY_AND_OFFSET,
)
LATEST_OFFSETS: Final = TableSpec(
    "latest_offsets",
    "The current translated offset per (source_cluster, consumer_group, topic, partition): among the "
    "methods translating the freshest upstream offset, the first in offsetlake.method.precedence.",
    (
        *_GOLD_KEY_AND_OFFSET,
        ("age_seconds", "BIGINT", "Seconds from the last observation of this translation to the refresh"),
        ("methods_disagree", "BOOLEAN", "True when methods translating the same upstream offset differ"),
        ("last_observed_at", "TIMESTAMP", "Latest observation that still gave this translation"),
    ),
)

ALL_TABLES: Final = (
    BRONZE_CHECKPOINTS,
    BRONZE_OFFSET_SYNCS,
    BRONZE_MAPPINGS,
    BRONZE_GROUP_OFFSETS,
    CLUSTER_HEALTH,
    SILVER_CHECKPOINTS,
    SILVER_OFFSET_SYNCS,
    SILVER_MAPPINGS,
    SILVER_GROUP_OFFSETS,
    QUARANTINE,
    OFFSET_HISTORY,
    LATEST_OFFSETS,
)
