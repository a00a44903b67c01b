"""``offsetlake mm2 reset-offsets``: parse, run ``mm2_reset.run_reset``, print, audit.

Every run, dry or not, appends one row per planned key to the ``mm2_reset_audit`` table (like
``apply_audit``): what was found, what was (or would be) done, and whether it verified.
"""

from __future__ import annotations

import argparse
import json
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from offsetlake.cli import render
from offsetlake.cli.context import Context
from offsetlake.cli.options import add_cluster_options, parse_regex
from offsetlake.cli.pipeline import kafka_properties
from offsetlake.errors import UsageError
from offsetlake.kafka.connect_rest import ConnectRest
from offsetlake.kafka.secrets import kafka_options_from_properties, target_client_config
from offsetlake.local.clusters import read_local_clusters
from offsetlake.mm2_reset.reset import (
    ResetAction,
    ResetRequest,
    ResetResult,
    run_reset,
    run_rest_reset,
    truncate_offset_syncs,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

AUDIT_TABLE = "mm2_reset_audit"
AUDIT_SCHEMA = (
    "run_id STRING, mode STRING, connector STRING, offsets_topic STRING, kafka_partition INT, "
    "kafka_offset BIGINT, java_partition INT, source_partition STRING, stored_offset STRING, action STRING, "
    "verified BOOLEAN, recorded_at TIMESTAMP"
)
RESET_HEADERS = ("source partition", "stored offset", "kafka partition", "java partition", "action")


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
    reset.set_defaults(handler=handle_reset_offsets)


def handle_reset_offsets(args: argparse.Namespace, context: Context) -> int:
    status = _reset_through_rest(args, context) if args.connect_url else _reset_with_tombstones(args, context)
    if status == 0 and args.truncate_offset_syncs:
        status = _truncate(args, context)
    return status


def _client_options(args: argparse.Namespace, bootstrap: str | None) -> dict[str, str]:
    """librdkafka settings from --kafka-properties, for ``bootstrap`` (the local target by default)."""
    properties = kafka_properties(args)
    options = kafka_options_from_properties(properties) if properties else {}
    if not bootstrap and "kafka.bootstrap.servers" not in options:
        bootstrap = read_local_clusters().target.bootstrap_servers
    return target_client_config(bootstrap, options)


def _truncate(args: argparse.Namespace, context: Context) -> int:
    config = _client_options(args, args.offset_syncs_bootstrap or args.target_bootstrap_servers)
    topic = args.truncate_offset_syncs
    rows = truncate_offset_syncs(config, topic, execute=args.execute, timeout_s=30.0)
    print(
        render.table(
            ("partition", "log start", "log end", "records deleted" if args.execute else "records to delete",
             "log start after"),
            [(row.partition, row.log_start, row.log_end, row.log_end - row.log_start, row.log_start_after)
             for row in rows],
        ),
        file=context.out,
    )  # fmt: skip
    now, run_id, mode = datetime.now(UTC), _run_id(), "execute" if args.execute else "dry_run"
    _append_audit(
        [
            (run_id, mode, args.connector, topic, row.partition, row.log_end, None, None, None,
             "delete_records", row.verified if args.execute else None, now)
            for row in rows
        ]
    )  # fmt: skip
    failed = [row.partition for row in rows if args.execute and not row.verified]
    if failed:
        print(
            f"offsetlake mm2 reset-offsets: error: {topic} partitions {failed} still hold records",
            file=context.err,
        )
        return 1
    verdict = "deleted and verified" if args.execute else "dry run, nothing deleted"
    print(
        f"{topic}: {sum(r.log_end - r.log_start for r in rows)} offset-sync records; {verdict}",
        file=context.out,
    )
    return 0


def _reset_with_tombstones(args: argparse.Namespace, context: Context) -> int:
    if not args.offsets_topic:
        raise UsageError("mm2 reset-offsets: --offsets-topic is required without --connect-url")
    request = ResetRequest(
        connector=args.connector,
        offsets_topic=args.offsets_topic,
        client_config=_client_options(args, args.target_bootstrap_servers),
        topics=args.topics,
        execute=args.execute,
        connectors_stopped=args.connectors_stopped,
    )
    result = run_reset(request)
    print(render.table(RESET_HEADERS, _rows(result)), file=context.out)
    counts = {action: sum(row.action == action for row in result.rows) for action in ResetAction}
    summary = ", ".join(f"{action.value} {count}" for action, count in counts.items() if count)
    mode = "executed" if result.executed else "dry run, nothing written"
    print(
        f"{args.connector} in {args.offsets_topic}: {len(result.rows)} keys ({summary or 'none'}); {mode}",
        file=context.out,
    )
    _audit(result)
    if result.not_verified:
        print(
            f"offsetlake mm2 reset-offsets: error: {len(result.not_verified)} tombstones did not verify",
            file=context.err,
        )
        return 1
    if result.executed:
        print("verified: every tombstoned key's newest record is a tombstone", file=context.out)
    return 0


def _reset_through_rest(args: argparse.Namespace, context: Context) -> int:
    request = ResetRequest(
        connector=args.connector,
        offsets_topic=args.offsets_topic or "",
        client_config={},
        topics=args.topics,
        execute=args.execute,
        connect_url=args.connect_url,
    )
    result = run_rest_reset(request, ConnectRest(args.connect_url, timeout_s=request.timeout_s))
    rows = [
        (
            _json(row.stored.partition),
            None if row.stored.offset is None else _json(row.stored.offset),
            row.action.value,
        )
        for row in result.rows
    ]
    print(render.table(("source partition", "stored offset", "action"), rows), file=context.out)
    mode = "executed through the Connect REST API" if result.executed else "dry run, nothing changed"
    print(
        f"{args.connector} at {args.connect_url}: {len(result.rows)} source partitions; {mode}",
        file=context.out,
    )
    mode_name = "execute" if result.executed else "dry_run"
    failed = {id(row) for row in result.not_verified}
    now, run_id = datetime.now(UTC), _run_id()
    records = []
    for row, (partition, offset, _) in zip(result.rows, rows, strict=True):
        altered = result.executed and row.action is ResetAction.RESET_VIA_REST
        verified = (id(row) not in failed) if altered else None
        records.append(
            (run_id, mode_name, args.connector, args.offsets_topic, None, None, None, partition, offset,
             row.action.value, verified, now)
        )  # fmt: skip
    _append_audit(records)
    if result.not_verified:
        print(
            f"offsetlake mm2 reset-offsets: error: {len(result.not_verified)} source partitions "
            "still have an offset",
            file=context.err,
        )
        return 1
    if result.executed:
        print(
            f"verified: no selected partition has an offset; the connector is STOPPED: resume it with "
            f"PUT {args.connect_url.rstrip('/')}/connectors/{args.connector}/resume",
            file=context.out,
        )
    return 0


def _json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def _rows(result: ResetResult) -> list[tuple[object, ...]]:
    return [
        (
            json.dumps(dict(row.source_partition), separators=(",", ":")),
            None if row.record.offset is None else json.dumps(dict(row.record.offset), separators=(",", ":")),
            row.stored.partition,
            row.java_partition,
            row.action.value,
        )
        for row in result.rows
    ]


def _audit(result: ResetResult) -> None:
    failed = {id(row) for row in result.not_verified}
    now = datetime.now(UTC)
    run_id = _run_id()
    _append_audit(
        [
            (
                run_id,
                "execute" if result.executed else "dry_run",
                result.request.connector,
                result.request.offsets_topic,
                row.stored.partition,
                row.stored.kafka_offset,
                row.java_partition,
                source_partition,
                stored_offset,
                row.action.value,
                (id(row) not in failed) if result.executed and row.action == ResetAction.TOMBSTONE else None,
                now,
            )
            for row, (source_partition, stored_offset, *_) in zip(result.rows, _rows(result), strict=True)
        ]
    )


def _run_id() -> str:
    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"


def _append_audit(records: list[tuple[object, ...]]) -> None:
    """One mm2_reset_audit row per key or source partition, dry runs included (like apply_audit)."""
    if not records:
        return
    from offsetlake.local.spark import LOCAL_SCHEMA, get_local_spark

    spark: SparkSession = get_local_spark()
    spark.createDataFrame(records, AUDIT_SCHEMA).write.mode("append").saveAsTable(
        f"{LOCAL_SCHEMA}.{AUDIT_TABLE}"
    )
