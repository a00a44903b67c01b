"""``offsetlake pipeline run`` and ``offsetlake sql``: flags -> typed settings -> run -> render."""

from __future__ import annotations

import argparse
import difflib
from pathlib import Path

from offsetlake.cli import render
from offsetlake.cli.clusters import ResolvedClusters, resolve_clusters
from offsetlake.cli.context import Context
from offsetlake.cli.options import add_cluster_options
from offsetlake.errors import InvalidValueError, UsageError
from offsetlake.local.home import local_home
from offsetlake.local.pipeline_run import run_pipeline
from offsetlake.pipeline.settings import ALL_KEYS, PipelineSettings


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


def settings_from_args(args: argparse.Namespace, clusters: ResolvedClusters) -> PipelineSettings:
    """The resolved clusters' settings with each ``--set offsetlake.KEY=VALUE`` applied, validated once."""
    conf = clusters.pipeline_settings().to_conf()
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


def handle_run(args: argparse.Namespace, context: Context) -> int:
    clusters = resolve_clusters(args, sources=True, secrets=context.secrets)
    result = run_pipeline(
        settings_from_args(args, clusters),
        local_home(),
        full_refresh=args.full_refresh,
        echo=lambda line: print(line, file=context.out),
        kafka_properties=clusters.kafka_properties,
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
