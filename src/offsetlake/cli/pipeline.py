"""``offsetlake pipeline run`` and ``offsetlake sql``: flags -> typed settings -> run -> render."""

from __future__ import annotations

import argparse
import difflib
import os
from pathlib import Path

from offsetlake.cli import render
from offsetlake.cli.context import Context
from offsetlake.cli.options import add_cluster_options
from offsetlake.errors import InvalidValueError, UsageError
from offsetlake.kafka.secrets import PROPERTIES_ENV, kafka_options_from_properties
from offsetlake.local.home import local_home
from offsetlake.local.pipeline_run import local_settings, run_pipeline
from offsetlake.pipeline.settings import ALL_KEYS, PipelineSettings, SourceCluster


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    pipeline = subparsers.add_parser("pipeline", help="run the offset pipeline locally")
    pipeline_commands = pipeline.add_subparsers(dest="pipeline_command", required=True, metavar="COMMAND")
    run = pipeline_commands.add_parser(
        "run", help="one pipeline update (against the local clusters unless --target/--source say otherwise)"
    )
    add_cluster_options(run, sources=True)
    run.add_argument("--full-refresh", action="store_true", help="reset every table and recompute from Kafka")
    add_set_option(run)
    run.set_defaults(handler=handle_run)

    sql = subparsers.add_parser("sql", help="query the local pipeline tables (schema offsetlake)")
    sql.add_argument("query", nargs="*", help="SQL text; several queries print several tables")
    sql.add_argument(
        "--file", action="append", help="read a query from a file (e.g. sql/latest_offsets_for_group.sql)"
    )
    sql.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    sql.set_defaults(handler=handle_sql)


def add_set_option(parser: argparse.ArgumentParser) -> None:
    """``--set offsetlake.KEY=VALUE`` (repeatable): a pipeline setting, checked by settings_from_args."""
    parser.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a pipeline setting, e.g. --set offsetlake.cluster.timeout.ms=10000",
    )


def settings_from_args(args: argparse.Namespace, home: Path) -> PipelineSettings:
    """The named (else the local) clusters' settings with each ``--set offsetlake.KEY=VALUE``
    applied, validated once."""
    conf = cluster_settings(args, home).to_conf()
    for assignment in args.set or []:
        key, sep, value = assignment.partition("=")
        if not sep or not key.startswith("offsetlake."):
            raise InvalidValueError(f"--set wants offsetlake.KEY=VALUE, got {assignment!r}")
        if key not in ALL_KEYS:
            nearest = difflib.get_close_matches(key, ALL_KEYS, n=1)
            hint = f"; did you mean {nearest[0]}?" if nearest else f"; known keys: {', '.join(ALL_KEYS)}"
            raise InvalidValueError(f"--set: unknown setting {key!r}{hint}")
        conf[key] = value
    return PipelineSettings.from_mapping(conf)


def cluster_settings(args: argparse.Namespace, home: Path) -> PipelineSettings:
    """--target and --source name the clusters; without both, the local pair (make up)."""
    if not args.target_bootstrap_servers and not args.sources:
        return local_settings(home)
    if not args.target_bootstrap_servers or not args.sources:
        raise UsageError(
            "--target and --source go together (give neither to use the local clusters of `make up`)"
        )
    return PipelineSettings(
        target_bootstrap_servers=args.target_bootstrap_servers,
        target_alias=args.target_alias or "",
        sources=tuple(SourceCluster(source.name, source.bootstrap_servers) for source in args.sources),
    )


def kafka_properties(args: argparse.Namespace) -> Path | None:
    """The Kafka properties file to use, checked now (a typo costs seconds, not a Spark start)."""
    path = args.kafka_properties or (
        Path(os.environ[PROPERTIES_ENV]) if os.environ.get(PROPERTIES_ENV) else None
    )
    if path is not None:
        kafka_options_from_properties(path)
    return path


def handle_run(args: argparse.Namespace, context: Context) -> int:
    home = local_home()
    settings = settings_from_args(args, home)
    result = run_pipeline(
        settings,
        home,
        full_refresh=args.full_refresh,
        echo=lambda line: print(line, file=context.out),
        kafka_properties=kafka_properties(args),
    )
    print(render.flow_outcomes(result), file=context.out)
    return 0 if result.succeeded else 1


def handle_sql(args: argparse.Namespace, context: Context) -> int:
    from offsetlake.local.sql import run_sql

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
