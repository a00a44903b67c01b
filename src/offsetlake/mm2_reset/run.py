"""``run_reset(ResetRequest) -> ResetResult``: one ``offsetlake mm2 reset-offsets`` run, typed.

The one place that chooses how a connector's offsets are reset:

- **Through the Connect REST API** when a worker URL is given (Kafka 3.6+, KIP-875,
  ``kafka/connect_rest.py``), the safer path: the worker stops the connector and resets its
  offsets itself, and refuses to while the connector runs.
- **With tombstones** in the offsets topic otherwise (``offsets_topic.py``). A running connector
  would overwrite them at its next offset flush, so an execute is refused unless the operator
  confirms the connectors are stopped. After writing, the topic is read again and each key's
  newest record must be the tombstone.

Dry run is the default: it reads and plans and writes nothing to Kafka. Either way every planned
row is appended to ``mm2_reset_audit`` (``audit.py``), dry runs included. When the reset verified,
MM2's offset-syncs topic is then truncated if asked (so restarted connectors translate with new
syncs only), and recorded in the same run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import IntEnum
from typing import TYPE_CHECKING, Any

from offsetlake.audit_ids import new_run_id
from offsetlake.contract.tables import DEFAULT_SCHEMA
from offsetlake.errors import OffsetlakeError, UsageError
from offsetlake.kafka.connect_rest import ConnectRest
from offsetlake.mm2_reset import audit
from offsetlake.mm2_reset.offsets_topic import (
    read_offsets_topic,
    truncate_offset_syncs,
    write_tombstones,
)
from offsetlake.mm2_reset.plan import (
    ResetRow,
    RestResetRow,
    Truncation,
    plan_reset,
    plan_rest_reset,
    rest_partitions_to_reset,
    still_holding_records,
    to_tombstone,
    verify_rest_reset,
    verify_tombstones,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_TIMEOUT_S = 30.0

ClientConfig = Callable[[str | None], Mapping[str, str]]
"""librdkafka settings for a cluster given by its bootstrap servers (None: the default target).
Called only when a run talks to that cluster: the REST path never reads the offsets topic."""


class ResetStatus(IntEnum):
    """The command's exit status for a run that completed."""

    OK = 0
    FAILED = 1
    """A tombstone or REST reset did not verify, or the offset-syncs topic still holds records."""


@dataclass(frozen=True)
class ResetRequest:
    connector: str
    offsets_topic: str | None
    """The Connect offsets topic on the target; required without ``connect_url``."""
    topics: str | None = None
    """Only source partitions whose ``topic`` fully matches this regex."""
    execute: bool = False
    connectors_stopped: bool = False
    timeout_s: float = DEFAULT_TIMEOUT_S
    connect_url: str | None = None
    """A Kafka Connect worker's REST URL: stop and reset through it instead of writing tombstones."""
    target_bootstrap_servers: str | None = None
    """The cluster holding the offsets topic (None: the target ``client_config`` resolves)."""
    truncate_offset_syncs: str | None = None
    """MM2's offset-syncs topic to empty once the reset verified (None: left alone)."""
    offset_syncs_bootstrap: str | None = None
    """The cluster holding the offset-syncs topic (None: the target)."""
    catalog: str | None = None
    schema: str | None = None
    """Schema of the ``mm2_reset_audit`` table (None: the local schema, ``offsetlake``)."""

    @property
    def audit_table(self) -> str:
        return audit.audit_table_name(self.schema or DEFAULT_SCHEMA, self.catalog)


@dataclass(frozen=True)
class TombstoneReset:
    """The offsets topic's partition count, every planned key, and the tombstones that did not verify."""

    partitions: int
    rows: list[ResetRow]
    not_verified: list[ResetRow]


@dataclass(frozen=True)
class RestReset:
    """Every selected source partition as the worker listed it, and those it still lists with an offset."""

    rows: list[RestResetRow]
    not_verified: list[RestResetRow]


@dataclass(frozen=True)
class ResetResult:
    """What one run found and did: exactly one of ``tombstones`` and ``rest``; ``truncation`` when
    the offset-syncs topic was asked for and the reset verified."""

    request: ResetRequest
    run_id: str
    tombstones: TombstoneReset | None = None
    rest: RestReset | None = None
    truncation: list[Truncation] | None = None
    error: OffsetlakeError | None = None
    """What failed after the reset was done (recording it, or the truncation): the caller reports
    what was done, then raises this."""

    @property
    def executed(self) -> bool:
        return self.request.execute

    @property
    def reset_verified(self) -> bool:
        part = self.tombstones if self.tombstones is not None else self.rest
        return part is None or not part.not_verified

    @property
    def not_truncated(self) -> list[int]:
        """Partitions of the offset-syncs topic an executed truncation left records in."""
        if not self.executed or self.truncation is None:
            return []
        return still_holding_records(self.truncation)

    @property
    def status(self) -> ResetStatus:
        return ResetStatus.OK if self.reset_verified and not self.not_truncated else ResetStatus.FAILED


def run_reset(
    request: ResetRequest, *, client_config: ClientConfig, audit_session: Callable[[], SparkSession]
) -> ResetResult:
    """Reset (through the worker with ``connect_url``, else with tombstones), record it, then
    truncate the offset syncs if asked and the reset verified. ``client_config`` gives a cluster's
    client settings by its bootstrap servers (None: the command's target), as the caller resolved
    them; ``audit_session`` the Spark session the audit is appended through, as the caller opens it."""
    run = _ResetRun(request, new_run_id(datetime.now(UTC)), audit_session)
    if request.connect_url:
        reset = run_rest_reset(request, ConnectRest(request.connect_url, timeout_s=request.timeout_s))
        result = ResetResult(request, run.run_id, rest=reset)
        records = audit.rest_records(run.run_id, request, reset.rows, reset.not_verified)
    else:
        tombstones = run_tombstone_reset(request, client_config)
        result = ResetResult(request, run.run_id, tombstones=tombstones)
        records = audit.tombstone_records(run.run_id, request, tombstones.rows, tombstones.not_verified)
    try:
        run.append(records)
    except OffsetlakeError as error:
        return replace(result, error=error)
    if request.truncate_offset_syncs and result.reset_verified:
        return _truncate(run, result, request.truncate_offset_syncs, client_config)
    return result


def run_tombstone_reset(request: ResetRequest, client_config: ClientConfig) -> TombstoneReset:
    """Plan (always), then with ``execute`` write the tombstones and read them back. Refused before
    anything is read when executing without the operator's word that the connectors are stopped."""
    topic = request.offsets_topic
    if not topic:
        raise UsageError("mm2 reset-offsets: --offsets-topic is required without --connect-url")
    config = client_config(request.target_bootstrap_servers)
    if request.execute and not request.connectors_stopped:
        raise UsageError(
            f"refusing to reset {request.connector!r}: a running connector rewrites its offsets "
            "at its next flush. Stop it (PUT /connectors/<name>/stop, or stop MirrorMaker), "
            "then pass --connectors-stopped; or give --connect-url to let the worker stop and reset it"
        )
    partitions, stored = read_offsets_topic(config, topic, timeout_s=request.timeout_s)
    rows = plan_reset(stored, partitions, request.connector, request.topics)
    if not request.execute:
        return TombstoneReset(partitions, rows, [])
    write_tombstones(config, topic, to_tombstone(rows), timeout_s=request.timeout_s)
    _, after = read_offsets_topic(config, topic, timeout_s=request.timeout_s)
    return TombstoneReset(partitions, rows, verify_tombstones(after, rows))


def run_rest_reset(request: ResetRequest, rest: ConnectRest) -> RestReset:
    """Through the worker: list the connector's offsets (always); with ``execute`` stop it, reset the
    selected partitions (all of them: DELETE; some: PATCH with null offsets) and list them again."""
    rows = plan_rest_reset(rest.offsets(request.connector), request.topics)
    if not request.execute:
        return RestReset(rows, [])
    rest.stop(request.connector, wait_s=request.timeout_s)
    selected = rest_partitions_to_reset(rows)
    if not request.topics:
        rest.reset_all(request.connector)
    elif selected:
        rest.reset(request.connector, selected)
    return RestReset(rows, verify_rest_reset(rest.offsets(request.connector), rows))


def _truncate(run: _ResetRun, result: ResetResult, topic: str, client_config: ClientConfig) -> ResetResult:
    """Truncate the offset syncs and record it; a failure is kept for the caller, after the reset."""
    request = run.request
    rows: list[Truncation] | None = None
    try:
        config = client_config(request.offset_syncs_bootstrap or request.target_bootstrap_servers)
        rows = truncate_offset_syncs(config, topic, execute=request.execute, timeout_s=request.timeout_s)
        run.append(audit.truncation_records(run.run_id, request, topic, rows))
    except OffsetlakeError as error:
        return replace(result, truncation=rows, error=error)
    return replace(result, truncation=rows)


@dataclass(frozen=True)
class _ResetRun:
    request: ResetRequest
    run_id: str
    audit_session: Callable[[], SparkSession]

    def append(self, records: Sequence[tuple[Any, ...]]) -> None:
        """Append to the audit; Spark is started only when there is something to record."""
        if records:
            audit.append_audit(self.audit_session(), self.request.audit_table, records)
