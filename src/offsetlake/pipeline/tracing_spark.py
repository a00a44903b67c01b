"""The k2k_tracing_headers method in the pipeline: group-offset snapshots -> k2k_tracing_lookups.

Each new snapshot row of a source cluster with a K2K route (``offsetlake.k2k.tracing.topics``) is
looked up on the TARGET cluster alone: a binary search over the routed target partition on K2K's
record-tracing headers (offsetlake.kafka.tracing_reader), so it needs no mapping topic and no
source cluster. The search runs in a pandas UDF, one Kafka consumer per Arrow batch and positions
shared by many groups looked up once. A lookup that cannot translate (unreachable
target, headerless partition, partition starting after U) is a row with its reason, never a failed
flow; every search is bounded in fetches and time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf
from pyspark.sql.types import (
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from offsetlake.k2k.routing import TracingRoute
from offsetlake.k2k.tracing import TracingHeaderNames
from offsetlake.pipeline.tables import K2K_TRACING_LOOKUPS

_RESULT_FIELDS: Final = (
    ("downstream_offset", LongType()),
    ("matched_source_offset", LongType()),
    ("matched_target_offset", LongType()),
    ("exact", BooleanType()),
    ("probes", IntegerType()),
    ("lookup_seconds", DoubleType()),
    ("reason", StringType()),
    ("looked_up_at", TimestampType()),
)
RESULT_SCHEMA: Final = StructType([StructField(name, kind) for name, kind in _RESULT_FIELDS])
"""What one search adds to a request row (k2k_tracing_lookups' remaining columns). A StructType, not
DDL text: parsing DDL is a server call, which a pipeline query function may not make."""


def routed_topic(routes: tuple[TracingRoute, ...], alias: Column, source_topic: Column) -> Column:
    """The target topic K2K writes ``source_topic`` to, by the source alias's route; NULL: no route."""
    target: Column = sf.lit(None).cast("string")
    for route in routes:
        pieces: list[Column] = []
        for index, part in enumerate(route.parts):
            if index:
                pieces.append(source_topic)
            pieces.append(sf.lit(part))
        target = sf.when(alias == route.alias, sf.concat(*pieces)).otherwise(target)
    return target


def tracing_lookups(
    group_offsets: DataFrame,
    routes: tuple[TracingRoute, ...],
    names: TracingHeaderNames,
    client_config: Mapping[str, Any],
    timeout_s: float,
) -> DataFrame:
    """``group_offsets`` (silver_group_offsets rows, a stream or a batch) as k2k_tracing_lookups rows.

    ``client_config`` is the target cluster's librdkafka configuration. The target partition is
    the source partition (K2K's ``sink.partition: source``; see offsetlake.k2k.routing). The search
    is a pandas UDF over each Arrow batch of requests (not ``mapInArrow``: under Spark Connect it
    asks the server for its input's columns, which a pipeline query function may not do).
    """
    aliases = [route.alias for route in routes]
    requests = group_offsets.where(
        sf.col("source_cluster").isin(*aliases) & (sf.col("committed_offset") >= 0)
    ).select(
        "source_cluster",
        "consumer_group",
        routed_topic(routes, sf.col("source_cluster"), sf.col("topic")).alias("topic"),
        "partition",
        sf.col("topic").alias("upstream_topic"),
        sf.col("partition").alias("upstream_partition"),
        sf.col("committed_offset").alias("upstream_offset"),
        "metadata",
        "snapshot_time",
    )
    search = _search_udf(dict(client_config), names, timeout_s)
    found = requests.select(
        "*",
        search("topic", "partition", "upstream_topic", "upstream_partition", "upstream_offset").alias(
            "_found"
        ),
    )
    return found.select(
        *[
            sf.col(f"_found.{name}").alias(name) if name in RESULT_SCHEMA.fieldNames() else sf.col(name)
            for name in K2K_TRACING_LOOKUPS.column_names
        ]
    )


def _search_udf(config: dict[str, Any], names: TracingHeaderNames, timeout_s: float) -> Callable[..., Column]:
    """A pandas UDF searching one batch of requests on the target, one consumer per batch."""

    def search(
        topic: pd.Series,
        partition: pd.Series,
        source_topic: pd.Series,
        source_partition: pd.Series,
        upstream: pd.Series,
    ) -> pd.DataFrame:
        return search_batch(
            config, names, timeout_s, topic, partition, source_topic, source_partition, upstream
        )

    return sf.pandas_udf(search, RESULT_SCHEMA)  # type: ignore[call-overload]


def search_batch(
    config: Mapping[str, Any], names: TracingHeaderNames, timeout_s: float, *columns: pd.Series
) -> pd.DataFrame:
    """The searches of one batch of requests (columns: target topic, target partition, source
    topic, source partition, upstream offset), one row of RESULT_SCHEMA each, in order."""
    from offsetlake.kafka.tracing_reader import SearchLimits, TracingRequest, translate_from_tracing_headers

    requests = [
        TracingRequest(str(topic), int(partition), str(source_topic), int(source_partition), int(upstream))
        for topic, partition, source_topic, source_partition, upstream in zip(*columns, strict=True)
    ]
    found = {
        result.request: result
        for result in translate_from_tracing_headers(
            config, requests, names, SearchLimits(timeout_s=timeout_s)
        )
    }
    looked_up_at = pd.Timestamp.now(tz="UTC")
    rows = []
    for request in requests:
        result = found[request]
        translation = result.translation
        rows.append(
            {
                "downstream_offset": translation.downstream_offset,
                "matched_source_offset": translation.matched_source_offset,
                "matched_target_offset": translation.matched_target_offset,
                "exact": translation.exact,
                "probes": translation.probes,
                "lookup_seconds": result.seconds,
                "reason": translation.reason,
                "looked_up_at": looked_up_at,
            }
        )
    frame = pd.DataFrame(rows, columns=RESULT_SCHEMA.fieldNames())
    for name in ("downstream_offset", "matched_source_offset", "matched_target_offset"):
        frame[name] = frame[name].astype("Int64")
    frame["probes"] = frame["probes"].astype("int32")
    return frame
