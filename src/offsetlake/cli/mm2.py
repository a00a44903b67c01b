"""``offsetlake mm2 reset-offsets``: flags -> ResetRequest -> run_reset -> render.

Every run, dry or not, appends one row per planned key to the ``mm2_reset_audit`` table (like
``apply_audit``): what was found, what was (or would be) done, and whether it verified.
"""

from __future__ import annotations

import argparse

from offsetlake.cli import render, stores
from offsetlake.cli.clusters import resolve_clusters
from offsetlake.cli.context import Context
from offsetlake.cli.options import add_cluster_options, parse_regex
from offsetlake.kafka.secrets import target_client_config
from offsetlake.mm2_reset.run import ClientConfig, ResetRequest, run_reset


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mm2 = subparsers.add_parser("mm2", help="MirrorMaker 2's own state (Connect offsets)")
    commands = mm2.add_subparsers(dest="mm2_command", required=True, metavar="COMMAND")
    reset = commands.add_parser(
        "reset-offsets",
        help="delete a connector's stored Connect offsets (dry run unless --execute)",
        description="Show every Connect offset key of the connector in the offsets topic and what "
        "would be done; --execute writes a tombstone per key (exact key bytes, the partition Java's "
        "producer uses) and reads the topic back. Stop the connectors first.",
    )
    reset.add_argument("--connector", required=True, help="connector name, e.g. MirrorSourceConnector")
    reset.add_argument(
        "--offsets-topic",
        help="the Connect offsets topic on the target: mm2-offsets.<source>.internal (dedicated MM2) or the "
        "worker's offset.storage.topic (e.g. connect-offsets); required without --connect-url",
    )
    reset.add_argument("--topics", type=parse_regex, help="only keys whose source topic fully matches")
    reset.add_argument("--execute", action="store_true", help="write the tombstones (default: dry run)")
    reset.add_argument(
        "--connectors-stopped",
        action="store_true",
        help="confirm the connectors are stopped (required with --execute)",
    )
    reset.add_argument(
        "--connect-url",
        help="a Kafka Connect worker's REST URL (Kafka 3.6+): the worker stops the connector and resets "
        "its offsets itself (PUT /connectors/<name>/stop, DELETE or PATCH /connectors/<name>/offsets), "
        "the safer path; --connectors-stopped is then not needed",
    )
    reset.add_argument(
        "--truncate-offset-syncs",
        metavar="TOPIC",
        help="also delete every record of MM2's offset-syncs topic (mm2-offset-syncs.<target>.internal, "
        "DeleteRecords up to each log end), so restarted connectors translate with new syncs only",
    )
    reset.add_argument(
        "--offset-syncs-bootstrap",
        metavar="BOOTSTRAP",
        help="the cluster holding the offset-syncs topic (the source cluster with MM2's default "
        "offset-syncs.topic.location=source; default: the target)",
    )
    add_cluster_options(reset, sources=False)
    reset.add_argument("--catalog", help="Unity Catalog catalog of the mm2_reset_audit table (Databricks)")
    reset.add_argument("--schema", help="schema of the mm2_reset_audit table (default: offsetlake)")
    reset.set_defaults(handler=handle_reset_offsets)


def handle_reset_offsets(args: argparse.Namespace, context: Context) -> int:
    result = run_reset(
        request_from_args(args),
        client_config=_client_config(args, context),
        audit_session=lambda: stores.spark_for_audit(stores.command_home(context)),
    )
    out, err = render.mm2_reset_report(result)
    for line in out:
        print(line, file=context.out)
    for line in err:
        print(line, file=context.err)
    if result.error is not None:
        raise result.error
    return int(result.status)


def request_from_args(args: argparse.Namespace) -> ResetRequest:
    return ResetRequest(
        connector=args.connector,
        offsets_topic=args.offsets_topic,
        topics=args.topics,
        execute=args.execute,
        connectors_stopped=args.connectors_stopped,
        connect_url=args.connect_url,
        target_bootstrap_servers=args.target_bootstrap_servers,
        truncate_offset_syncs=args.truncate_offset_syncs,
        offset_syncs_bootstrap=args.offset_syncs_bootstrap,
        catalog=args.catalog,
        schema=args.schema,
    )


def _client_config(args: argparse.Namespace, context: Context) -> ClientConfig:
    """librdkafka settings for a cluster of this command, resolved by offsetlake.cli.clusters when
    the reset first needs it (a reset through --connect-url alone needs no Kafka cluster)."""

    def config_for(bootstrap: str | None) -> dict[str, str]:
        home = stores.command_home(context)
        clusters = resolve_clusters(
            args, sources=False, secrets=context.secrets, home=home, target_flag=bootstrap
        )
        return target_client_config(clusters.target, clusters.kafka_options)

    return config_for
