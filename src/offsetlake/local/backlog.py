"""How many MM2 records a local pipeline update is about to read from the target, before it starts.

The JIT of the update's JVM is chosen by it (local/jit.py). Counted: the records of the target's
checkpoint topics, and of its offset-sync topics when MM2 writes them there (the records every
flow downstream decodes and windows), per partition from where the bronze stream stands to the log
end: the end of its last planned batch in the local engine's checkpoint (our Kafka source writes
``{topic: {partition: next offset}}`` there), or the log start for a partition it has not read, on
a first update and on a full refresh. Source clusters are not asked: one may be down, and an update
must not wait on it for an estimate.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from offsetlake.contract.settings import PipelineSettings
from offsetlake.contract.tables import BRONZE_CHECKPOINTS, BRONZE_OFFSET_SYNCS
from offsetlake.kafka import admin as kafka_admin
from offsetlake.kafka import clients
from offsetlake.kafka.admin import KafkaAdminError
from offsetlake.kafka.offset_ranges import PartitionKey, Subscription, from_stream_offset
from offsetlake.local.home import LOCAL_SCHEMA, LocalHome
from offsetlake.mirror.positions import LogBounds

_LOG = logging.getLogger(__name__)
ESTIMATE_TIMEOUT_S: Final = 5.0
"""At most this long asking the target; past it the backlog is not known (and C1 alone runs)."""
_CATALOG: Final = "spark_catalog"


def target_backlog(
    settings: PipelineSettings,
    home: LocalHome,
    client_config: Mapping[str, str],
    *,
    full_refresh: bool,
    timeout_s: float = ESTIMATE_TIMEOUT_S,
) -> int | None:
    """Records the update's bronze flows on the target will read; None when the target does not
    answer within ``timeout_s`` (or the pipeline's own cluster timeout, when shorter)."""
    timeout_s = min(timeout_s, settings.cluster_timeout_ms / 1000)
    subscriptions = target_subscriptions(settings)
    try:
        with clients.admin(client_config) as admin:
            counts = kafka_admin.list_partition_counts(admin, timeout_s=timeout_s)
            selected = {table: sub.select(counts) for table, sub in subscriptions.items()}
            keys = sorted({key for table_keys in selected.values() for key in table_keys})
            bounds = kafka_admin.list_log_bounds(admin, keys, timeout_s=timeout_s) if keys else {}
    except KafkaAdminError as error:
        _LOG.info("records to read not known: %s", error)
        return None
    return sum(
        records_to_read(
            {key: bounds[key] for key in table_keys},
            {} if full_refresh else stream_position(flow_checkpoint(home, table)),
        )
        for table, table_keys in selected.items()
    )


def target_subscriptions(settings: PipelineSettings) -> dict[str, Subscription]:
    """The bronze tables read on the target whose records are decoded, and what each subscribes to
    (as transformations/bronze_checkpoints.py and bronze_offset_syncs.py do)."""
    policy = settings.policy
    subscriptions = {BRONZE_CHECKPOINTS.name: Subscription(pattern=policy.checkpoints_topic_pattern())}
    if settings.offset_syncs_location == "target":
        subscriptions[BRONZE_OFFSET_SYNCS.name] = Subscription(pattern=policy.offset_syncs_topic_pattern())
    return subscriptions


def records_to_read(bounds: Mapping[PartitionKey, LogBounds], position: Mapping[PartitionKey, int]) -> int:
    """Per partition, its log end less the stream's position (never before the log start: records
    deleted by retention are not read)."""
    return sum(
        max(0, bound.log_end - max(bound.log_start, position.get(key, bound.log_start)))
        for key, bound in bounds.items()
    )


def flow_checkpoint(home: LocalHome, table: str) -> Path:
    """The local engine's checkpoint directory of a table's flow of the same name (a directory per
    checkpoint version inside: a full refresh starts the next)."""
    return home.pipeline_storage / "_checkpoints" / _CATALOG / LOCAL_SCHEMA / table / table


def stream_position(checkpoint: Path) -> dict[PartitionKey, int]:
    """Where a bronze stream stands: the end of the newest batch in its newest checkpoint version's
    offset log (line 3 of Spark's file: the one source's offset). Empty when there is none or it
    cannot be read: its partitions then count from their log start."""
    try:
        version = _newest(checkpoint)
        if version is None:
            return {}
        batch = _newest(version / "offsets")
        if batch is None:
            return {}
        lines = batch.read_text(encoding="utf-8").splitlines()
        return from_stream_offset(json.loads(lines[2]))
    except (OSError, IndexError, ValueError) as error:  # OffsetOptionError is a ValueError
        _LOG.info("stream position in %s not read: %s", checkpoint, error)
        return {}


def _newest(directory: Path) -> Path | None:
    """The entry of ``directory`` with the largest number for a name (Spark's versions and batches)."""
    if not directory.is_dir():
        return None
    numbered = [path for path in directory.iterdir() if path.name.isdigit()]
    return max(numbered, key=lambda path: int(path.name), default=None)
