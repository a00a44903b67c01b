"""``offsetlake failover``: flags -> FailoverRequest -> run_failover -> one report."""

from __future__ import annotations

import argparse
from dataclasses import replace

from offsetlake.cli import render, stores
from offsetlake.cli.apply import add_apply_options, request_from_args
from offsetlake.cli.clusters import ResolvedClusters, resolve_clusters
from offsetlake.cli.context import Context
from offsetlake.cli.options import parse_positive_seconds
from offsetlake.cli.settings import add_set_option, k2k_tracing, pipeline_settings, run_settings
from offsetlake.failover.run import (
    DEFAULT_PROBE_TIMEOUT_S,
    DEFAULT_REFRESH_TIMEOUT_S,
    ClusterToProbe,
    FailoverRequest,
    RefreshMode,
    run_failover,
)
from offsetlake.kafka.secrets import target_client_config
from offsetlake.local.update_progress import is_progress


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    failover = subparsers.add_parser(
        "failover",
        help="during an outage: probe, apply gold plus what the clusters that answer hold now, verify, "
        "one report",
        description="Ask every cluster for its metadata (bounded by --probe-timeout). Then apply gold's "
        "translations, with every checkpoint the target holds read directly from it, each checkpoints "
        "topic from its log start under the pipeline's replication policy, and, when every cluster "
        "answers, each selected source group's commits and MM2's offset syncs beyond the pipeline's "
        "read directly from the sources and translated as the pipeline would (no pipeline update: "
        "--refresh always runs one first), with every guard of `apply`, read them back, and print one "
        "report: each cluster's reachability, per group what was applied or refused, the method and "
        "age of each translation, and the records to be re-read. No questions asked. Exit status as "
        "`apply`: 0 every partition a selected source group committed is in place, 1 something failed "
        "or nothing could be applied, 3 active groups refused, 4 some partition not placed (refused, "
        "listed).",
    )
    add_apply_options(failover, sources=True)
    failover.add_argument(
        "--refresh-timeout",
        type=parse_positive_seconds,
        default=DEFAULT_REFRESH_TIMEOUT_S,
        metavar="SECONDS",
        help=f"stop the refresh after this long and fail over from gold as it is "
        f"(default: {DEFAULT_REFRESH_TIMEOUT_S:g})",
    )
    failover.add_argument(
        "--probe-timeout",
        type=parse_positive_seconds,
        default=DEFAULT_PROBE_TIMEOUT_S,
        metavar="SECONDS",
        help="how long each cluster has to answer the first metadata request; a source that does not "
        f"answer is not read (default: {DEFAULT_PROBE_TIMEOUT_S:g})",
    )
    failover.add_argument(
        "--refresh",
        type=RefreshMode,
        choices=list(RefreshMode),
        default=RefreshMode.AUTO,
        help="auto: no pipeline update; with every cluster answering the sources' group commits and "
        "offset syncs are read directly, with a source down the target's newest checkpoints; always: a "
        "pipeline update of what latest_offsets is computed from first (bounded by --refresh-timeout; a "
        "failed one keeps gold as it was); never: gold and the checkpoint tail alone (default: auto)",
    )
    add_set_option(failover)
    failover.set_defaults(handler=handle_failover)


def endpoints(clusters: ResolvedClusters) -> tuple[ClusterToProbe, ...]:
    """The clusters to probe, with the resolved client settings. A target named only by a secret
    scope is read by the apply itself, which reports it."""
    found = [
        ClusterToProbe(
            source.alias, "source", target_client_config(source.bootstrap_servers, clusters.kafka_options)
        )
        for source in clusters.sources
    ]
    if clusters.target is not None:
        config = target_client_config(clusters.target, clusters.kafka_options)
        found.insert(0, ClusterToProbe(clusters.target_alias, "target", config))
    return tuple(found)


def handle_failover(args: argparse.Namespace, context: Context) -> int:
    refresh = RefreshMode(args.refresh)
    home = context.home  # the failover's one home (its store's too, unless on Databricks)
    store_home = stores.command_home(context)
    sources = refresh is not RefreshMode.NEVER
    clusters = resolve_clusters(args, sources=sources, secrets=context.secrets, home=store_home)
    settings = None if refresh is RefreshMode.NEVER else run_settings(args, clusters)
    apply = request_from_args(args, clusters, dry_run=False, home=store_home, settings=settings)
    if args.as_of is None:  # a restore reads history only; otherwise gold plus the newest checkpoints
        named = settings or pipeline_settings(args, store_home)  # the refresh's own, else the pipeline's
        apply = replace(apply, checkpoint_tail=named.policy, k2k_tracing=k2k_tracing(named))
    apply = replace(apply, as_failover=True)
    request = FailoverRequest(
        apply=apply,
        settings=settings,
        refresh=refresh,
        home=home,
        clusters=endpoints(clusters),
        refresh_timeout_s=args.refresh_timeout,
        probe_timeout_s=args.probe_timeout,
        kafka_properties=clusters.kafka_properties,
    )

    def echo(line: str) -> None:
        if shown_during_refresh(line):
            print(line, file=context.out)

    result = run_failover(
        request,
        gold_store=lambda: stores.gold_store_for(apply, store_home),
        echo=echo,
        secrets=context.secrets,
    )
    if result.loop_stood_aside is not None:
        print(result.loop_stood_aside, file=context.out)
    out, err = render.failover_report(result, details=args.details)
    for line in out:
        print(line, file=context.out)
    for line in err:
        print(line, file=context.err)
    return result.exit_code


def shown_during_refresh(line: str) -> bool:
    """Only run-level events, failures and progress lines: the report that follows says the rest."""
    return is_progress(line) or any(word in line for word in ("Run is", "Run has", "FAILED", "SKIPPED"))
