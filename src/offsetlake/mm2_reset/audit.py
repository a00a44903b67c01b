"""The ``mm2_reset_audit`` table: every run of ``offsetlake mm2 reset-offsets``, dry runs included.

One row per planned key (tombstones), per source partition (Connect REST API) and per partition
of a truncated offset-syncs topic: what was found, what was (or would be) done, and whether it
verified. Named with catalog and schema as ``apply_audit`` is (``offsetlake.contract.gold.table_name``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar

from offsetlake.contract.gold import table_name
from offsetlake.contract.tables import MM2_RESET_AUDIT
from offsetlake.mm2_reset.plan import TRUNCATION_ACTION, ResetAction, ResetRow, RestResetRow, Truncation

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class AuditedRequest(Protocol):
    """What a row records of its run's request (``run.ResetRequest`` is one): the audit sits below
    the run that appends to it, so it names the fields it reads instead of importing the run."""

    @property
    def connector(self) -> str: ...

    @property
    def offsets_topic(self) -> str | None: ...

    @property
    def execute(self) -> bool: ...


class ResetMode(StrEnum):
    DRY_RUN = "dry_run"
    EXECUTE = "execute"


AUDIT_TABLE: Final = MM2_RESET_AUDIT.name


def audit_table_name(schema: str, catalog: str | None = None) -> str:
    return table_name(AUDIT_TABLE, schema, catalog)


Row = TypeVar("Row", ResetRow, RestResetRow)


def _mode(request: AuditedRequest) -> str:
    return (ResetMode.EXECUTE if request.execute else ResetMode.DRY_RUN).value


def tombstone_records(
    run_id: str, request: AuditedRequest, rows: Sequence[ResetRow], not_verified: Sequence[ResetRow]
) -> list[tuple[Any, ...]]:
    """One row per planned key; ``verified`` for the tombstones of an executed run."""
    return _records(
        run_id,
        request,
        rows,
        not_verified,
        altering=ResetAction.TOMBSTONE,
        placement=lambda row: (row.stored.partition, row.stored.kafka_offset, row.java_partition),
    )


def rest_records(
    run_id: str, request: AuditedRequest, rows: Sequence[RestResetRow], not_verified: Sequence[RestResetRow]
) -> list[tuple[Any, ...]]:
    """One row per selected source partition; ``verified`` for those an executed run reset."""
    return _records(
        run_id,
        request,
        rows,
        not_verified,
        altering=ResetAction.RESET_VIA_REST,
        placement=lambda _row: (None, None, None),
    )


def _records(
    run_id: str,
    request: AuditedRequest,
    rows: Sequence[Row],
    not_verified: Sequence[Row],
    *,
    altering: ResetAction,
    placement: Callable[[Row], tuple[int | None, int | None, int | None]],
) -> list[tuple[Any, ...]]:
    """One audit row per row; ``placement`` is (kafka partition, kafka offset, java partition) of a
    stored key, ``verified`` is set for the rows an executed run altered (``altering``)."""
    failed = {id(row) for row in not_verified}
    now = datetime.now(UTC)
    return [
        (
            run_id,
            _mode(request),
            request.connector,
            request.offsets_topic,
            *placement(row),
            row.source_partition_json,
            row.stored_offset_json,
            row.action.value,
            (id(row) not in failed) if request.execute and row.action is altering else None,
            now,
        )
        for row in rows
    ]


def truncation_records(
    run_id: str, request: AuditedRequest, topic: str, rows: Sequence[Truncation]
) -> list[tuple[Any, ...]]:
    """One row per partition of the offset-syncs topic; ``verified`` when executed."""
    now = datetime.now(UTC)
    return [
        (
            run_id,
            _mode(request),
            request.connector,
            topic,
            row.partition,
            row.log_end,
            None,
            None,
            None,
            TRUNCATION_ACTION,
            row.verified if request.execute else None,
            now,
        )
        for row in rows
    ]


def append_audit(spark: SparkSession, table: str, records: Iterable[tuple[Any, ...]]) -> int:
    """Append rows (creating the table in the session's default format on first use), as
    ``offsetlake.apply.audit.append_audit`` appends to ``apply_audit``."""
    from pyspark.sql.types import StructType

    records = list(records)
    if records:
        schema = StructType.fromDDL(MM2_RESET_AUDIT.spark_schema)
        spark.createDataFrame(records, schema).write.mode("append").saveAsTable(table)
    return len(records)
