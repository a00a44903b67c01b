"""`offsetlake plan` and `offsetlake apply`: write gold offsets to the target cluster's groups.

Both commands read gold, read the target, and build the same plan; `plan` stops there (a dry run,
recorded in the audit with action ``dry_run``), `apply` carries it out and verifies it.

Exit status: 0 when everything planned was applied and verified (skips are not failures),
1 when anything failed (an alter, a read-back, the target, gold or the audit), 3 when the
``fail`` active-group policy fired: up front, before anything was altered, or for a group that
became active during the run (the others were applied).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import uuid
from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TextIO

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from offsetlake.apply import audit, gold
from offsetlake.apply.executor import Outcome, PartitionResult, execute_plan
from offsetlake.apply.planner import (
    Action,
    ActiveGroupPolicy,
    GroupPartition,
    Guards,
    PlanError,
    PlanRow,
    Selection,
    TargetState,
    build_plan,
    marker_source_millis,
    refused_by_active_policy,
    select_offsets,
)
from offsetlake.apply.secrets import (
    DatabricksSecrets,
    SecretScrubber,
    SecretsProvider,
    kafka_options_from_scope,
    target_client_config,
)
from offsetlake.apply.target_state import TargetClusterError, read_target_state
from offsetlake.kafka.client_config import ClientConfigError
from offsetlake.kafka.local_cluster import LocalClusterError, load_clusters
from offsetlake.pipeline.local_spark import LOCAL_SCHEMA, get_local_spark
from offsetlake.pipeline.settings import METHODS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_REFUSED = 3

DEFAULT_MAX_AGE = "1h"
DEFAULT_CONCURRENCY = 8
DEFAULT_TIMEOUT_S = 30.0

_DURATION = re.compile(r"^(?P<amount>\d+)(?P<unit>[smhd])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    plan = subparsers.add_parser(
        "plan",
        help="dry run: show what `apply` would do to the target's consumer groups",
        description="Build the apply plan from gold and the target's state, print it, and record it "
        "in the apply_audit table with action dry_run. Nothing on the target changes.",
    )
    _add_options(plan)
    plan.set_defaults(handler=handle_plan)

    apply = subparsers.add_parser(
        "apply",
        help="write gold offsets to the target's consumer groups, then verify them",
        description="Apply translated offsets to the target cluster's consumer groups. Safe by "
        "default: active groups, rewinds, stale translations and missing topics are refused. "
        f"Exit status {EXIT_FAILED} when anything failed, {EXIT_REFUSED} when the fail "
        "active-group policy refused the run.",
    )
    _add_options(apply)
    apply.set_defaults(handler=handle_apply)


def handle_plan(args: argparse.Namespace) -> int:
    return run(args, dry_run=True)


def handle_apply(args: argparse.Namespace) -> int:
    return run(args, dry_run=False)


def run(
    args: argparse.Namespace,
    *,
    dry_run: bool,
    secrets: SecretsProvider | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """One plan or apply run; ``secrets`` replaces the Databricks secret scope (tests)."""
    out = out or sys.stdout
    err = err or sys.stderr
    scrubber = SecretScrubber()
    try:
        secret_options = _secret_options(args, secrets)
        scrubber = SecretScrubber(secret_options)
        config = _target_config(args, secret_options)
        return _run(args, dry_run=dry_run, config=config, scrubber=scrubber, out=out, err=err)
    except (
        TargetClusterError,
        gold.GoldTableError,
        PlanError,
        LocalClusterError,
        ClientConfigError,
        KafkaException,
        ValueError,
    ) as error:
        print(f"offsetlake {args.command}: error: {scrubber.scrub(str(error))}", file=err)
        return EXIT_FAILED


def parse_duration(text: str) -> timedelta | None:
    """``15m``, ``2h``, ``1d``, ``90s``; ``none`` switches the age guard off."""
    if text.strip().lower() == "none":
        return None
    match = _DURATION.match(text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(f"expected a duration like 15m, 2h, 1d or none, got {text!r}")
    return timedelta(seconds=int(match["amount"]) * _UNIT_SECONDS[match["unit"]])


def parse_timestamp(text: str) -> datetime:
    """ISO 8601; a time without a zone is taken as UTC."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected an ISO 8601 timestamp, got {text!r}") from error
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def format_plan_table(plan: Sequence[PlanRow]) -> str:
    """The plan as aligned text columns, one line per group-partition."""
    header = (
        "group",
        "topic",
        "partition",
        "current",
        "translated",
        "planned",
        "action",
        "re-read",
        "skip",
        "reason",
    )
    lines = [header] + [
        (
            row.consumer_group,
            row.topic,
            str(row.partition),
            _text(row.current_offset),
            _text(row.translated_offset),
            _text(row.planned_offset),
            row.action.value,
            _text(row.records_reread),
            _text(row.records_skipped),
            row.reason,
        )
        for row in plan
    ]
    widths = [max(len(line[column]) for line in lines) for column in range(len(header) - 1)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line[:-1], widths, strict=True)) + "  " + line[-1]
        for line in lines
    )


def parse_method_precedence(text: str) -> tuple[str, ...]:
    """``mapping,offset_sync,checkpoint`` in any order, each method exactly once."""
    methods = tuple(method.strip() for method in text.split(","))
    if sorted(methods) != sorted(METHODS):
        raise argparse.ArgumentTypeError(f"must list each of {', '.join(METHODS)} exactly once, got {text!r}")
    return methods


def _add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--as-of",
        type=parse_timestamp,
        help="restore the offsets gold had at this time (ISO 8601, UTC if no zone), from offset_history",
    )
    parser.add_argument(
        "--method-precedence",
        type=parse_method_precedence,
        default=METHODS,
        help="with --as-of: which translation method wins among those current at that time, as the "
        f"pipeline's offsetlake.method.precedence (default: {','.join(METHODS)})",
    )
    parser.add_argument("--groups", default=".*", help="regex of consumer groups to include (default: all)")
    parser.add_argument("--exclude-groups", help="regex of consumer groups to leave alone")
    parser.add_argument("--topics", default=".*", help="regex of target topics to include (default: all)")
    parser.add_argument("--exclude-topics", help="regex of target topics to leave alone")
    parser.add_argument(
        "--allow-rewind",
        action="store_true",
        help="move groups backwards (re-reading data), including translations older than "
        "the ones already applied",
    )
    parser.add_argument(
        "--active-group-policy",
        type=ActiveGroupPolicy,
        default=ActiveGroupPolicy.FAIL,
        choices=list(ActiveGroupPolicy),
        help="a group with members on the target is never touched; `fail` refuses the "
        "whole run, `skip` leaves just that group (default: fail)",
    )
    parser.add_argument(
        "--max-age",
        type=parse_duration,
        default=parse_duration(DEFAULT_MAX_AGE),
        help="refuse translations gold has not observed for longer than this (15m, 2h, 1d; `none` = "
        "no limit), from latest_offsets.last_observed_at (else source_timestamp) to now, or to "
        f"--as-of (default: {DEFAULT_MAX_AGE}: a failover should not run on a pipeline that stopped "
        "long ago without the operator saying so)",
    )
    parser.add_argument(
        "--target-bootstrap-servers",
        help="target cluster (default: kafka.bootstrap.servers from the secret scope, "
        "else the local target from clusters.json)",
    )
    parser.add_argument("--catalog", help="Unity Catalog catalog of the gold tables (Databricks)")
    parser.add_argument("--schema", help="schema of the gold and audit tables (default: offsetlake)")
    parser.add_argument(
        "--secret-scope",
        help="Databricks secret scope whose kafka.* secrets become Kafka client options (SASL/SSL)",
    )
    parser.add_argument(
        "--concurrency",
        type=_positive_int,
        default=DEFAULT_CONCURRENCY,
        help=f"groups altered at once (default: {DEFAULT_CONCURRENCY})",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        help=f"seconds per Kafka request (default: {DEFAULT_TIMEOUT_S:g})",
    )


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _secret_options(args: argparse.Namespace, secrets: SecretsProvider | None) -> dict[str, str]:
    if not args.secret_scope:
        return {}
    return kafka_options_from_scope(secrets or DatabricksSecrets(), args.secret_scope)


def _target_config(args: argparse.Namespace, secret_options: dict[str, str]) -> dict[str, str]:
    bootstrap = args.target_bootstrap_servers
    if not bootstrap and "kafka.bootstrap.servers" not in secret_options:
        bootstrap = load_clusters().target.bootstrap_servers
    return target_client_config(bootstrap, secret_options)


def _spark() -> SparkSession:
    """The Databricks runtime's session on a job cluster, the shared local one elsewhere."""
    if os.environ.get("DATABRICKS_RUNTIME_VERSION"):
        from pyspark.sql import SparkSession

        return SparkSession.builder.getOrCreate()
    return get_local_spark()


def _run(
    args: argparse.Namespace,
    *,
    dry_run: bool,
    config: dict[str, str],
    scrubber: SecretScrubber,
    out: TextIO,
    err: TextIO,
) -> int:
    started_at = datetime.now(UTC)
    run_info = audit.RunInfo(
        run_id=f"{started_at:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}",
        mode=audit.Mode.DRY_RUN if dry_run else audit.Mode.APPLY,
        started_at=started_at,
        as_of=args.as_of,
    )
    schema = args.schema or LOCAL_SCHEMA
    spark = _spark()
    audit_table = audit.audit_table_name(schema, args.catalog)

    offsets = (
        gold.read_offsets_as_of(spark, args.as_of, schema, args.catalog, precedence=args.method_precedence)
        if args.as_of
        else gold.read_latest_offsets(spark, schema, args.catalog)
    )
    selection = Selection(args.groups, args.exclude_groups, args.topics, args.exclude_topics)
    offsets = select_offsets(offsets, selection)
    if not offsets:
        print(f"run {run_info.run_id}: no gold offsets match the selection; nothing to do", file=out)
        return EXIT_OK

    bootstrap = config["bootstrap.servers"]
    admin = AdminClient(config)
    try:
        target = read_target_state(
            admin, {offset.key for offset in offsets}, timeout_s=args.timeout, concurrency=args.concurrency
        )
    except TargetClusterError as error:
        raise TargetClusterError(f"target cluster {bootstrap}: {error}") from error
    guards = Guards(
        reference_time=args.as_of or started_at,
        max_age=args.max_age,
        allow_rewind=args.allow_rewind,
        active_group_policy=args.active_group_policy,
        last_applied=_last_applied(spark, audit_table, target),
    )
    plan = build_plan(offsets, target, guards)
    audit.append_audit(spark, audit_table, _scrubbed(audit.plan_records(plan, run_info), scrubber))

    refusing = refused_by_active_policy(plan, guards)
    if dry_run:
        print(format_plan_table(plan), file=out)
        print(_plan_totals(plan, run_info.run_id), file=out)
        if refusing:
            print(f"note: `apply` would refuse: active groups on the target: {', '.join(refusing)}", file=out)
        return EXIT_OK
    if refusing:
        print(
            f"run {run_info.run_id}: refused, nothing altered: groups active on the target: "
            f"{', '.join(refusing)} (stop their consumers, or pass --active-group-policy skip)",
            file=err,
        )
        return EXIT_REFUSED

    results = execute_plan(
        admin, plan, run_id=run_info.run_id, timeout_s=args.timeout, concurrency=args.concurrency
    )
    for line in _group_summaries(plan, results):
        print(scrubber.scrub(line), file=out)
    print(_apply_totals(plan, results, run_info.run_id, audit_table), file=out)
    try:
        audit.append_audit(spark, audit_table, _scrubbed(audit.result_records(results, run_info), scrubber))
    except Exception as error:
        print(
            f"run {run_info.run_id}: offsets were altered but the results could not be written to "
            f"{audit_table}: {scrubber.scrub(str(error))}; rerun the same command to converge",
            file=err,
        )
        return EXIT_FAILED

    failed = [result for result in results if result.outcome in (Outcome.FAILED, Outcome.VERIFY_FAILED)]
    late_active = [result for result in results if result.outcome is Outcome.SKIPPED_ACTIVE_GROUP]
    if failed:
        print(f"run {run_info.run_id}: {len(failed)} partitions failed on {bootstrap}", file=err)
        return EXIT_FAILED
    if late_active and args.active_group_policy is ActiveGroupPolicy.FAIL:
        print(f"run {run_info.run_id}: groups became active during the run and were not altered", file=err)
        return EXIT_REFUSED
    return EXIT_OK


def _last_applied(
    spark: SparkSession, audit_table: str, target: TargetState
) -> dict[GroupPartition, datetime]:
    """Source time of the newest translation applied per group-partition: from the audit table, and
    from our commit-metadata markers on the target (which outlive a lost or different audit table)."""
    last_applied = audit.read_last_applied(spark, audit_table)
    for key, committed in target.committed.items():
        marker_millis = marker_source_millis(committed.metadata)
        if marker_millis is not None:
            marked = gold.from_micros(marker_millis * 1000)
            last_applied[key] = max(marked, last_applied.get(key, marked))
    return last_applied


def _final_status(row: PlanRow, results: dict[tuple[str, str, int], PartitionResult]) -> str:
    result = results.get(row.key)
    return result.outcome.value if result is not None else row.action.value


def _group_summaries(plan: Sequence[PlanRow], results: Sequence[PartitionResult]) -> list[str]:
    """One line per group: how its partitions ended up, records re-read/skipped, the first error."""
    by_key = {result.row.key: result for result in results}
    rows_by_group: dict[str, list[PlanRow]] = defaultdict(list)
    for row in plan:
        rows_by_group[row.consumer_group].append(row)
    lines = []
    for group, rows in sorted(rows_by_group.items()):
        statuses = Counter(_final_status(row, by_key) for row in rows)
        applied = [row for row in rows if row.key in by_key and by_key[row.key].verified]
        moved = [row for row in applied if row.current_offset is not None]
        errors = [by_key[row.key].error for row in rows if row.key in by_key and by_key[row.key].error]
        refusals = [row.reason for row in rows if not row.action.alters and row.action is not Action.NOOP]
        line = f"{group}: " + ", ".join(f"{status} {count}" for status, count in sorted(statuses.items()))
        if moved:
            reread = sum(row.records_reread or 0 for row in moved)
            skipped = sum(row.records_skipped or 0 for row in moved)
            line += f" (re-read {reread}, skipped {skipped} records)"
        if len(moved) < len(applied):
            line += f" ({len(applied) - len(moved)} partitions had no committed offset before)"
        if errors:
            line += f"; error: {errors[0]}"
        elif refusals:
            line += f"; {refusals[0]}"
        lines.append(line)
    return lines


def _plan_totals(plan: Sequence[PlanRow], run_id: str) -> str:
    actions = Counter(row.action.value for row in plan)
    groups = len({row.consumer_group for row in plan})
    return f"run {run_id} (dry run): {groups} groups, {len(plan)} partitions: " + ", ".join(
        f"{action} {count}" for action, count in sorted(actions.items())
    )


def _apply_totals(
    plan: Sequence[PlanRow], results: Sequence[PartitionResult], run_id: str, audit_table: str
) -> str:
    by_key = {result.row.key: result for result in results}
    statuses = Counter(_final_status(row, by_key) for row in plan)
    groups = len({row.consumer_group for row in plan})
    return (
        f"run {run_id}: {groups} groups, {len(plan)} partitions: "
        + ", ".join(f"{status} {count}" for status, count in sorted(statuses.items()))
        + f"; audit: {audit_table}"
    )


def _scrubbed(records: list[tuple[Any, ...]], scrubber: SecretScrubber) -> list[tuple[Any, ...]]:
    return [
        tuple(scrubber.scrub(value) if isinstance(value, str) else value for value in record)
        for record in records
    ]


def _text(value: int | None) -> str:
    return "-" if value is None else str(value)
