"""Table names, comments and column schemas (with a COMMENT on every column) for every pipeline table,
and for the apply's audit (APPLY_AUDIT, written by the apply, not a table of the pipeline's graph).

The transformations pass these to ``dp.table`` / ``dp.materialized_view`` so each table is
documented in the catalog, and the apply job, sql/ examples and tests refer to the same names.
Gold columns are the contract in docs/architecture.md.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Final, Literal

if TYPE_CHECKING:
    import pyarrow as pa

Kind = Literal["streaming_table", "materialized_view"]

DEFAULT_SCHEMA: Final = "offsetlake"
"""The schema offsetlake's tables live in unless told otherwise (the bundle's default, the local one)."""


@dataclass(frozen=True)
class TableSpec:
    name: str
    comment: str
    columns: tuple[tuple[str, str, str], ...]
    """(name, Spark SQL type, comment) in table order."""
    inputs: tuple[TableSpec, ...] = ()
    """Every pipeline table its query may read, directly or through a temporary view: the lineage
    the failover's refresh follows (contract/refresh_selection.py). An input the settings leave out
    of the graph is not read; tests/integration/test_pipeline_declarations.py holds this to the
    reads of the transformations."""
    kind: Kind = "streaming_table"
    """What the local graph declares; offset_versions and latest_group_offsets, materialized views
    there, are AUTO CDC streaming tables on Databricks (``offsetlake.gold.incremental``)."""

    @property
    def schema_ddl(self) -> str:
        return ", ".join(f"{name} {kind} COMMENT '{_quote(comment)}'" for name, kind, comment in self.columns)

    @property
    def column_names(self) -> list[str]:
        return [name for name, _, _ in self.columns]

    @property
    def spark_schema(self) -> str:
        """The columns as a Spark schema in DDL, without comments: what a data source's ``schema()``
        and ``createDataFrame`` take (Spark parses it; the contract imports no PySpark)."""
        return ", ".join(f"`{name}` {kind}" for name, kind, _ in self.columns)

    @property
    def arrow_schema(self) -> pa.Schema:
        """The columns as Arrow types (:func:`arrow_type`): how the data sources hand rows to Spark
        and how the local store and tests read and write the table's Parquet files."""
        import pyarrow as pa

        return pa.schema([(name, arrow_type(kind)) for name, kind, _ in self.columns])


def _quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")


def arrow_type(kind: str) -> pa.DataType:
    """A Spark SQL type of the specs (``BIGINT``, ``ARRAY<STRING>``, ``STRUCT<a: INT, ...>``) as its
    Arrow type, the one map: TIMESTAMP is microseconds in UTC, as Spark hands it to Arrow."""
    import pyarrow as pa

    text = kind.strip()
    upper = text.upper()
    if upper.startswith("ARRAY<") and upper.endswith(">"):
        return pa.list_(arrow_type(text[len("ARRAY<") : -1]))
    if upper.startswith("STRUCT<") and upper.endswith(">"):
        fields = [field.split(":", 1) for field in _top_level(text[len("STRUCT<") : -1])]
        return pa.struct([(name.strip(), arrow_type(inner)) for name, inner in fields])
    scalars = {
        "STRING": pa.string(),
        "INT": pa.int32(),
        "BIGINT": pa.int64(),
        "BOOLEAN": pa.bool_(),
        "DOUBLE": pa.float64(),
        "BINARY": pa.binary(),
        "TIMESTAMP": pa.timestamp("us", tz="UTC"),
    }
    if upper not in scalars:
        raise ValueError(f"no Arrow type for Spark SQL type {kind!r}")
    return scalars[upper]


def _top_level(fields: str) -> list[str]:
    """``fields`` split at the commas outside any ``<...>``."""
    parts, depth, start = [], 0, 0
    for at, char in enumerate(fields):
        depth += {"<": 1, ">": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(fields[start:at])
            start = at + 1
    return [*parts, fields[start:]]


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
BRONZE_CONNECT_OFFSETS: Final = TableSpec(
    "bronze_connect_offsets",
    "Raw Kafka Connect offset records (mm2-offsets.<source>.internal, connect-offsets) from the target "
    "cluster, tombstones included; append-only, nothing dropped.",
    (*_KAFKA_RECORD, _INGESTED_AT),
)
SOURCE_LOG_OFFSETS: Final = TableSpec(
    "source_log_offsets",
    "Snapshots of each source topic-partition's log start and log end offset (topics chosen like MM2's "
    "topic filter), one snapshot per pipeline update; append-only. The head replication lag is measured to.",
    (
        ("topic", "STRING", "Upstream (source-cluster) topic"),
        ("partition", "INT", "Partition of the upstream topic"),
        ("log_start_offset", "BIGINT", "First offset still in the log"),
        ("log_end_offset", "BIGINT", "Offset the next record will get (the head)"),
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

_SILVER_CHECKPOINTS: Final = TableSpec(
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
_SILVER_OFFSET_SYNCS: Final = TableSpec(
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
_SILVER_MAPPINGS: Final = TableSpec(
    "silver_mappings",
    "Decoded record-level offset mappings: each replicated record's source and target position, "
    "with the source cluster its mapping topic is bound to (offsetlake.mappings.topics).",
    (
        (
            "source_cluster",
            "STRING",
            "MM2-style alias of the source cluster: the one the mapping topic is bound to",
        ),
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
    (BRONZE_GROUP_OFFSETS,),
)
LATEST_GROUP_OFFSETS: Final = TableSpec(
    "latest_group_offsets",
    "The newest snapshot of each source group-partition's committed offset (SCD type 1 over "
    "silver_group_offsets, by snapshot_time); what failover_data_loss reads.",
    BRONZE_GROUP_OFFSETS.columns,
    (SILVER_GROUP_OFFSETS,),
    "materialized_view",
)
_SILVER_CONNECT_OFFSETS: Final = TableSpec(
    "silver_connect_offsets",
    "Decoded Kafka Connect source offsets of every connector; for MirrorSourceConnector keys "
    "({cluster, partition, topic}) also the source partition and the last replicated upstream offset. "
    "Tombstones are kept as resets.",
    (
        ("connector", "STRING", "Connector name (first element of the key)"),
        ("source_partition", "STRING", "The key's source partition as JSON (object keys sorted)"),
        ("source_offset", "STRING", "The stored source offset as JSON; NULL for a tombstone"),
        ("tombstone", "BOOLEAN", "True when the offset was deleted (no value, or JSON null): a reset"),
        ("source_cluster", "STRING", "MirrorSourceConnector: the source partition's cluster alias"),
        ("topic", "STRING", "MirrorSourceConnector: upstream topic"),
        ("partition", "INT", "MirrorSourceConnector: upstream partition"),
        (
            "upstream_offset",
            "BIGINT",
            "MirrorSourceConnector: upstream offset of the last replicated record (MM2 resumes at +1); "
            "NULL when reset",
        ),
        ("offset_timestamp", "TIMESTAMP", "Kafka timestamp of the record (when Connect flushed offsets)"),
        *_KAFKA_COORDINATES,
        _INGESTED_AT,
    ),
)

_DECODE_ERROR: Final = (
    "decode_error",
    "STRING",
    "Why decoding failed: the pure codec's error message; NULL when the record decoded",
)
_RAW_WHEN_MALFORMED: Final = (
    ("key", "BINARY", "Raw record key bytes of a malformed record (NULL when it decoded: bronze keeps them)"),
    (
        "value",
        "BINARY",
        "Raw record value bytes of a malformed record (NULL when it decoded: bronze keeps them)",
    ),
)


def _decoded_and_silver(bronze: TableSpec, silver: TableSpec) -> tuple[TableSpec, TableSpec]:
    """The one decoding pass over ``bronze``, which ``silver`` and quarantine are filtered from, and
    ``silver`` reading it."""
    decoded = TableSpec(
        "decoded_" + silver.name.removeprefix("silver_"),
        f"Every {bronze.name} record decoded once; {silver.name} (decode_error NULL) and quarantine "
        f"(decode_error set) read this one decoding pass. The columns of {silver.name} (decoded fields NULL "
        "when malformed), the error, and the raw bytes of malformed records only.",
        (*silver.columns, _DECODE_ERROR, *_RAW_WHEN_MALFORMED),
        (bronze,),
    )
    return decoded, replace(silver, inputs=(decoded,))


DECODED_CHECKPOINTS, SILVER_CHECKPOINTS = _decoded_and_silver(BRONZE_CHECKPOINTS, _SILVER_CHECKPOINTS)
DECODED_OFFSET_SYNCS, SILVER_OFFSET_SYNCS = _decoded_and_silver(BRONZE_OFFSET_SYNCS, _SILVER_OFFSET_SYNCS)
DECODED_MAPPINGS, SILVER_MAPPINGS = _decoded_and_silver(BRONZE_MAPPINGS, _SILVER_MAPPINGS)
DECODED_CONNECT_OFFSETS, SILVER_CONNECT_OFFSETS = _decoded_and_silver(
    BRONZE_CONNECT_OFFSETS, _SILVER_CONNECT_OFFSETS
)

QUARANTINE: Final = TableSpec(
    "quarantine",
    "Records that could not be decoded, kept with their raw bytes, Kafka coordinates and the reason; "
    "never dropped, never failing the pipeline.",
    (
        ("source_table", "STRING", "Bronze table the record came from"),
        (
            "kind",
            "STRING",
            "Expected format: checkpoint, offset_sync, connect_offset or the mapping format name",
        ),
        ("source_cluster", "STRING", "MM2 alias of the source cluster, when known"),
        *_KAFKA_COORDINATES,
        ("kafka_timestamp", "TIMESTAMP", "Kafka record timestamp"),
        ("key", "BINARY", "Raw record key bytes"),
        ("value", "BINARY", "Raw record value bytes"),
        ("reason", "STRING", "Why decoding failed: the pure codec's error message"),
        _INGESTED_AT,
    ),
    (DECODED_CHECKPOINTS, DECODED_OFFSET_SYNCS, DECODED_MAPPINGS, DECODED_CONNECT_OFFSETS),
)

_GOLD_KEY: Final = (
    ("source_cluster", "STRING", "MM2 alias of the source cluster the group committed on"),
    ("consumer_group", "STRING", "Consumer group id"),
    ("topic", "STRING", "Target-cluster topic name"),
    ("partition", "INT", "Target-cluster partition"),
)
GROUP_PARTITION_KEY: Final = tuple(name for name, *_ in _GOLD_KEY)
"""One consumer group's position in one partition: the key of gold and of the group snapshots."""
PARTITION_KEY: Final = tuple(name for name in GROUP_PARTITION_KEY if name != "consumer_group")
"""One replicated partition of one source cluster: the key of offset syncs and replication progress."""
APPLY_CLUSTER_KEY: Final = GROUP_PARTITION_KEY[1:]
"""How the failover apply job looks rows up (per group and partition); every clustered table has them."""
_TRANSLATION: Final = (
    ("downstream_offset", "BIGINT", "Translated offset to commit on the target cluster"),
    ("upstream_offset", "BIGINT", "The source group's committed offset this translation is based on"),
    ("method", "STRING", "How it was translated: checkpoint, offset_sync, mapping or k2k_tracing_headers"),
    ("metadata", "STRING", "The source group's commit metadata"),
)
_OBSERVATION: Final = (
    *_GOLD_KEY,
    *_TRANSLATION,
    (
        "observed_at",
        "TIMESTAMP",
        "When the observation was made: the checkpoint timestamp or the group-offset snapshot time",
    ),
    (
        "observation_order",
        "BIGINT",
        "Order of a checkpoint among its key's: its record offset in the checkpoints topic; else 0",
    ),
)
_SEQUENCE: Final = "STRUCT<observed_at: TIMESTAMP, observation_order: BIGINT>"
"""The local table's __START_AT/__END_AT: the first observation's time and order, as the table was
first made (a local home's table keeps its column types; the engine orders by the fields by name)."""
_AUTO_CDC_SEQUENCE: Final = "STRUCT<observation_order: BIGINT, observed_at: TIMESTAMP>"
"""AUTO CDC's sequence_by, compared field by field: the checkpoint's topic offset first."""
_UPSTREAM_POSITION: Final = (
    ("upstream_topic", "STRING", "Upstream (source-cluster) topic the group committed on"),
    ("upstream_partition", "INT", "Upstream partition"),
    ("upstream_offset", "BIGINT", "The source group's committed offset (its newest snapshot)"),
)
K2K_TRACING_LOOKUPS: Final = TableSpec(
    "k2k_tracing_lookups",
    "Every translation from K2K's record-tracing headers (k2k_topic, k2k_partition, k2k_offset): a "
    "binary search over the target partition for each new group-offset snapshot, its result or the "
    "reason there is none (an unreachable or headerless partition is a reason, not a failure); "
    "append-only. The translated rows are the k2k_tracing_headers method's observations.",
    (
        *_GOLD_KEY,
        *_UPSTREAM_POSITION,
        (
            "downstream_offset",
            "BIGINT",
            "Translated offset: the matched record's target offset, +1 when not exact; NULL: no translation",
        ),
        ("matched_source_offset", "BIGINT", "k2k_offset of the record found: the largest <= upstream_offset"),
        ("matched_target_offset", "BIGINT", "Target offset of that record"),
        ("exact", "BOOLEAN", "True when the record found is the group's next record itself"),
        ("probes", "INT", "Fetches the binary search made"),
        ("lookup_seconds", "DOUBLE", "How long the search took"),
        ("reason", "STRING", "Why there is no (or only a limited) translation; NULL when it is complete"),
        ("metadata", "STRING", "The source group's commit metadata"),
        ("snapshot_time", "TIMESTAMP", "When the group's offsets were listed on the source cluster"),
        ("looked_up_at", "TIMESTAMP", "When the target was searched"),
    ),
)
TRANSLATION_OBSERVATIONS: Final = TableSpec(
    "translation_observations",
    "Every translated offset by every method, appended as it is observed: each checkpoint, and each "
    "group-offset snapshot translated with the offset syncs and mappings known when it was ingested.",
    _OBSERVATION,
    (SILVER_CHECKPOINTS, SILVER_GROUP_OFFSETS, SILVER_OFFSET_SYNCS, SILVER_MAPPINGS, K2K_TRACING_LOOKUPS),
)
_VERSIONS_COMMENT: Final = (
    "SCD type 2 versions of each (source_cluster, consumer_group, topic, partition, method) translation, "
    "ordered by (observation_order, observed_at): a new version when downstream_offset or "
    "upstream_offset changes; the other columns hold the version's newest observation. AUTO CDC "
    "maintains it on Databricks; offset_history and latest_offsets read it."
)


def _versions(sequence: str) -> tuple[tuple[str, str, str], ...]:
    return (
        *_OBSERVATION,
        ("__START_AT", sequence, "Sequence of the version's first observation"),
        ("__END_AT", sequence, "Sequence of the next version's first observation; NULL while current"),
    )


OFFSET_VERSIONS: Final = TableSpec(
    "offset_versions",
    _VERSIONS_COMMENT,
    _versions(_SEQUENCE),
    (TRANSLATION_OBSERVATIONS,),
    "materialized_view",
)
OFFSET_VERSIONS_AUTO_CDC: Final = replace(OFFSET_VERSIONS, columns=_versions(_AUTO_CDC_SEQUENCE))
"""offset_versions as AUTO CDC keeps it (Databricks): its sequence columns have sequence_by's type."""
_GOLD_KEY_AND_OFFSET: Final = (
    *_GOLD_KEY,
    *_TRANSLATION,
    (
        "source_timestamp",
        "TIMESTAMP",
        "When this translation was first observed (checkpoint or snapshot time)",
    ),
    ("valid_from", "TIMESTAMP", "Start of validity: first observation of this translation"),
    ("valid_to", "TIMESTAMP", "End of validity (exclusive); NULL while current"),
)
OFFSET_HISTORY: Final = TableSpec(
    "offset_history",
    "Every distinct translation (upstream -> downstream offset) per (source_cluster, consumer_group, topic, "
    "partition, method) with its validity interval. As of T: valid_from <= T AND (valid_to IS NULL OR "
    "valid_to > T).",
    _GOLD_KEY_AND_OFFSET,
    (OFFSET_VERSIONS,),
    "materialized_view",
)
LATEST_OFFSETS: Final = TableSpec(
    "latest_offsets",
    "The current translated offset per (source_cluster, consumer_group, topic, partition): among the "
    "methods translating the freshest upstream offset, the first in offsetlake.method.precedence. Age: "
    "now minus last_observed_at, computed when read.",
    (
        *_GOLD_KEY_AND_OFFSET,
        ("methods_disagree", "BOOLEAN", "True when methods translating the same upstream offset differ"),
        ("last_observed_at", "TIMESTAMP", "Latest observation that still gave this translation"),
    ),
    (OFFSET_VERSIONS,),
    "materialized_view",
)

K2K_MAPPING_CONFLICTS: Final = TableSpec(
    "k2k_mapping_conflicts",
    "Group-partitions whose record-level mapping translation rests on a source record K2K mapped to "
    "more than one target topic (two K2K routings of one source topic). One row per target topic; the "
    "apply job refuses them unless told to ignore it (K2K's onMultipleTargetCommittedOffsets). Newest "
    "group-offset snapshots only.",
    (
        *_GOLD_KEY,
        *_UPSTREAM_POSITION,
        ("mapped_source_offset", "BIGINT", "Source offset of the mapped record the translation rests on"),
        ("target_topics", "ARRAY<STRING>", "Every target topic that source record was mapped to, sorted"),
        ("downstream_offset", "BIGINT", "This routing's translated offset"),
        ("snapshot_time", "TIMESTAMP", "When the group's offsets were listed on the source cluster"),
    ),
    (LATEST_GROUP_OFFSETS, SILVER_MAPPINGS),
    "materialized_view",
)

_PROGRESS_COLUMNS: Final = (
    ("source_cluster", "STRING", "MM2 alias of the source cluster"),
    ("topic", "STRING", "Upstream (source-cluster) topic"),
    ("partition", "INT", "Upstream partition"),
    (
        "status",
        "STRING",
        "replicating (position known), reset (stored offset deleted, no sync since) or never_replicated "
        "(no Connect offset, no offset sync)",
    ),
    (
        "upstream_offset",
        "BIGINT",
        "Last upstream offset known to be on the target (MirrorSourceConnector offset, or a fresher offset "
        "sync); NULL unless replicating",
    ),
    ("position_method", "STRING", "Which record gave upstream_offset: connect_offset or offset_sync"),
    ("log_start_offset", "BIGINT", "Source log start offset at snapshot_time"),
    ("log_end_offset", "BIGINT", "Source log end offset at snapshot_time"),
    (
        "lag_records",
        "BIGINT",
        "Offsets on the source not yet replicated: log_end_offset - (upstream_offset + 1); for "
        "never_replicated the whole retained log; NULL when reset",
    ),
    (
        "lag_seconds",
        "BIGINT",
        "At least this long the first unreplicated record has waited: from the first snapshot that showed it "
        "to snapshot_time (snapshot granularity); 0 when caught up; NULL when unknown",
    ),
    ("last_progress_at", "TIMESTAMP", "When MM2's position last changed (Connect flush or offset sync time)"),
    ("snapshot_time", "TIMESTAMP", "When the source log offsets were listed; the position is as of then"),
)
_PROGRESS_INPUTS: Final = (SILVER_CONNECT_OFFSETS, SILVER_OFFSET_SYNCS, SOURCE_LOG_OFFSETS)
"""MM2's positions (Connect offsets, offset syncs) and the source heads: what progress is computed from."""
REPLICATION_PROGRESS_HISTORY: Final = TableSpec(
    "replication_progress_history",
    "MM2's replication progress per source partition at every log-offset snapshot: the replicated position "
    "as of the snapshot, the source head then, and the lag.",
    _PROGRESS_COLUMNS,
    _PROGRESS_INPUTS,
    "materialized_view",
)
REPLICATION_PROGRESS: Final = TableSpec(
    "replication_progress",
    "MM2's replication progress per source partition at the newest log-offset snapshot: current lag in "
    "records and seconds, and when MM2 last made progress.",
    _PROGRESS_COLUMNS,
    _PROGRESS_INPUTS,
    "materialized_view",
)
FAILOVER_DATA_LOSS: Final = TableSpec(
    "failover_data_loss",
    "What failing over now would cost each group on each source partition: records it consumed on the "
    "source that are not on the target, and unconsumed records that would be lost (newest snapshots).",
    (
        ("source_cluster", "STRING", "MM2 alias of the source cluster"),
        ("consumer_group", "STRING", "Consumer group id"),
        ("topic", "STRING", "Upstream (source-cluster) topic"),
        ("partition", "INT", "Upstream partition"),
        ("target_topic", "STRING", "The topic's name on the target cluster"),
        ("committed_offset", "BIGINT", "The group's committed offset on the source (newest snapshot)"),
        (
            "status",
            "STRING",
            "Replication status of the partition (see replication_progress); NULL: no snapshot",
        ),
        (
            "replicated_through",
            "BIGINT",
            "First upstream offset not on the target: upstream_offset + 1 (log start if never replicated)",
        ),
        ("log_end_offset", "BIGINT", "Source log end offset at the newest snapshot"),
        (
            "consumed_not_replicated",
            "BIGINT",
            "Records the group consumed on the source that are not on the target: committed offset beyond "
            "the replicated position; NULL when the position is unknown (reset)",
        ),
        (
            "unconsumed_lost",
            "BIGINT",
            "Records the group has not consumed that are not on the target: lost to it by a failover now",
        ),
        ("committed_at", "TIMESTAMP", "When the group's offsets were snapshotted"),
        ("progress_at", "TIMESTAMP", "When the source log offsets were snapshotted"),
    ),
    (LATEST_GROUP_OFFSETS, *_PROGRESS_INPUTS),
    "materialized_view",
)

ALL_TABLES: Final = (
    BRONZE_CHECKPOINTS,
    BRONZE_OFFSET_SYNCS,
    BRONZE_MAPPINGS,
    BRONZE_GROUP_OFFSETS,
    BRONZE_CONNECT_OFFSETS,
    SOURCE_LOG_OFFSETS,
    CLUSTER_HEALTH,
    DECODED_CHECKPOINTS,
    DECODED_OFFSET_SYNCS,
    DECODED_MAPPINGS,
    DECODED_CONNECT_OFFSETS,
    SILVER_CHECKPOINTS,
    SILVER_OFFSET_SYNCS,
    SILVER_MAPPINGS,
    SILVER_GROUP_OFFSETS,
    SILVER_CONNECT_OFFSETS,
    QUARANTINE,
    LATEST_GROUP_OFFSETS,
    TRANSLATION_OBSERVATIONS,
    OFFSET_VERSIONS,
    OFFSET_HISTORY,
    LATEST_OFFSETS,
    K2K_MAPPING_CONFLICTS,
    K2K_TRACING_LOOKUPS,
    REPLICATION_PROGRESS_HISTORY,
    REPLICATION_PROGRESS,
    FAILOVER_DATA_LOSS,
)

APPLY_AUDIT: Final = TableSpec(
    "apply_audit",
    "Every plan row and every result of `offsetlake plan|apply|failover|failback`: plan rows before any "
    "alter, then one result per plan row, also when the run stopped early or was interrupted. Written by "
    "the apply, not by the pipeline.",
    (
        ("run_id", "STRING", "The run: its start (UTC) and a random suffix"),
        ("mode", "STRING", "dry_run | apply | failover | resume"),
        ("stage", "STRING", "plan | result"),
        ("source_cluster", "STRING", "MM2 alias of the source cluster"),
        ("consumer_group", "STRING", "Consumer group id"),
        ("topic", "STRING", "Topic on the cluster the group is placed on"),
        ("partition", "INT", "Partition of the topic"),
        ("previous_offset", "BIGINT", "The group's committed offset there before the run (NULL: none)"),
        ("translated_offset", "BIGINT", "The translation gold gave (NULL: none)"),
        ("planned_offset", "BIGINT", "The offset the plan commits (NULL: nothing to commit)"),
        ("applied_offset", "BIGINT", "Results: the offset committed (NULL: none)"),
        ("read_back_offset", "BIGINT", "Results: the committed offset read back after the commit"),
        ("verified", "BOOLEAN", "Results: whether the read-back confirmed the commit; NULL in plan rows"),
        ("action", "STRING", "The planner's action (dry_run in dry runs)"),
        ("plan_action", "STRING", "The planner's action, in dry runs too"),
        (
            "outcome",
            "STRING",
            "Results: applied | verify_failed | skipped_active_group | failed | not_attempted | unknown, "
            "or the plan action for rows not to be altered; NULL in plan rows",
        ),
        ("reason", "STRING", "Why the planner chose the action"),
        ("error", "STRING", "Results: the error of a failed commit"),
        (
            "records_reread",
            "BIGINT",
            "Records the group reads again: it moves back (NULL: no previous offset)",
        ),
        ("records_skipped", "BIGINT", "Records the group never reads: it moves forward (NULL: likewise)"),
        ("source_timestamp", "TIMESTAMP", "Source time of the translation"),
        ("as_of", "TIMESTAMP", "The run's --as-of (NULL: the latest translations)"),
        ("run_started_at", "TIMESTAMP", "When the run started"),
        ("recorded_at", "TIMESTAMP", "When the row was written (results: when the partition finished)"),
        (
            "direction",
            "STRING",
            "failover (plan, apply, failover) | failback; NULL in rows from before the column",
        ),
    ),
)
APPLY_AUDIT_ADDED: Final = ("direction",)
"""APPLY_AUDIT's columns added after tables were created without them: an older table gains them
(offsetlake.apply.audit.add_missing_columns), an older row or journal file reads them as NULL."""

MM2_RESET_AUDIT: Final = TableSpec(
    "mm2_reset_audit",
    "Every run of `offsetlake mm2 reset-offsets`, dry runs included: one row per Connect offset key or "
    "source partition of the connector, and per partition of a truncated offset-syncs topic.",
    (
        ("run_id", "STRING", "The run: its start (UTC) and a random suffix"),
        ("mode", "STRING", "dry_run | execute"),
        ("connector", "STRING", "The connector whose Connect offsets were reset"),
        (
            "offsets_topic",
            "STRING",
            "The Connect offsets topic (for delete_records rows: the offset-syncs topic)",
        ),
        ("kafka_partition", "INT", "Partition of the topic the key was read from (or truncated)"),
        (
            "kafka_offset",
            "BIGINT",
            "Offset of the key's newest record (for delete_records rows: the log end deleted up to)",
        ),
        ("java_partition", "INT", "The partition Java's default partitioner chooses for the key"),
        ("source_partition", "STRING", "The Connect source partition, compact JSON"),
        ("stored_offset", "STRING", "The stored source offset, compact JSON (NULL: reset already)"),
        (
            "action",
            "STRING",
            "tombstone | already_reset | skip_wrong_partition | reset_via_rest | delete_records",
        ),
        (
            "verified",
            "BOOLEAN",
            "Executed rows that change something: whether reading back confirmed it; NULL otherwise",
        ),
        ("recorded_at", "TIMESTAMP", "When the row was written"),
    ),
)
"""Written by `offsetlake mm2 reset-offsets` (offsetlake.mm2_reset.audit), not by the pipeline."""
