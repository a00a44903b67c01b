"""``offsetlake failover``: flags -> FailoverRequest -> run_failover -> one report."""

from __future__ import annotations

import argparse

from offsetlake.cli import render
from offsetlake.cli.apply import add_apply_options, request_from_args
from offsetlake.cli.clusters import resolve_clusters
from offsetlake.cli.context import Context
from offsetlake.cli.options import parse_positive_seconds
from offsetlake.cli.pipeline import add_set_option, settings_from_args
from offsetlake.jobs.failover import DEFAULT_REFRESH_TIMEOUT_S, FailoverRequest, run_failover
from offsetlake.local.home import local_home


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    failover = subparsers.add_parser(
        "failover",
        help="during an outage: a bounded refresh, then apply and verify, and one report",
        description="Refresh the pipeline (bounded: an unreachable cluster costs at most its timeout, "
        "and a failed refresh keeps gold as it was), then apply the translated offsets to the target's "
        "groups with every guard of `apply`, read them back, and print one report: each cluster's "
        "reachability, per group what was applied or refused, the method and age of each translation, "
        "and the records to be re-read. No questions asked. Exit status as `apply`: 0 all selected "
        "partitions in place, 1 something failed or nothing could be applied, 3 active groups refused.",
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
        "--no-refresh", action="store_true", help="skip the refresh: fail over from gold as it is now"
    )
    add_set_option(failover)
    failover.set_defaults(handler=handle_failover)


def handle_failover(args: argparse.Namespace, context: Context) -> int:
    clusters = resolve_clusters(args, sources=not args.no_refresh, secrets=context.secrets)
    request = FailoverRequest(
        apply=request_from_args(args, clusters, dry_run=False),
        settings=None if args.no_refresh else settings_from_args(args, clusters),
        home=local_home(),
        refresh_timeout_s=args.refresh_timeout,
        kafka_properties=clusters.kafka_properties,
    )

    def echo(line: str) -> None:
        # Only run-level events and failures: the report that follows says the rest.
        if any(word in line for word in ("Run is", "Run has", "FAILED", "SKIPPED")):
            print(line, file=context.out)

    result = run_failover(request, echo=echo, secrets=context.secrets)
    out, err = render.failover_report(result)
    for line in out:
        print(line, file=context.out)
    for line in err:
        print(line, file=context.err)
    return result.exit_code
