"""``offsetlake plan`` and ``offsetlake apply``: flags -> ApplyRequest -> run_apply -> render."""

from __future__ import annotations

import argparse
import contextlib

from offsetlake.apply.planner import (
    K2K_GUARD_PREFIX,
    ActiveGroupPolicy,
    MultipleTargetsPolicy,
    Selection,
    Untranslated,
)
from offsetlake.apply.reasons import Flag
from offsetlake.apply.run import (
    DEFAULT_CONCURRENCY,
    DEFAULT_DEADLINE_S,
    DEFAULT_KEEP_ALIVE_FRACTION,
    DEFAULT_MAX_AGE,
    DEFAULT_TIMEOUT_S,
    ApplyRequest,
    ApplyStatus,
    run_apply,
)
from offsetlake.cli import render, stores
from offsetlake.cli.clusters import ResolvedClusters, resolve_clusters
from offsetlake.cli.context import Context
from offsetlake.cli.options import (
    add_cluster_options,
    parse_bool,
    parse_duration,
    parse_fraction,
    parse_method_precedence,
    parse_optional_timestamp,
    parse_positive_seconds,
    parse_regex,
    positive_int,
)
from offsetlake.cli.settings import add_set_option, k2k_tracing, pipeline_settings, topic_routing
from offsetlake.contract.settings import PipelineSettings
from offsetlake.durations import format_duration
from offsetlake.local.home import LocalHome
from offsetlake.mirror.precedence import METHODS


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    plan = subparsers.add_parser(
        "plan",
        help="dry run: show what `apply` would do to the target's consumer groups",
        description="Build the apply plan from gold and the target's state, print it, and record it "
        "in the apply_audit table with action dry_run. Nothing on the target changes.",
    )
    add_apply_options(plan, sources=False)
    add_set_option(plan)
    plan.set_defaults(handler=handle_plan)

    apply = subparsers.add_parser(
        "apply",
        help="write gold offsets to the target's consumer groups, then verify them",
        description="Apply translated offsets to the target cluster's consumer groups. Safe by "
        "default: active groups, rewinds, stale translations, missing topics, groups K2K's offset "
        "mapper manages and source records K2K routed to two target topics are refused. "
        f"Exit status {ApplyStatus.FAILED} when anything failed, {ApplyStatus.REFUSED} when the fail "
        f"active-group policy refused the run, {ApplyStatus.INCOMPLETE} when a partition a source group "
        "committed is not placed (refused, or not verified).",
    )
    add_apply_options(apply, sources=False)
    add_set_option(apply)
    apply.set_defaults(handler=handle_apply)


def handle_plan(args: argparse.Namespace, context: Context) -> int:
    home = stores.command_home(context)
    clusters = resolve_clusters(args, sources=False, secrets=context.secrets, home=home)
    request = request_from_args(args, clusters, dry_run=True, home=home)
    return _handle(request, context, home, details=args.details)


def handle_apply(args: argparse.Namespace, context: Context) -> int:
    home = stores.command_home(context)
    clusters = resolve_clusters(args, sources=False, secrets=context.secrets, home=home)
    request = request_from_args(args, clusters, dry_run=False, home=home)
    return _handle(request, context, home, details=args.details)


def request_from_args(
    args: argparse.Namespace,
    clusters: ResolvedClusters,
    *,
    dry_run: bool,
    home: LocalHome | None,
    settings: PipelineSettings | None = None,
) -> ApplyRequest:
    """The run the flags ask for; ``settings``: the pipeline settings the command already holds (a
    refreshing failover's), else those of the pipeline that made gold (locally, ``home``'s: None on
    Databricks). A restore reads neither."""
    if args.as_of:
        settings = None
    elif settings is None:
        settings = pipeline_settings(args, home)
    return ApplyRequest(
        dry_run=dry_run,
        selection=Selection(
            groups=args.groups,
            exclude_groups=args.exclude_groups,
            topics=args.topics,
            exclude_topics=args.exclude_topics,
        ),
        as_of=args.as_of,
        method_precedence=args.method_precedence,
        allow_rewind=args.allow_rewind,
        active_group_policy=args.active_group_policy,
        max_age=args.max_age,
        target_bootstrap_servers=clusters.target,
        catalog=args.catalog,
        schema=args.schema,
        secret_scope=args.secret_scope,
        concurrency=args.concurrency,
        timeout_s=args.timeout,
        deadline_s=args.deadline,
        keep_alive_fraction=args.keep_alive_fraction,
        kafka_properties=clusters.kafka_properties,
        checkpoint_tail=settings.policy if settings and args.checkpoint_tail else None,
        k2k_tracing=k2k_tracing(settings) if settings and args.checkpoint_tail else None,
        k2k_guard_prefix=args.k2k_guard_prefix,
        ignore_k2k_guard=args.ignore_k2k_guard,
        on_multiple_targets=args.on_multiple_targets,
        tail_only=args.tail_only,
        routing=topic_routing(settings) if settings else None,
        untranslated=args.untranslated,
        accept_gold_without_tail=args.accept_gold_without_tail,
        as_failover=args.as_failover,
        resume_sync=args.resume_sync,
    )


def _handle(request: ApplyRequest, context: Context, home: LocalHome | None, *, details: bool) -> int:
    with contextlib.closing(stores.gold_store_for(request, home)) as store:
        result = run_apply(request, store=store, secrets=context.secrets)
    out, err = render.apply_report(result, details=details)
    for line in out:
        print(line, file=context.out)
    for line in err:
        print(line, file=context.err)
    return int(result.status)


def add_apply_options(parser: argparse.ArgumentParser, *, sources: bool) -> None:
    """Every guard and selection flag of an apply run (plan, apply, failover share them)."""
    _add_selection_options(parser)
    _add_guard_options(parser)
    _add_gap_and_hold_options(parser)
    _add_cluster_and_pace_options(parser, sources=sources)


def _add_selection_options(parser: argparse.ArgumentParser) -> None:
    """What the run reads and reports: the report's details, gold as of a time, the groups and topics."""
    parser.add_argument(
        "--details",
        action="store_true",
        help=f"print every group (plan: every partition) even past {render.DETAIL_GROUPS} groups; "
        "the summary by outcome and method is always printed, every row is in the audit",
    )
    parser.add_argument(
        "--as-of",
        type=parse_optional_timestamp,
        help="restore the offsets gold had at this time (ISO 8601, UTC if no zone), from offset_history; "
        "empty or `none`: the latest offsets",
    )
    parser.add_argument(
        "--method-precedence",
        type=parse_method_precedence,
        default=METHODS,
        help="with --as-of: which translation method wins among those current at that time, as the "
        f"pipeline's offsetlake.method.precedence (default: {','.join(METHODS)})",
    )
    parser.add_argument(
        "--groups", type=parse_regex, default=".*", help="regex of consumer groups to include (default: all)"
    )
    parser.add_argument("--exclude-groups", type=parse_regex, help="regex of consumer groups to leave alone")
    parser.add_argument(
        "--topics", type=parse_regex, default=".*", help="regex of target topics to include (default: all)"
    )
    parser.add_argument("--exclude-topics", type=parse_regex, help="regex of target topics to leave alone")


def _add_guard_options(parser: argparse.ArgumentParser) -> None:
    """The guards an operator may loosen: rewinds, the checkpoint tail, active groups, K2K."""
    parser.add_argument(
        "--allow-rewind",
        nargs="?",
        type=parse_bool,
        const=True,
        default=False,
        metavar="true|false",
        help="move groups backwards (re-reading data), including translations older than "
        "the ones already applied (`--allow-rewind` alone is true)",
    )
    parser.add_argument(
        "--checkpoint-tail",
        nargs="?",
        type=parse_bool,
        const=True,
        default=False,
        metavar="true|false",
        help="also read every MM2 checkpoint record on the target, each checkpoints topic from its "
        "log start (named by the pipeline's replication policy, `<alias>.checkpoints.internal` by "
        "default), and, with offsetlake.k2k.tracing.topics set, search each selected group's newest "
        "snapshot on K2K's tracing headers there; plan from gold plus them; not with --as-of "
        "(`failover` always does)",
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
        "--k2k-guard-prefix",
        default=K2K_GUARD_PREFIX,
        metavar="PREFIX",
        help="a target group whose commit metadata on any planned partition starts with this is "
        "managed by Lenses K2K's offset mapper (its groups.offsetGuardPrefix) and is skipped: both tools "
        f"writing one group overwrite each other; empty: no check (default: {K2K_GUARD_PREFIX})",
    )
    parser.add_argument(
        "--ignore-k2k-guard",
        nargs="?",
        type=parse_bool,
        const=True,
        default=False,
        metavar="true|false",
        help="apply to groups K2K's offset mapper manages too, overwriting its guard (see "
        "--k2k-guard-prefix; `--ignore-k2k-guard` alone is true)",
    )
    parser.add_argument(
        "--on-multiple-targets",
        type=MultipleTargetsPolicy,
        default=MultipleTargetsPolicy.FAIL,
        choices=list(MultipleTargetsPolicy),
        help="a translation resting on a source record K2K mapped to several target topics "
        "(k2k_mapping_conflicts): `fail` skips the group-partition, `ignore` applies each routing, as "
        "K2K's errorHandling.onMultipleTargetCommittedOffsets (default: fail)",
    )


def _add_gap_and_hold_options(parser: argparse.ArgumentParser) -> None:
    """What gold cannot say (an empty gold, untranslated partitions, an unread tail), a failover's
    hold on its groups, and how old a translation may be."""
    parser.add_argument(
        "--tail-only",
        action="store_true",
        help="plan from the target's MM2 checkpoint records (with --checkpoint-tail; `failover` reads "
        "them) when an interrupted pipeline update left gold empty while bronze_checkpoints holds "
        "checkpoint records, which is otherwise refused; rows gold holds still compete, the fresher wins",
    )
    parser.add_argument(
        Flag.UNTRANSLATED.value,
        type=Untranslated,
        default=Untranslated.EARLIEST,
        choices=list(Untranslated),
        help="a partition gold's newest snapshot says a source group committed that no method translates "
        "(offset 0 before filtered records, before the first offset sync or traced record, never "
        "checkpointed): `earliest` places it at the target partition's log start, which cannot skip "
        "(it re-reads at most the partition), `refuse` leaves it (the run is then INCOMPLETE, exit "
        f"{ApplyStatus.INCOMPLETE}); without either the consumer's auto.offset.reset decides, and Java's "
        "default `latest` skips (default: earliest)",
    )
    parser.add_argument(
        Flag.ACCEPT_GOLD_WITHOUT_TAIL.value,
        action="store_true",
        help="plan a source's partitions from gold even when its newest checkpoints on the target could "
        "not be read (a checkpoints partition unreadable, a record that does not decode, no "
        "checkpoints topic while gold holds checkpoint rows); refused by default: gold may be behind a "
        "source group's reset",
    )
    parser.add_argument(
        Flag.AS_FAILOVER.value,
        action="store_true",
        help="record this run as a failover's (the failover job's apply task; `failover` always is): "
        "every group it places is then left alone by every later plain apply, the scheduled sync's "
        f"included, whatever its schedule, until an operator passes {Flag.RESUME_SYNC} for it",
    )
    parser.add_argument(
        Flag.RESUME_SYNC.value,
        action="store_true",
        help="the end of a failover: hand the selected groups (--groups) a failover placed back to the "
        "sync, applying their translations now; recorded in apply_audit (mode resume)",
    )
    default_max_age = format_duration(DEFAULT_MAX_AGE)
    parser.add_argument(
        "--max-age",
        type=parse_duration,
        default=DEFAULT_MAX_AGE,
        help="refuse translations gold has not observed for longer than this (15m, 2h, 1d; `none` = "
        "no limit), from latest_offsets.last_observed_at (else source_timestamp) to now, or to "
        f"--as-of (default: {default_max_age}: a failover should not run on a pipeline that stopped "
        "long ago without the operator saying so)",
    )


def _add_cluster_and_pace_options(parser: argparse.ArgumentParser, *, sources: bool) -> None:
    """Where the run reads and writes (clusters, catalog, schema, secrets) and its pace (concurrency,
    timeouts, deadline, keep-alive)."""
    add_cluster_options(parser, sources=sources)
    parser.add_argument("--catalog", help="Unity Catalog catalog of the gold tables (Databricks)")
    parser.add_argument("--schema", help="schema of the gold and audit tables (default: offsetlake)")
    parser.add_argument(
        "--secret-scope",
        help="Databricks secret scope whose kafka.* secrets become Kafka client options (SASL/SSL)",
    )
    parser.add_argument(
        "--concurrency",
        type=positive_int,
        default=DEFAULT_CONCURRENCY,
        help=f"groups altered at once (default: {DEFAULT_CONCURRENCY})",
    )
    parser.add_argument(
        "--timeout",
        type=parse_positive_seconds,
        default=DEFAULT_TIMEOUT_S,
        help=f"seconds per Kafka request (default: {DEFAULT_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--deadline",
        type=parse_positive_seconds,
        default=DEFAULT_DEADLINE_S,
        help="seconds after which no further group is altered; groups in flight get two --timeout "
        f"periods to finish, the rest are recorded as not_attempted (default: {DEFAULT_DEADLINE_S:g})",
    )
    parser.add_argument(
        "--keep-alive-fraction",
        type=parse_fraction,
        default=DEFAULT_KEEP_ALIVE_FRACTION,
        help="commit an unchanged offset again (same offset and metadata, groups without members only) "
        "once offsetlake's last commit of it is older than this fraction of the target's "
        "offsets.retention.minutes, so a standby group's offsets never expire; `none` = never "
        f"(default: {DEFAULT_KEEP_ALIVE_FRACTION:g})",
    )
