"""The ``offsetlake`` entry point: parse, dispatch to a command module, map errors to exit statuses.

Only the error family is caught (offsetlake.errors): a UsageError prints ``offsetlake: <message>``
and exits 2, an ExternalError prints ``offsetlake <command>: error: <message>`` and exits 1. Any
other exception is a bug and keeps its traceback (exit 1). Heavy imports (Spark) stay inside the
handlers so that ``offsetlake --help`` starts fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from offsetlake.cli import apply, failover, pipeline
from offsetlake.cli.context import Context
from offsetlake.errors import OffsetlakeError, UsageError

EXIT_USAGE = UsageError.exit_code
EXIT_INTERRUPTED = 130


class _OneLineParser(argparse.ArgumentParser):
    """A bad flag is one line (``offsetlake apply: error: ...``) and exit 2, not the whole usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(UsageError.exit_code, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(
        prog="offsetlake",
        description="Kafka consumer-group offset translation and failover.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    pipeline.register(subparsers)
    apply.register(subparsers)
    failover.register(subparsers)
    return parser


def run_command(argv: Sequence[str] | None = None, context: Context | None = None) -> int:
    """Parse ``argv`` and run the command; returns the exit status."""
    context = context or Context()
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args, context) or 0)
    except UsageError as error:
        print(f"offsetlake: {error}", file=context.err)
        return error.exit_code
    except OffsetlakeError as error:
        print(f"offsetlake {args.command}: error: {error}", file=context.err)
        return error.exit_code
    except KeyboardInterrupt:
        print("offsetlake: interrupted", file=context.err)
        return EXIT_INTERRUPTED


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(argv)


if __name__ == "__main__":
    sys.exit(main())
