"""``offsetlake pipeline run`` and ``offsetlake sql``: flags -> typed settings -> run -> render."""

from __future__ import annotations

import argparse
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from offsetlake.cli import render
from offsetlake.cli.clusters import resolve_clusters
from offsetlake.cli.context import Context
from offsetlake.cli.options import add_cluster_options, parse_duration
from offsetlake.cli.settings import add_set_option, run_settings
from offsetlake.contract.settings import PipelineSettings
from offsetlake.durations import format_duration
from offsetlake.errors import UsageError
from offsetlake.local.connect_server import WarmServer
from offsetlake.local.home import LocalHome
from offsetlake.local.locks import HomeInUseError, SyncLoop, sync_loop
from offsetlake.local.pipeline_update import PipelineRunResult, run_pipeline

_POLL_S = 0.2
"""How often the sync loop looks for a stand-aside request between updates."""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    pipeline = subparsers.add_parser("pipeline", help="run the offset pipeline locally")
    pipeline_commands = pipeline.add_subparsers(dest="pipeline_command", required=True, metavar="COMMAND")
    run = pipeline_commands.add_parser(
        "run", help="one pipeline update (against the local clusters unless --target/--source say otherwise)"
    )
    add_cluster_options(run, sources=True)
    run.add_argument("--full-refresh", action="store_true", help="reset every table and recompute from Kafka")
    run.add_argument(
        "--every",
        type=parse_duration,
        metavar="DURATION",
        help="keep updating, one update every DURATION (e.g. 60s) on one kept-warm local Spark; "
        "one line per update; stops on Ctrl-C or SIGTERM",
    )
    add_set_option(run)
    run.set_defaults(handler=handle_run)

    sql = subparsers.add_parser("sql", help="query the local pipeline tables (schema offsetlake)")
    sql.add_argument("query", nargs="*", help="SQL text; several queries print several tables")
    sql.add_argument(
        "--file", action="append", help="read a query from a file (e.g. sql/latest_offsets_for_group.sql)"
    )
    sql.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    sql.set_defaults(handler=handle_sql)


def handle_run(args: argparse.Namespace, context: Context) -> int:
    if args.every is not None and args.full_refresh:
        raise UsageError("--every repeats incremental updates; run --full-refresh once on its own")
    if args.every is not None and args.every <= timedelta(0):
        raise UsageError("--every wants a duration above zero, e.g. 60s")
    clusters = resolve_clusters(args, sources=True, secrets=context.secrets, home=context.home)
    settings = run_settings(args, clusters)
    if args.every is not None:
        return run_every(settings, context.home, args.every, clusters.kafka_properties, context)
    result = run_pipeline(
        settings,
        context.home,
        full_refresh=args.full_refresh,
        echo=lambda line: print(line, file=context.out),
        kafka_properties=clusters.kafka_properties,
    )
    print(render.flow_outcomes(result), file=context.out)
    return 0 if result.succeeded else 1


def run_every(
    settings: PipelineSettings,
    home: LocalHome,
    every: timedelta,
    kafka_properties: Path | None,
    context: Context,
) -> int:
    """Updates every ``every`` until a signal stops the command (StopSignalError ends the loop and
    the server with it). One local Spark Connect server stays warm between updates, so an update
    pays for no JVM start; a failed update gets a fresh server (its caches may not match tables
    the gold guard put back) and the loop goes on.

    A failover goes first (local/locks.py, stand-aside protocol): asked, the loop stops an update in
    progress (gold put back) or the server it is starting, stops its server, starts nothing while
    the failover runs, then resumes with a line saying so. A request is looked for before the
    server starts and before each update, so one made in between is not lost. An update whose run
    lock a reader holds (the failover's gold reads) is skipped with a line: the next one comes at
    the next interval."""
    with sync_loop(home) as loop, WarmServer(home, kafka_properties=kafka_properties) as server:
        number = 0
        stopped = True  # by the loop itself: not started yet, stood aside, or after a failed update
        while True:
            started = time.monotonic()
            stopped = _stand_aside_if_asked(loop, server, context) or stopped
            if not server.alive():
                if not stopped:
                    print(
                        f"{_now()} the local Spark Connect server is gone; starting another", file=context.out
                    )
                if not server.start(interrupted=lambda: loop.asked):
                    continue  # a failover asked while the server started: stand aside first
                if number == 0:
                    print(
                        f"{_now()} local Spark Connect server {server.url} up; an update every "
                        f"{format_duration(every)} until Ctrl-C or SIGTERM",
                        file=context.out,
                        flush=True,
                    )
                stopped = False
            stop = threading.Event()
            loop.on_request = stop.set
            if loop.asked:  # since the look above: the signal came before the update could hear it
                loop.on_request = None
                continue
            number += 1
            try:
                result = run_pipeline(
                    settings, home, kafka_properties=kafka_properties, server=server, stop=stop
                )
            except HomeInUseError as error:
                print(f"{_now()} update {number}: skipped: {error}", file=context.out, flush=True)
            else:
                asked = loop.requester() is not None
                print(update_line(number, result, stood_aside=asked), file=context.out, flush=True)
                if not result.succeeded:
                    server.stop()  # started again (interruptibly) at the top, unless asked
                    stopped = True
            finally:
                loop.on_request = None
            while time.monotonic() - started < every.total_seconds() and loop.requester() is None:
                time.sleep(min(_POLL_S, max(0.0, every.total_seconds() - (time.monotonic() - started))))


def _stand_aside_if_asked(loop: SyncLoop, server: WarmServer, context: Context) -> bool:
    """With a live request (a failover's), stop the server and wait for the request to end: True.
    The stand-aside signal's flag is cleared first: one that comes after this look is seen later."""
    loop.asked = False
    request = loop.requester()
    if request is None:
        return False
    server.stop()
    print(
        f"{_now()} standing aside for process {request.pid} (a failover): no update until it ends",
        file=context.out,
        flush=True,
    )
    loop.stand_aside(request)
    print(f"{_now()} process {request.pid} is done; resuming updates", file=context.out, flush=True)
    return True


def update_line(number: int, result: PipelineRunResult, *, stood_aside: bool = False) -> str:
    """One line per update of ``--every``: when, the status (restarts included), how long."""
    line = f"{_now()} update {number}: {result.status} in {result.seconds:.1f}s"
    if stood_aside and not result.succeeded:
        line += ": stopped to stand aside for a failover"
    elif not result.succeeded:
        line += f": {result.explanation} (log: {result.log_path})"
    if result.restored_tables:
        line += f"; gold tables put back: {', '.join(result.restored_tables)}"
    return line


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")


def handle_sql(args: argparse.Namespace, context: Context) -> int:
    from offsetlake.local.audit_journal import fold_before_queries, journal_note, journal_schemas
    from offsetlake.local.home import LOCAL_SCHEMA
    from offsetlake.local.locks import HomeInUseError
    from offsetlake.local.sql import run_sql, sql_session

    queries = list(args.query)
    for path in args.file or []:
        queries.append(Path(path).read_text(encoding="utf-8"))
    if not queries:
        raise UsageError("give a query or --file")
    home = context.home
    try:
        spark = sql_session(home)
    except HomeInUseError as error:
        if journal_schemas(home):  # the failover's audit is not in a table yet: say where it is
            raise error.rewritten(lambda message: f"{message}; {journal_note(home)}") from error
        raise
    # Runs without Spark (a local failover, plan, apply) left their audit rows in the journal: fold
    # them into apply_audit before any query, so the table the run's report names holds them.
    unfolded = fold_before_queries(spark, home, LOCAL_SCHEMA)
    if unfolded:
        print(f"offsetlake sql: {unfolded}", file=context.err)
    results = run_sql(spark, queries)
    if args.json:
        print(render.sql_json(results), file=context.out)
    else:
        for columns, rows in results:
            print(render.sql_table(columns, rows), file=context.out)
    return 0
