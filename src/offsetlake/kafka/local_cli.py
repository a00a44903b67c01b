"""`offsetlake local up|down|status`: the two local brokers a developer runs the demo and pipeline against."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from offsetlake.config import local_home
from offsetlake.kafka.local_cluster import (
    CLUSTERS_FILE,
    ClusterState,
    LocalClusterError,
    cluster_status,
    start_clusters,
    stop_clusters,
)


def register(subparsers: Any) -> None:
    """Add the `local` command family to the `offsetlake` parser."""
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


def _up(args: argparse.Namespace) -> int:
    started = time.monotonic()
    try:
        pair = start_clusters(timeout_s=args.timeout)
    except LocalClusterError as error:
        print(f"offsetlake local up: {error}", file=sys.stderr)
        return 1
    elapsed = time.monotonic() - started
    for cluster in pair:
        print(f"{cluster.name}: {cluster.bootstrap_servers} (pid {cluster.pid}, log {cluster.log_path})")
    print(f"local clusters up in {elapsed:.2f} s (state in {local_home() / CLUSTERS_FILE})")
    return 0


def _down(args: argparse.Namespace) -> int:
    try:
        stopped = stop_clusters(timeout_s=args.timeout)
    except LocalClusterError as error:
        print(f"offsetlake local down: {error}", file=sys.stderr)
        return 1
    print(f"stopped: {', '.join(stopped)}" if stopped else "no local broker was running")
    return 0


def _status(args: argparse.Namespace) -> int:
    try:
        statuses = cluster_status()
    except LocalClusterError as error:
        print(f"offsetlake local status: {error}", file=sys.stderr)
        return 1
    rows = [("CLUSTER", "STATE", "BOOTSTRAP", "PID")] + [
        (status.name, str(status.state), status.bootstrap_servers or "-", str(status.pid or "-"))
        for status in statuses
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    return 0 if all(status.state is ClusterState.RUNNING for status in statuses) else 1
