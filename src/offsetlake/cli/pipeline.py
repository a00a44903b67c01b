"""``offsetlake pipeline run`` and ``offsetlake sql``: flags -> typed settings -> run -> render."""

from __future__ import annotations

import argparse
from pathlib import Path

from offsetlake.cli import render
from offsetlake.cli.context import Context
from offsetlake.config import local_home
from offsetlake.errors import InvalidValueError, UsageError
from offsetlake.pipeline.runner import local_settings, run_pipeline
from offsetlake.pipeline.settings import PipelineSettings


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    pipeline = subparsers.add_parser("pipeline", help="run the offset pipeline locally")
    pipeline_commands = pipeline.add_subparsers(dest="pipeline_command", required=True, metavar="COMMAND")
    run = pipeline_commands.add_parser("run", help="one pipeline update against the local clusters")
    run.add_argument("--full-refresh", action="store_true", help="reset every table and recompute from Kafka")
    run.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a pipeline setting, e.g. --set offsetlake.replication.separator=_",
    )
    run.set_defaults(handler=handle_run)

    sql = subparsers.add_parser("sql", help="query the local pipeline tables (schema offsetlake)")
    sql.add_argument("query", nargs="*", help="SQL text; several queries print several tables")
    sql.add_argument(
        "--file", action="append", help="read a query from a file (e.g. sql/latest_offsets_for_group.sql)"
    )
    sql.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    sql.set_defaults(handler=handle_sql)


def settings_from_args(args: argparse.Namespace, home: Path) -> PipelineSettings:
    """The local clusters' settings with each ``--set offsetlake.KEY=VALUE`` applied, validated once."""
    conf = local_settings(home).to_conf()
    for assignment in args.set or []:
        key, sep, value = assignment.partition("=")
        if not sep or not key.startswith("offsetlake."):
            raise InvalidValueError(f"--set wants offsetlake.KEY=VALUE, got {assignment!r}")
        conf[key] = value
    return PipelineSettings.from_mapping(conf)


def handle_run(args: argparse.Namespace, context: Context) -> int:
    home = local_home()
    settings = settings_from_args(args, home)
    result = run_pipeline(
        settings, home, full_refresh=args.full_refresh, echo=lambda line: print(line, file=context.out)
    )
    print(render.flow_outcomes(result), file=context.out)
    return 0 if result.succeeded else 1


def handle_sql(args: argparse.Namespace, context: Context) -> int:
    from offsetlake.pipeline.sql import run_sql

    queries = list(args.query)
    for path in args.file or []:
        queries.append(Path(path).read_text(encoding="utf-8"))
    if not queries:
        raise UsageError("give a query or --file")
    results = run_sql(queries)
    if args.json:
        print(render.sql_json(results), file=context.out)
    else:
        for columns, rows in results:
            print(render.sql_table(columns, rows), file=context.out)
    return 0
