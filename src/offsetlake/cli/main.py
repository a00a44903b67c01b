"""The ``offsetlake`` entry point: parse, dispatch to a command module, map errors to exit statuses.

Only the error family is caught (offsetlake.errors): a UsageError prints ``offsetlake: <message>``
and exits 2, an ExternalError prints ``offsetlake <command>: error: <message>`` and exits 1. Any
other exception is a bug and keeps its traceback (exit 1). SIGINT and SIGTERM raise StopSignalError
wherever the command is, so its cleanups run; it exits 130/143 after ending every process it
started. Heavy imports (Spark, pyarrow, numpy) stay inside the functions that use them, so that
``offsetlake --help`` starts fast and a failover's probes start before them
(tests/unit/test_cli_startup.py).
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from typing import NoReturn

from offsetlake.cli import apply, failback, failover, job_report, mm2, pause_sync, pipeline
from offsetlake.cli.context import Context
from offsetlake.errors import OffsetlakeError, StopSignalError, UsageError
from offsetlake.kafka.client_logging import set_verbose
from offsetlake.local.processes import call_interruptibly, forced_exit_after, terminate_descendants
from offsetlake.local.spark import stop_local_spark

EXIT_USAGE = UsageError.exit_code
EXIT_INTERRUPTED = 130
_LOG_HANDLER = "offsetlake-cli"
FORCED_EXIT_AFTER_S = 30.0
"""After SIGINT/SIGTERM, the longest the cleanup may take (children ended, audit written)."""


class _OneLineParser(argparse.ArgumentParser):
    """A bad flag is one line (``offsetlake apply: error: ...``) and exit 2, not the whole usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(UsageError.exit_code, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(
        prog="offsetlake",
        description="Kafka consumer-group offset translation and failover.",
    )
    verbose_help = "print every Kafka client log line (default: the first line of each problem)"
    parser.add_argument("--verbose", action="store_true", help=verbose_help)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    pipeline.register(subparsers)
    apply.register(subparsers)
    failover.register(subparsers)
    failback.register(subparsers)
    mm2.register(subparsers)
    job_report.register(subparsers)
    pause_sync.register(subparsers)
    for command in subparsers.choices.values():
        command.add_argument("--verbose", action="store_true", default=argparse.SUPPRESS, help=verbose_help)
    return parser


def run_command(argv: Sequence[str] | None = None, context: Context | None = None) -> int:
    """Parse ``argv`` and run the command; returns the exit status."""
    context = context or Context()
    args = build_parser().parse_args(argv)
    if not context.owns_process:
        return _run(args, context)
    _configure_logging(context, verbose=args.verbose)
    # The command-line process also bounds a stop: its cleanup gets FORCED_EXIT_AFTER_S.
    with forced_exit_after(FORCED_EXIT_AFTER_S, f"offsetlake {args.command}"):
        return _run(args, context)


def _run(args: argparse.Namespace, context: Context) -> int:
    interrupted = False
    try:
        return int(call_interruptibly(lambda: args.handler(args, context)) or 0)
    except StopSignalError as error:
        # Whatever was running was cut off mid-call (a Spark request among them), so the JVM and
        # any other child are not asked politely: they are signalled and waited for.
        interrupted = True
        print(f"offsetlake {args.command}: {error}", file=context.err)
        if context.owns_process:
            terminate_descendants()
        return error.exit_code
    except UsageError as error:
        print(f"offsetlake: {error}", file=context.err)
        return error.exit_code
    except OffsetlakeError as error:
        print(f"offsetlake {args.command}: error: {error}", file=context.err)
        return error.exit_code
    except KeyboardInterrupt:
        print("offsetlake: interrupted", file=context.err)
        return EXIT_INTERRUPTED
    finally:
        if context.owns_process and not interrupted:
            stop_local_spark()


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command in this process; returns the exit status (testable without exiting)."""
    return run_command(argv, Context(owns_process=True))


def entry_point() -> None:
    """The wheel's ``offsetlake`` entry point: the console script and the Databricks job task.

    A ``python_wheel_task`` calls the entry point's function with the task parameters in
    ``sys.argv`` and ignores what it returns, so a failed or refused ``apply`` (1, 3) returned as a
    value would show as a successful task and fire no alert. A non-zero status therefore leaves as
    ``SystemExit``; success returns normally.
    """
    status = main()
    if status:
        raise SystemExit(status)


def _configure_logging(context: Context, *, verbose: bool) -> None:
    """offsetlake's loggers (Kafka clients included) print ``offsetlake: <message>`` to stderr."""
    logger = logging.getLogger("offsetlake")
    for previous in [handler for handler in logger.handlers if handler.name == _LOG_HANDLER]:
        logger.removeHandler(previous)  # main() called again in one process (tests)
    handler = logging.StreamHandler(context.err)
    handler.name = _LOG_HANDLER
    handler.setFormatter(logging.Formatter("offsetlake: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if verbose else logging.WARNING)
    logger.propagate = False
    set_verbose(verbose)
    if not verbose:
        # Libraries' own log lines (py4j reporting a call cut off by Ctrl-C, with its traceback)
        # are not the operator's business; the command's error line says what happened.
        logging.getLogger().addHandler(logging.NullHandler())


if __name__ == "__main__":
    entry_point()
