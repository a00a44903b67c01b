"""``python -m offsetlake_dev``: the development harness's commands (never in the product wheel).

- ``local up|down|status``: the two local brokers a developer runs the demo and pipeline against;
- ``demo``: the end-to-end failover scenario on fresh local clusters (``make demo``).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from offsetlake.cli import render
from offsetlake.cli.main import FORCED_EXIT_AFTER_S
from offsetlake.errors import StopSignalError
from offsetlake.local.home import LocalHome
from offsetlake.local.processes import call_interruptibly, forced_exit_after, terminate_descendants
from offsetlake_dev.demo import handle_demo
from offsetlake_dev.local_cluster import (
    ClusterState,
    LocalBrokerError,
    cluster_status,
    start_clusters,
    stop_clusters,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m offsetlake_dev", description="offsetlake's development harness."
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = subparsers.add_parser(
        "demo",
        help="end-to-end failover on two local clusters, verified by real consumers",
        description="Start fresh local source and target clusters, replicate with the MM2 simulator, "
        "run the pipeline, plan and apply the failover, and verify that consumers resume on the target "
        "without skipping a record. Exit status 1 if any verification fails.",
    )
    demo.add_argument(
        "--home",
        type=Path,
        help="demo state directory, emptied first (default: $OFFSETLAKE_HOME/demo)",
    )
    demo.set_defaults(handler=lambda args: handle_demo(args.home))

    local = subparsers.add_parser("local", help="two local Kafka brokers, source and target (Tansu)")
    actions = local.add_subparsers(dest="local_action", required=True, metavar="ACTION")

    up = actions.add_parser("up", help="start both brokers (no-op if already running)")
    up.add_argument(
        "--timeout", type=float, default=10.0, help="seconds to wait for each broker (default 10)"
    )
    up.set_defaults(handler=_up)

    down = actions.add_parser("down", help="stop both brokers")
    down.add_argument(
        "--timeout", type=float, default=10.0, help="seconds before SIGTERM becomes SIGKILL (default 10)"
    )
    down.set_defaults(handler=_down)

    status = actions.add_parser("status", help="show both brokers; exit 1 unless both are running")
    status.set_defaults(handler=_status)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """SIGINT/SIGTERM unwind the command (the demo stops its clusters and pipeline), then every
    process it started is ended; the exit status is 130/143."""
    args = build_parser().parse_args(argv)
    with forced_exit_after(FORCED_EXIT_AFTER_S, f"offsetlake_dev {args.command}"):
        try:
            return int(call_interruptibly(lambda: args.handler(args)))
        except StopSignalError as error:
            print(f"offsetlake_dev {args.command}: {error}", file=sys.stderr)
            terminate_descendants()
            return error.exit_code


def _up(args: argparse.Namespace) -> int:
    started = time.monotonic()
    try:
        pair = start_clusters(timeout_s=args.timeout)
    except LocalBrokerError as error:
        print(f"offsetlake_dev local up: {error}", file=sys.stderr)
        return 1
    elapsed = time.monotonic() - started
    for cluster in pair:
        print(f"{cluster.name}: {cluster.bootstrap_servers} (pid {cluster.pid}, log {cluster.log_path})")
    print(f"local clusters up in {elapsed:.2f} s (state in {LocalHome.resolve().clusters_file})")
    return 0


def _down(args: argparse.Namespace) -> int:
    try:
        stopped = stop_clusters(timeout_s=args.timeout)
    except LocalBrokerError as error:
        print(f"offsetlake_dev local down: {error}", file=sys.stderr)
        return 1
    print(f"stopped: {', '.join(stopped)}" if stopped else "no local broker was running")
    return 0


def _status(args: argparse.Namespace) -> int:
    try:
        statuses = cluster_status()
    except LocalBrokerError as error:
        print(f"offsetlake_dev local status: {error}", file=sys.stderr)
        return 1
    print(
        render.table(
            ("CLUSTER", "STATE", "BOOTSTRAP", "PID"),
            [(status.name, str(status.state), status.bootstrap_servers, status.pid) for status in statuses],
        )
    )
    return 0 if all(status.state is ClusterState.RUNNING for status in statuses) else 1
