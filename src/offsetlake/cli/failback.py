"""``offsetlake failback``: flags -> FailbackRequest -> run_failback -> one report.

The pair is named as for ``failover``: ``--target``/``--target-alias`` is the cluster the consumers
ran on during the outage (the forward flow's target, ``dr``), ``--source ALIAS=BOOTSTRAP`` the one
they go back to (``primary``); without them, the local pair of ``make up``.
"""

from __future__ import annotations

import argparse
import contextlib
from collections import Counter
from dataclasses import replace

from offsetlake.cli import render, stores
from offsetlake.cli.apply import add_apply_options, request_from_args
from offsetlake.cli.clusters import resolve_clusters
from offsetlake.cli.context import Context
from offsetlake.cli.settings import add_set_option, k2k_tracing, pipeline_settings
from offsetlake.errors import UsageError
from offsetlake.failback.run import (
    FailbackRequest,
    FailbackResult,
    PartitionPath,
    Route,
    run_failback,
)
from offsetlake.kafka.secrets import DatabricksSecrets, kafka_options_from_scope, target_client_config


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    failback = subparsers.add_parser(
        "failback",
        help="after an outage: move every group that ran on the target back to the source, verified",
        description="Read the groups' committed positions on the cluster they ran on during the outage "
        "(--target, the forward flow's target) and move them back to --source. A position on a "
        "replicated topic (<source alias>.<topic>) is translated back through the forward flow's "
        "history: the offset syncs in silver (exact at a sync, else one past the newest sync below it, "
        "never skipping) and, for a K2K-routed source, the tracing headers of the record at that "
        "position (exact). A position on the target's own topic goes through the reverse flow's "
        "checkpoints on the source (<target alias>.<topic>). Then plan, apply and verify on the "
        "source with every guard of `apply`, audited with direction failback, one report. Exit "
        "status as `apply`; 3 also when a group is refused for an untranslated partition "
        "(--untranslated refuse; by default such a partition is placed at the source's log start).",
    )
    add_apply_options(failback, sources=True)
    add_set_option(failback)
    failback.add_argument(
        "--plan",
        action="store_true",
        help="dry run: translate and plan, record the plan in apply_audit, change nothing",
    )
    failback.set_defaults(handler=handle_failback)


def handle_failback(args: argparse.Namespace, context: Context) -> int:
    home = stores.command_home(context)
    clusters = resolve_clusters(args, sources=True, secrets=context.secrets, home=home)
    if clusters.target is None or len(clusters.sources) != 1:
        raise UsageError("failback goes back to one cluster: give one --source ALIAS=BOOTSTRAP")
    if not clusters.target_alias:
        raise UsageError(
            "failback needs --target-alias: the alias the reverse flow gives the cluster the consumers "
            "ran on (its topics are <alias>.<topic> on the source)"
        )
    if args.as_of is not None:
        raise UsageError("failback translates the groups' positions now; --as-of restores apply's history")
    (source,) = clusters.sources
    settings = pipeline_settings(args, home)  # the forward pipeline's naming: its policy and K2K routes
    options = dict(clusters.kafka_options)
    if args.secret_scope:  # the groups' read and the reverse flow's too, not only the apply's alters
        options.update(kafka_options_from_scope(context.secrets or DatabricksSecrets(), args.secret_scope))
    apply = replace(
        request_from_args(args, clusters, dry_run=args.plan, home=home, settings=settings),
        target_bootstrap_servers=source.bootstrap_servers,
    )
    request = FailbackRequest(
        apply=apply,
        source_alias=source.alias,
        source_config=target_client_config(source.bootstrap_servers, options),
        target_alias=clusters.target_alias,
        target_config=target_client_config(clusters.target, options),
        policy=settings.policy,
        tracing=k2k_tracing(settings),
        untranslated=args.untranslated,
    )
    with contextlib.closing(stores.gold_store_for(apply, home)) as store:
        result = run_failback(request, store=store, secrets=context.secrets)  # type: ignore[arg-type]
    out, err = render.apply_report(result.apply, details=args.details) if result.apply.gold_rows else ([], [])
    for line in (*report_lines(result), *out):
        print(line, file=context.out)
    if not result.apply.gold_rows:
        what = (
            "every selected group was refused"
            if result.refused_groups
            else "no selected group has a position"
        )
        print(f"run {result.apply.run_id}: nothing to move back: {what} on the target", file=context.err)
    for line in err:
        print(line, file=context.err)
    return result.exit_code


def report_lines(result: FailbackResult) -> list[str]:
    """The way back of every committed position: which path it took, exact or how much is re-read."""
    paths = result.paths
    exact = sum(1 for path in paths if path.exact)
    routes = Counter(path.route.value for path in paths)
    forward = [path for path in paths if path.route is Route.FORWARD_HISTORY and path.resume_at is not None]
    bounded = [path.reread_bound for path in forward if path.reread_bound is not None]
    lines = [
        f"failback: {len(paths)} committed position(s) read on the target, translated in "
        f"{result.translate_seconds:.1f}s; exact {exact} of {len(paths)}; forward flow's history: "
        f"re-reads at most {sum(bounded)} record(s) over {len(bounded)} partition(s)"
        + (f", {len(forward) - len(bounded)} not bounded" if len(forward) > len(bounded) else ""),
        "paths: " + ", ".join(f"{route} {count}" for route, count in sorted(routes.items())),
    ]
    lines += [_path_line(path) for path in paths]
    if result.refused_groups:
        lines.append(
            f"refused (a partition without translation): {', '.join(result.refused_groups)}; "
            "their other partitions were left alone too"
        )
    if paths:
        lines.append(
            "below, records `skipped` are those a group read on the target since its position on the "
            "source before the outage; `re-read` counts from that position"
        )
    return lines


def _path_line(path: PartitionPath) -> str:
    where = f"  {path.consumer_group} {path.topic}[{path.partition}]@{path.committed} -> {path.source_topic}"
    if path.resume_at is None:
        return f"{where}: not translated ({path.route}): {path.reason}"
    if path.route is Route.REVERSE_FLOW:
        how = "MM2's checkpoint"
    elif path.exact:
        how = "exact"
    else:
        how = "re-reads not bounded" if path.reread_bound is None else f"re-reads <= {path.reread_bound}"
    note = f"; {path.reason}" if path.reason else ""
    return f"{where}[{path.partition}]@{path.resume_at} by {path.method} ({path.route}; {how}){note}"
