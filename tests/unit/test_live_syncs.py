"""The sources read now (apply/live_syncs.py): the syncs beyond silver, the index against the
translation oracle, the snapshot's rows and how they compete with gold's."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsetlake.apply.live_syncs import SyncIndex, merge_live, translated_snapshot, with_new_syncs
from offsetlake.apply.placement import TopicRouting
from offsetlake.codecs.mm2 import OffsetSync
from offsetlake.kafka.group_offsets import GroupOffset
from offsetlake.kafka.offset_sync_tail import SyncRecord
from offsetlake.mirror.policy import ReplicationPolicy
from offsetlake.mirror.precedence import METHODS
from offsetlake.mirror.translation import translate
from tests.unit.test_tail_merge import T0, gold

NOW = T0 + timedelta(minutes=5)
"""The sources are read after gold's last observation (T0 - 1 minute)."""
SYNCS_TOPIC = "mm2-offset-syncs.dr.internal"
NAMING = TopicRouting(ReplicationPolicy(), "dr")


def record(topic: str, partition: int, offset: int, sync: OffsetSync | None) -> SyncRecord:
    return SyncRecord("primary", topic, partition, offset, sync, None if sync else "bad")


def committed(group: str, offset: int, *, topic: str = "orders", partition: int = 0) -> GroupOffset:
    return GroupOffset(group, "EMPTY", topic, partition, offset, "m", NOW)


histories = st.lists(
    st.tuples(st.integers(0, 40), st.integers(0, 400)), max_size=30
)  # duplicates of one upstream offset with another downstream: the latest written wins


@given(histories, st.integers(0, 50))
def test_the_index_answers_as_the_oracle(syncs: list[tuple[int, int]], position: int) -> None:
    index = SyncIndex({("orders", 0): syncs})
    assert index.translate("orders", 0, position) == translate(syncs, position)


def test_the_index_knows_nothing_of_a_partition_without_syncs() -> None:
    assert SyncIndex({}).translate("orders", 0, 5) is None
    with pytest.raises(ValueError, match="committed position"):
        SyncIndex({}).translate("orders", 0, -1)


def test_new_syncs_are_the_records_past_what_silver_ingested_in_kafka_order() -> None:
    silver = {("orders", 0): [(0, 0), (10, 8)]}
    records = [
        record(SYNCS_TOPIC, 0, 7, OffsetSync("orders", 0, 30, 25)),
        record(SYNCS_TOPIC, 0, 3, OffsetSync("orders", 0, 10, 8)),  # silver holds it already
        record(SYNCS_TOPIC, 0, 5, OffsetSync("orders", 0, 20, 17)),
        record(SYNCS_TOPIC, 0, 6, None),  # did not decode
        record(SYNCS_TOPIC, 1, 0, OffsetSync("orders", 1, 4, 4)),  # a partition silver never read
    ]
    combined, added = with_new_syncs(silver, records, {(SYNCS_TOPIC, 0): 4})
    assert combined == {("orders", 0): [(0, 0), (10, 8), (20, 17), (30, 25)], ("orders", 1): [(4, 4)]}
    assert added == 3
    assert silver == {("orders", 0): [(0, 0), (10, 8)]}  # silver's history is not changed


def test_each_committed_position_a_sync_translates_becomes_a_row_named_on_the_target() -> None:
    index = SyncIndex({("orders", 0): [(0, 0), (10, 8)], ("orders", 1): [(5, 5)]})
    snapshot = [
        committed("g1", 10),  # exact: 8
        committed("g2", 12),  # after the sync: 8 + 1
        committed("g3", 3, partition=1),  # before any sync of partition 1: no row
        committed("g4", -1),  # no commit
    ]
    rows = translated_snapshot("primary", snapshot, index, NAMING, {})
    assert [(r.consumer_group, r.topic, r.downstream_offset, r.upstream_offset) for r in rows] == [
        ("g1", "primary.orders", 8, 10),
        ("g2", "primary.orders", 9, 12),
    ]
    assert all(r.method == "offset_sync" and r.from_tail and r.observed_at == NOW for r in rows)
    assert all(r.source_timestamp == NOW and r.metadata == "m" for r in rows)


def test_a_translation_gold_already_has_keeps_its_version() -> None:
    index = SyncIndex({("orders", 0): [(10, 8)]})
    same = gold("g1", 10, 8, "offset_sync")
    moved = gold("g2", 9, 7, "offset_sync")
    found = {("primary", r.consumer_group, r.topic, r.partition): r for r in (same, moved)}
    rows = translated_snapshot("primary", [committed("g1", 10), committed("g2", 10)], index, NAMING, found)
    kept = [(r.consumer_group, r.source_timestamp) for r in rows]
    assert kept == [("g1", same.source_timestamp), ("g2", NOW)]


def test_a_live_translation_replaces_older_rows_of_every_method_but_a_preferred_one_of_its_offset() -> None:
    live = translated_snapshot(
        "primary",
        [
            committed(group, 20)
            for group in ("older-sync", "older-checkpoint", "same-checkpoint", "mapping", "new")
        ],
        SyncIndex({("orders", 0): [(20, 18)]}),
        NAMING,
        {},
    )
    rows = [
        gold("older-sync", 15, 13, "offset_sync"),
        gold("older-checkpoint", 12, 11, "checkpoint"),
        gold("same-checkpoint", 20, 17, "checkpoint"),  # offset_sync comes first in the precedence
        gold("mapping", 20, 18, "mapping"),  # the same position by a method preferred to offset syncs
    ]
    merged, replaced = merge_live(rows, live, METHODS)
    by_group = {row.consumer_group: row for row in merged}
    assert {group: row.method for group, row in by_group.items()} == {
        "older-sync": "offset_sync",
        "older-checkpoint": "offset_sync",
        "same-checkpoint": "offset_sync",
        "mapping": "mapping",
        "new": "offset_sync",
    }
    assert by_group["mapping"] == rows[3]
    assert replaced == 4


def test_a_row_equal_to_gold_is_not_counted_as_replaced() -> None:
    row = gold("g1", 10, 8, "offset_sync", from_tail=True, observed_at=NOW, source_timestamp=T0)
    merged, replaced = merge_live([row], [row], METHODS)
    assert merged == (row,) and replaced == 0
