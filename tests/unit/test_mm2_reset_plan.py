"""The MM2 offset reset's plan, without Kafka: which stored keys get a tombstone (exact key bytes,
the partition Java's producer chooses), how a read-back verifies them, the REST rows, and the
offset-syncs truncation."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from offsetlake.codecs.connect import ConnectOffset, encode_connect_offset
from offsetlake.kafka.connect_rest import StoredOffset
from offsetlake.kafka.java_partitioner import java_partition
from offsetlake.mirror.positions import LogBounds
from offsetlake.mm2_reset.plan import (
    ResetAction,
    StoredKey,
    Truncation,
    delete_before,
    plan_reset,
    plan_rest_reset,
    plan_truncation,
    rest_partitions_to_reset,
    still_holding_records,
    to_tombstone,
    truncated,
    verify_rest_reset,
    verify_tombstones,
)

CONNECTOR = "MirrorSourceConnector"
PARTITIONS = 5


def _source(topic: str, partition: int = 0) -> dict[str, Any]:
    return {"cluster": "east", "partition": partition, "topic": topic}


def _stored(
    topic: str,
    *,
    connector: str = CONNECTOR,
    offset: int | None = 7,
    partition: int = 0,
    kafka_offset: int = 0,
) -> StoredKey:
    """A stored Connect offset, in the partition Java's producer chooses for its key."""
    record = ConnectOffset(
        connector, _source(topic, partition), None if offset is None else {"offset": offset}
    )
    key, value = encode_connect_offset(record)
    return StoredKey(java_partition(key, PARTITIONS), kafka_offset, key, value)


def _moved(entry: StoredKey) -> StoredKey:
    """The same record found in another partition than Java's (written by a non-Java producer)."""
    return replace(entry, partition=(entry.partition + 1) % PARTITIONS)


def test_each_key_of_the_connector_gets_a_tombstone_in_javas_partition() -> None:
    stored = [_stored("orders", partition=p) for p in range(3)]
    rows = plan_reset(stored, PARTITIONS, CONNECTOR, None)
    assert [row.action for row in rows] == [ResetAction.TOMBSTONE] * 3
    for row, entry in zip(rows, stored, strict=True):
        assert row.stored is entry  # the exact key bytes read from the topic
        assert row.java_partition == entry.partition == java_partition(entry.key, PARTITIONS)
    assert to_tombstone(rows) == rows


def test_other_connectors_unselected_topics_and_undecodable_records_are_never_touched() -> None:
    mine = _stored("orders")
    stored = [
        mine,
        _stored("orders", connector="OtherMirrorSource"),
        _stored("payments"),
        _stored("orders-archive"),  # the filter must match the whole topic name
        StoredKey(0, 9, b"not json", b"{}"),
    ]
    rows = plan_reset(stored, PARTITIONS, CONNECTOR, "orders")
    assert [row.stored for row in rows] == [mine]


def test_a_topic_filter_selects_by_full_match_and_no_filter_selects_all() -> None:
    stored = [_stored("orders"), _stored("orders-archive"), _stored("payments")]
    assert {
        row.source_partition["topic"] for row in plan_reset(stored, PARTITIONS, CONNECTOR, "orders.*")
    } == {
        "orders",
        "orders-archive",
    }
    assert len(plan_reset(stored, PARTITIONS, CONNECTOR, None)) == 3


def test_a_key_outside_javas_partition_is_skipped_and_a_reset_key_is_left_alone() -> None:
    right = _stored("orders")
    wrong = _moved(_stored("orders", partition=1))
    reset = _stored("orders", partition=2, offset=None)
    rows = plan_reset([right, wrong, reset], PARTITIONS, CONNECTOR, None)
    assert [row.action for row in rows] == [
        ResetAction.TOMBSTONE,
        ResetAction.SKIP_WRONG_PARTITION,
        ResetAction.ALREADY_RESET,
    ]
    assert rows[1].java_partition != rows[1].stored.partition
    assert to_tombstone(rows) == rows[:1]


def test_rows_print_their_partition_and_offset_as_compact_json() -> None:
    (row,) = plan_reset([_stored("orders", offset=41)], PARTITIONS, CONNECTOR, None)
    assert row.source_partition_json == '{"cluster":"east","partition":0,"topic":"orders"}'
    assert row.stored_offset_json == '{"offset":41}'
    (reset,) = plan_reset([_stored("orders", offset=None)], PARTITIONS, CONNECTOR, None)
    assert reset.stored_offset_json is None


def test_tombstones_verify_when_each_keys_newest_record_is_a_tombstone() -> None:
    stored = [_stored("orders", partition=p) for p in range(2)]
    rows = plan_reset(stored, PARTITIONS, CONNECTOR, None)
    after = [StoredKey(entry.partition, 10 + i, entry.key, None) for i, entry in enumerate(stored)]
    assert verify_tombstones(after, rows) == []


def test_a_key_whose_newest_record_still_holds_an_offset_does_not_verify() -> None:
    stored = [_stored("orders", partition=p) for p in range(2)]
    rows = plan_reset(stored, PARTITIONS, CONNECTOR, None)
    after = [StoredKey(stored[0].partition, 10, stored[0].key, None), stored[1]]
    assert verify_tombstones(after, rows) == [rows[1]]
    # A key missing from the read-back is judged by what was read before: not a tombstone.
    assert verify_tombstones(after[:1], rows) == [rows[1]]


def test_only_tombstone_rows_are_verified() -> None:
    skipped = _moved(_stored("orders"))
    rows = plan_reset([skipped], PARTITIONS, CONNECTOR, None)
    assert rows[0].action is ResetAction.SKIP_WRONG_PARTITION
    assert verify_tombstones([skipped], rows) == []


def _listed(topic: str, partition: int, offset: int | None) -> StoredOffset:
    return StoredOffset(_source(topic, partition), None if offset is None else {"offset": offset})


def test_rest_rows_select_by_topic_and_reset_only_partitions_with_an_offset() -> None:
    listed = [_listed("orders", 0, 5), _listed("orders", 1, None), _listed("payments", 0, 3)]
    rows = plan_rest_reset(listed, "orders")
    assert [row.action for row in rows] == [ResetAction.RESET_VIA_REST, ResetAction.ALREADY_RESET]
    assert rest_partitions_to_reset(rows) == [_source("orders", 0)]
    assert rows[0].source_partition_json == '{"cluster":"east","partition":0,"topic":"orders"}'
    assert (rows[0].stored_offset_json, rows[1].stored_offset_json) == ('{"offset":5}', None)
    assert len(plan_rest_reset(listed, None)) == 3


def test_rest_rows_verify_when_the_worker_no_longer_lists_an_offset() -> None:
    rows = plan_rest_reset([_listed("orders", 0, 5), _listed("orders", 1, 6)], None)
    after = [
        _listed("orders", 0, None),
        StoredOffset({"topic": "orders", "partition": 1, "cluster": "east"}, {"offset": 6}),
    ]
    assert verify_rest_reset(after, rows) == [rows[1]]  # the same partition, whatever its key order
    assert verify_rest_reset([], rows) == []


def test_truncation_plans_every_partition_up_to_its_log_end() -> None:
    planned = plan_truncation({1: LogBounds(4, 9), 0: LogBounds(0, 12)})
    assert planned == [Truncation(0, 0, 12), Truncation(1, 4, 9)]
    assert [row.records for row in planned] == [12, 5]
    assert delete_before(planned) == {0: 12, 1: 9}
    assert not any(row.verified for row in planned)  # a dry run verifies nothing


def test_a_truncation_verifies_when_each_log_start_reached_the_planned_end() -> None:
    planned = plan_truncation({0: LogBounds(0, 12), 1: LogBounds(4, 9)})
    done = truncated(planned, {0: 12, 1: 7})
    assert [row.log_start_after for row in done] == [12, 7]
    assert [row.verified for row in done] == [True, False]
    assert still_holding_records(done) == [1]
    assert still_holding_records(truncated(planned, {0: 12, 1: 9})) == []


def test_audit_rows_record_placement_and_verify_only_what_an_executed_run_altered() -> None:
    from offsetlake.mm2_reset.audit import rest_records, tombstone_records
    from offsetlake.mm2_reset.run import ResetRequest

    rows = plan_reset([_stored("orders"), _stored("orders", partition=1)], PARTITIONS, CONNECTOR, None)
    executed = ResetRequest(CONNECTOR, "connect-offsets", execute=True)
    records = tombstone_records("run-1", executed, rows, not_verified=[rows[1]])
    placed = [(record[4], record[5], record[6]) for record in records]
    assert placed == [(row.stored.partition, row.stored.kafka_offset, row.java_partition) for row in rows]
    assert [record[10] for record in records] == [True, False]
    assert {record[:4] for record in records} == {("run-1", "execute", CONNECTOR, "connect-offsets")}
    dry = tombstone_records("run-2", replace(executed, execute=False), rows, not_verified=[])
    assert [(record[1], record[10]) for record in dry] == [("dry_run", None), ("dry_run", None)]

    rest = plan_rest_reset([_listed("orders", 0, 5), _listed("orders", 1, None)], None)
    records = rest_records("run-3", executed, rest, not_verified=[])
    assert [record[4:7] for record in records] == [(None, None, None), (None, None, None)]
    assert [(record[7], record[9], record[10]) for record in records] == [
        (rest[0].source_partition_json, "reset_via_rest", True),
        (rest[1].source_partition_json, "already_reset", None),
    ]


def test_the_audit_does_not_import_the_job_that_appends_to_it() -> None:
    """The job imports the audit; an import back (even for typing only) would make them one floor."""
    import ast
    from pathlib import Path

    from offsetlake.mm2_reset import audit

    tree = ast.parse(Path(audit.__file__).read_text())
    imported = {
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert "offsetlake.mm2_reset.run" not in imported
