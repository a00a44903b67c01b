"""One plan or apply run as a typed function: ``run_apply(ApplyRequest) -> ApplyResult``.

Both read gold, read the target, and build the same plan; a dry run (``offsetlake plan``) stops
there and records the plan in the audit with action ``dry_run``; an apply carries it out and
verifies it. The command line, the demo and the Databricks job task all call this function; what
is printed is decided by the caller from the result (offsetlake.cli.render).

Status: ``OK`` when everything planned was applied and verified (skips are not failures),
``FAILED`` when anything failed (an alter, a read-back, or writing the results to the audit), or
the run stopped early because the target stopped answering or the overall deadline passed,
``REFUSED`` when the ``fail`` active-group policy fired: up front, before anything was altered,
or for a group that became active during the run (the others were applied). Errors before any
plan exists (gold, the target, settings) are raised as OffsetlakeError, secrets masked. SIGINT or
SIGTERM during the alters still records a result for every planned row, then raises.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from enum import IntEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from offsetlake.apply import audit, gold
from offsetlake.apply.executor import Outcome, PartitionResult, execute_plan
from offsetlake.apply.planner import (
    Action,
    ActiveGroupPolicy,
    Guards,
    PlanRow,
    Selection,
    build_plan,
    invalid_reason,
    refused_by_active_policy,
    select_offsets,
)
from offsetlake.apply.target_state import read_target_state
from offsetlake.errors import OffsetlakeError
from offsetlake.jobs.session import get_spark
from offsetlake.kafka.admin import KafkaAdminError, describe_error, read_offsets_retention
from offsetlake.kafka.client_logging import flush_client_logs, with_client_logger
from offsetlake.kafka.secrets import (
    DatabricksSecrets,
    SecretScrubber,
    SecretsProvider,
    kafka_options_from_properties,
    kafka_options_from_scope,
    target_client_config,
)
from offsetlake.local.clusters import read_local_clusters
from offsetlake.local.spark import LOCAL_SCHEMA
from offsetlake.pipeline.precedence import METHODS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MAX_AGE = timedelta(hours=1)
DEFAULT_CONCURRENCY = 8
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_DEADLINE_S = 600.0
DEFAULT_KEEP_ALIVE_FRACTION = 0.5
FALLBACK_OFFSETS_RETENTION = timedelta(days=1)
"""Assumed when the target's offsets.retention.minutes cannot be read: Kafka's default before 2.0
(KIP-186 raised it to 7 days), so a cluster still on the short setting is refreshed in time."""


class ApplyStatus(IntEnum):
    """The run's verdict; the value is the command line's exit status."""

    OK = 0
    FAILED = 1
    REFUSED = 3


@dataclass(frozen=True)
class ApplyRequest:
    """Everything one run needs, validated by whoever builds it (the CLI parses into it)."""

    dry_run: bool
    selection: Selection = field(default_factory=Selection)
    as_of: datetime | None = None
    method_precedence: tuple[str, ...] = METHODS
    allow_rewind: bool = False
    active_group_policy: ActiveGroupPolicy = ActiveGroupPolicy.FAIL
    max_age: timedelta | None = DEFAULT_MAX_AGE
    target_bootstrap_servers: str | None = None
    catalog: str | None = None
    schema: str | None = None
    secret_scope: str | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    timeout_s: float = DEFAULT_TIMEOUT_S
    deadline_s: float | None = DEFAULT_DEADLINE_S
    """No new group is started this many seconds after the run began (None: no overall deadline)."""
    keep_alive_fraction: float | None = DEFAULT_KEEP_ALIVE_FRACTION
    """Commit an unchanged offset again once offsetlake's last commit of it is older than this
    fraction of the target's offsets.retention.minutes (None: never)."""
    kafka_properties: Path | None = None
    """A Java properties file of Kafka client settings (local runs); values are masked like secrets."""


@dataclass(frozen=True)
class ApplyResult:
    """What a run planned and did; ``problems`` are the lines an operator must read (secrets masked)."""

    request: ApplyRequest
    run_id: str
    status: ApplyStatus
    target: str
    audit_table: str
    started_at: datetime
    gold_rows: int = 0
    """Translations read from gold, before the selection's regexes (the literal names it gives are
    read alone); 0 only when gold holds none: the pipeline has translated nothing yet."""
    health: tuple[gold.ClusterHealth, ...] = ()
    plan: tuple[PlanRow, ...] = ()
    results: tuple[PartitionResult, ...] = ()
    refusing_groups: tuple[str, ...] = ()
    keep_alive: str = ""
    """How the keep-alive interval was set (printed with the plan)."""
    data_loss: tuple[gold.GroupDataLoss, ...] = ()
    """What failing over now would cost each selected group (not for --as-of restores)."""
    problems: tuple[str, ...] = ()
    scrubber: SecretScrubber = field(default_factory=SecretScrubber, repr=False)

    @property
    def nothing_selected(self) -> bool:
        return self.gold_rows > 0 and not self.plan

    @property
    def reference_time(self) -> datetime:
        """What translation ages are measured to: the --as-of time of a restore, else the start."""
        return self.request.as_of or self.started_at


def run_apply(
    request: ApplyRequest,
    *,
    secrets: SecretsProvider | None = None,
    spark: SparkSession | None = None,
) -> ApplyResult:
    """One plan or apply run; ``secrets`` replaces the Databricks secret scope (tests)."""
    scrubber = SecretScrubber()
    try:
        secret_options = (
            kafka_options_from_properties(request.kafka_properties) if request.kafka_properties else {}
        )
        if request.secret_scope:
            secret_options.update(
                kafka_options_from_scope(secrets or DatabricksSecrets(), request.secret_scope)
            )
        scrubber = SecretScrubber(secret_options)
        config = _target_config(request, secret_options)
        return _run(request, config=config, scrubber=scrubber, spark=spark or _spark())
    except OffsetlakeError as error:
        raise error.rewritten(scrubber.scrub) from error
    except KafkaException as error:
        raise KafkaAdminError(scrubber.scrub(describe_error(error))) from error


def _target_config(request: ApplyRequest, secret_options: dict[str, str]) -> dict[str, str]:
    bootstrap = request.target_bootstrap_servers
    if not bootstrap and "kafka.bootstrap.servers" not in secret_options:
        bootstrap = read_local_clusters().target.bootstrap_servers
    return target_client_config(bootstrap, secret_options)


def _spark() -> SparkSession:
    """The Databricks runtime's session on Databricks (job cluster or serverless; never a local
    JVM there), the shared local one elsewhere: offsetlake.jobs.session.get_spark."""
    return get_spark()


def _run(
    request: ApplyRequest, *, config: dict[str, str], scrubber: SecretScrubber, spark: SparkSession
) -> ApplyResult:
    started_at = datetime.now(UTC)
    started = time.monotonic()
    run_info = audit.RunInfo(
        run_id=f"{started_at:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}",
        mode=audit.Mode.DRY_RUN if request.dry_run else audit.Mode.APPLY,
        started_at=started_at,
        as_of=request.as_of,
    )
    schema = request.schema or LOCAL_SCHEMA
    audit_table = audit.audit_table_name(schema, request.catalog)
    bootstrap = config["bootstrap.servers"]
    result = ApplyResult(
        request=request,
        run_id=run_info.run_id,
        status=ApplyStatus.OK,
        target=bootstrap,
        audit_table=audit_table,
        scrubber=scrubber,
        started_at=started_at,
        health=tuple(gold.read_cluster_health(spark, schema, request.catalog)),
    )

    offsets = (
        gold.read_offsets_as_of(
            spark,
            request.as_of,
            schema,
            request.catalog,
            precedence=request.method_precedence,
            selection=request.selection,
        )
        if request.as_of
        else gold.read_latest_offsets(spark, schema, request.catalog, request.selection)
    )
    gold_rows = len(offsets)
    if not offsets and gold.narrows(request.selection):
        # Only the literal names were read: is gold empty, or did the selection match nothing?
        gold_rows = gold.count_translations(spark, schema, request.catalog, request.as_of)
    result = replace(result, gold_rows=gold_rows)
    if not result.gold_rows:
        where = f"valid at {request.as_of.isoformat()} in" if request.as_of else "in"
        return _refuse_if_applying(
            result,
            f"run {run_info.run_id}: no translation {where} gold ({schema}): nothing can be applied; "
            "has the pipeline run against these clusters? (see cluster_health)",
        )
    if request.as_of is None:
        loss = gold.read_failover_data_loss(spark, schema, request.catalog, request.selection)
        result = replace(result, data_loss=tuple(loss))
    offsets = select_offsets(offsets, request.selection)
    if not offsets:
        return result

    admin = AdminClient(with_client_logger(config))
    try:
        target = read_target_state(
            admin,
            {offset.key for offset in offsets if invalid_reason(offset) is None},
            timeout_s=request.timeout_s,
        )
    except KafkaAdminError as error:
        flush_client_logs(admin)
        raise KafkaAdminError(f"target cluster {bootstrap}: {error}") from error
    applied_before = audit.read_last_applied(spark, audit_table, request.selection)
    keep_alive_after, keep_alive = _keep_alive(request, admin)
    guards = Guards(
        reference_time=request.as_of or started_at,
        max_age=request.max_age,
        allow_rewind=request.allow_rewind,
        active_group_policy=request.active_group_policy,
        last_applied={key: last.source_timestamp for key, last in applied_before.items()},
        keep_alive_after=keep_alive_after,
        last_committed_at={key: last.committed_at for key, last in applied_before.items()},
    )
    plan = tuple(build_plan(offsets, target, guards))
    audit.append_audit(spark, audit_table, _scrubbed(audit.plan_records(plan, run_info), scrubber))
    refusing = tuple(refused_by_active_policy(plan, guards))
    planned = replace(result, plan=plan, refusing_groups=refusing, keep_alive=keep_alive)
    if request.dry_run:
        return planned
    if refusing:
        return replace(
            planned,
            status=ApplyStatus.REFUSED,
            problems=(
                f"run {run_info.run_id}: refused, nothing altered: groups active on the target: "
                f"{', '.join(refusing)} (stop their consumers, or pass --active-group-policy skip)",
            ),
        )

    if _all_older_than(plan, request.max_age, guards.reference_time):
        newest = max(row.last_observed_at for row in plan if row.last_observed_at is not None)
        return replace(
            planned,
            status=ApplyStatus.FAILED,
            problems=(
                f"run {run_info.run_id}: every selected translation is older than --max-age "
                f"(the newest was observed at {newest.isoformat(timespec='seconds')}): the pipeline has "
                "not refreshed gold since; refresh it, or pass a larger --max-age to fail over anyway",
            ),
        )

    execution = execute_plan(
        lambda: AdminClient(with_client_logger(config)),
        plan,
        timeout_s=request.timeout_s,
        concurrency=request.concurrency,
        deadline=None if request.deadline_s is None else started + request.deadline_s,
    )
    flush_client_logs(admin)
    results = execution.results
    done = replace(planned, results=results)
    try:
        audit.append_audit(
            spark, audit_table, _scrubbed(audit.result_records(plan, results, run_info), scrubber)
        )
    except Exception as error:
        if execution.interrupted:
            raise execution.interrupted from error
        return replace(
            done,
            status=ApplyStatus.FAILED,
            problems=(
                f"run {run_info.run_id}: offsets were altered but the results could not be written to "
                f"{audit_table}: {scrubber.scrub(str(error))}; rerun the same command to converge",
            ),
        )
    if execution.interrupted:
        raise execution.interrupted.rewritten(
            lambda message: (
                f"{message}; run {run_info.run_id}: {_tally(results)} (every row recorded "
                f"in {audit_table}); rerun the same command to converge"
            )
        )
    if execution.stopped_because:
        return replace(
            done,
            status=ApplyStatus.FAILED,
            problems=(
                f"run {run_info.run_id}: stopped early, {execution.stopped_because}: {_tally(results)} "
                f"on {bootstrap} (every row recorded in {audit_table}); rerun the same command when the "
                "target answers: it reads the target again and converges",
            ),
        )

    failed = [r for r in results if r.outcome in (Outcome.FAILED, Outcome.VERIFY_FAILED)]
    late_active = [r for r in results if r.outcome is Outcome.SKIPPED_ACTIVE_GROUP]
    if failed:
        return replace(
            done,
            status=ApplyStatus.FAILED,
            problems=(f"run {run_info.run_id}: {len(failed)} partitions failed on {bootstrap}",),
        )
    if late_active and request.active_group_policy is ActiveGroupPolicy.FAIL:
        return replace(
            done,
            status=ApplyStatus.REFUSED,
            problems=(f"run {run_info.run_id}: groups became active during the run and were not altered",),
        )
    return done


def _keep_alive(request: ApplyRequest, admin: AdminClient) -> tuple[timedelta | None, str]:
    """The keep-alive interval (a fraction of the target's offsets retention) and how it was set."""
    if request.keep_alive_fraction is None or request.as_of is not None:
        return None, "keep-alive: off" + (" (restoring --as-of)" if request.as_of else "")
    retention = read_offsets_retention(admin, timeout_s=request.timeout_s)
    source = "read from the target"
    if retention is None:
        retention, source = (
            FALLBACK_OFFSETS_RETENTION,
            "the target's configuration could not be read; assumed",
        )
    interval = retention * request.keep_alive_fraction
    minutes = int(retention.total_seconds() // 60)
    return interval, (
        f"keep-alive: unchanged offsets offsetlake committed are committed again after {_duration(interval)} "
        f"({request.keep_alive_fraction:g} x offsets.retention.minutes={minutes}, {source})"
    )


def _duration(interval: timedelta) -> str:
    seconds = int(interval.total_seconds())
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def _tally(results: Sequence[PartitionResult]) -> str:
    counts = Counter(result.outcome.value for result in results)
    return ", ".join(f"{outcome} {count}" for outcome, count in sorted(counts.items()))


def _all_older_than(plan: Sequence[PlanRow], max_age: timedelta | None, now: datetime) -> bool:
    """Every row refused because its translation is older than --max-age (not for other reasons)."""
    return max_age is not None and all(
        row.action is Action.SKIP_STALE and (age := row.age(now)) is not None and age > max_age
        for row in plan
    )


def _refuse_if_applying(result: ApplyResult, problem: str) -> ApplyResult:
    """A dry run reports the problem and succeeds; an apply that can apply nothing fails."""
    status = ApplyStatus.OK if result.request.dry_run else ApplyStatus.FAILED
    return replace(result, status=status, problems=(problem,))


def _scrubbed(records: Sequence[tuple[Any, ...]], scrubber: SecretScrubber) -> list[tuple[Any, ...]]:
    return [
        tuple(scrubber.scrub(value) if isinstance(value, str) else value for value in record)
        for record in records
    ]
