"""The `offsetlake` command line: one sub-command family per module.

Each module in COMMAND_MODULES exposes ``register(subparsers)``, adds its own sub-commands with
``set_defaults(handler=...)``, and keeps heavy imports (Spark) inside its handlers so that
``offsetlake --help`` and ``offsetlake local up`` start fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from offsetlake.kafka.local_cluster import LocalClusterError

EXIT_USAGE = 2

COMMAND_MODULES: tuple[str, ...] = (
    "offsetlake.kafka.local_cli",
    "offsetlake.pipeline.runner",
    "offsetlake.apply.cli",
    "offsetlake.demo",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="offsetlake",
        description="Kafka consumer-group offset translation and failover.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except (LocalClusterError, ValueError) as error:
        # The operator's to fix (no local clusters, a bad setting or flag value): the message says
        # what and how; a traceback would only hide it.
        print(f"offsetlake: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("offsetlake: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
