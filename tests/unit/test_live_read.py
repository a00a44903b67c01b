"""Reading the sources now (apply/live_read.py): silver's syncs plus the topic's newer records
translate each source's snapshot; what cannot be read is a reported gap, never a failed failover.

The Kafka reads are stand-ins (no cluster): the snapshot and the syncs topic as a source would
answer them, or the error it would raise."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from offsetlake.apply import live_read
from offsetlake.apply.live_read import LiveSource, LiveSources, SourceReads
from offsetlake.apply.planner import Selection
from offsetlake.apply.run import ApplyRequest, ApplyResult, ApplyStatus
from offsetlake.cli.render import live_lines
from offsetlake.codecs.mm2 import OffsetSync
from offsetlake.contract.gold import GoldOffset
from offsetlake.kafka.group_offsets import GroupOffset, GroupSnapshotError
from offsetlake.kafka.offset_sync_tail import OffsetSyncTail, OffsetSyncTailError, SyncRecord
from offsetlake.kafka.topic_tail import UnreadablePartition
from offsetlake.mirror.policy import ReplicationPolicy
from offsetlake.mirror.precedence import METHODS

NOW = datetime(2026, 11, 28, 8, 0, tzinfo=UTC)
SYNCS = "mm2-offset-syncs.dr.internal"


class SilverSyncs:
    """silver_offset_syncs as the store reads it: east's history up to syncs-topic offset 2."""

    def offset_syncs(self, source_cluster: str, topics: Collection[str]) -> dict[tuple[str, int], list[Any]]:
        return {("orders", 0): [(0, 0), (10, 8)]} if source_cluster == "east" and "orders" in topics else {}

    def offset_sync_positions(self, source_cluster: str) -> dict[tuple[str, int], int]:
        return {(SYNCS, 0): 2} if source_cluster == "east" else {}


def _sources(*aliases: str, location: str = "source") -> LiveSources:
    return LiveSources(
        sources=tuple(LiveSource(alias, {"bootstrap.servers": f"{alias}:9092"}) for alias in aliases),
        policy=ReplicationPolicy(),
        target_alias="dr",
        offset_syncs_location=location,
    )


def _read(
    monkeypatch: pytest.MonkeyPatch,
    live: LiveSources,
    snapshot: Callable[[str], list[GroupOffset]],
    syncs: Callable[[str | None], OffsetSyncTail],
    gold: list[GoldOffset] | None = None,
) -> live_read.LiveRead:
    def fake_snapshot(config: Mapping[str, str], *_: object, **__: object) -> list[GroupOffset]:
        return snapshot(config["bootstrap.servers"].split(":")[0])

    def fake_syncs(
        config: Mapping[str, str], *_: object, source_alias: str | None, **__: object
    ) -> OffsetSyncTail:
        return syncs(source_alias)

    monkeypatch.setattr(live_read, "snapshot_group_offsets", fake_snapshot)
    monkeypatch.setattr(live_read, "read_offset_sync_tail", fake_syncs)
    target = {"bootstrap.servers": "target:9092"}
    with SourceReads(live, target=target, selection=Selection(), timeout_s=5.0) as reads:
        return reads.merged(SilverSyncs(), gold or [], METHODS)  # type: ignore[arg-type]


def _commit(group: str, offset: int) -> GroupOffset:
    return GroupOffset(group, "EMPTY", "orders", 0, offset, "", NOW)


def _tail(*records: SyncRecord, unreadable: tuple[UnreadablePartition, ...] = ()) -> OffsetSyncTail:
    return OffsetSyncTail(records, (SYNCS,), 0.1, unreadable)


def test_a_snapshot_is_translated_by_silver_and_the_records_past_it(monkeypatch: pytest.MonkeyPatch) -> None:
    newer = SyncRecord("east", SYNCS, 0, 2, OffsetSync("orders", 0, 20, 17))
    older = SyncRecord("east", SYNCS, 0, 1, OffsetSync("orders", 0, 10, 8))  # silver has it
    bad = SyncRecord("east", SYNCS, 0, 3, None, "truncated")
    read = _read(
        monkeypatch,
        _sources("east"),
        lambda _: [_commit("a", 12), _commit("b", 25), _commit("c", 0)],
        lambda _: _tail(older, newer, bad),
    )
    rows = {row.consumer_group: row for row in read.merge.offsets}
    assert {group: row.downstream_offset for group, row in rows.items()} == {"a": 9, "b": 18, "c": 0}
    assert {row.topic for row in rows.values()} == {"east.orders"}
    assert (read.merge.snapshots, read.merge.translated, read.merge.new_syncs, read.merge.rejected) == (
        3,
        3,
        1,
        1,
    )
    assert read.snapshots == {"east": [_commit("a", 12), _commit("b", 25), _commit("c", 0)]}
    assert read.gaps == ()


def test_a_source_whose_groups_cannot_be_read_is_a_gap_and_the_others_are_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def snapshot(alias: str) -> list[GroupOffset]:
        if alias == "west":
            raise GroupSnapshotError("could not snapshot 1 of 1 groups: a: timed out")
        return [_commit("a", 10)]

    read = _read(monkeypatch, _sources("east", "west"), snapshot, lambda _: _tail())
    assert list(read.snapshots) == ["east"]
    assert read.gaps == (
        ("west", "its groups could not be read now (could not snapshot 1 of 1 groups: a: timed out): "
         "planned from gold's snapshot"),
    )  # fmt: skip
    assert [row.consumer_group for row in read.merge.offsets] == ["a"]


def test_syncs_that_cannot_be_read_leave_silver_to_translate_and_say_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def syncs(alias: str | None) -> OffsetSyncTail:
        raise OffsetSyncTailError(f"cannot list the source {alias}'s topics: timed out")

    read = _read(monkeypatch, _sources("east"), lambda _: [_commit("a", 12)], syncs)
    assert [row.downstream_offset for row in read.merge.offsets] == [9]  # silver's (10, 8): + 1
    assert read.gaps == (
        ("east", "its offset syncs beyond the pipeline's could not be read (cannot list the source east's "
         "topics: timed out)"),
    )  # fmt: skip


def test_an_unreadable_syncs_partition_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    gap = UnreadablePartition(SYNCS, 0, "no record and no end of the log for 5s")
    read = _read(monkeypatch, _sources("east"), lambda _: [], lambda _: _tail(unreadable=(gap,)))
    assert read.gaps == (
        ("east", f"offset syncs {SYNCS}-0 not read to its end (no record and no end of the log for 5s)"),
    )


def test_at_location_target_the_syncs_are_read_once_on_the_target_for_every_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[str | None] = []

    def syncs(alias: str | None) -> OffsetSyncTail:
        asked.append(alias)
        return _tail(
            SyncRecord("west", "mm2-offset-syncs.west.internal", 0, 0, OffsetSync("orders", 0, 5, 4))
        )

    read = _read(
        monkeypatch, _sources("east", "west", location="target"), lambda alias: [_commit(alias, 5)], syncs
    )
    assert asked == [None]
    # west's record translates west only; east has silver's (0, 0): position 5 -> 0 + 1
    assert {(row.source_cluster, row.downstream_offset) for row in read.merge.offsets} == {
        ("east", 1),
        ("west", 4),
    }


def test_the_report_says_what_the_sources_added_and_every_gap(monkeypatch: pytest.MonkeyPatch) -> None:
    def snapshot(alias: str) -> list[GroupOffset]:
        if alias == "west":
            raise GroupSnapshotError("timed out")
        return [_commit("a", 12)]

    bad = SyncRecord("east", SYNCS, 0, 3, None, "truncated")
    read = _read(monkeypatch, _sources("east", "west"), snapshot, lambda _: _tail(bad))
    result = ApplyResult(ApplyRequest(dry_run=True), "run", ApplyStatus.OK, "target", "audit", NOW, live=read)

    assert live_lines(result) == [
        "sources read now (east): 1 group-partition(s) committed, 1 translated by offset syncs (0 sync "
        "record(s) beyond the pipeline's), 1 newer than gold (method `offset_sync (tail)`; in offset_history "
        "after the next pipeline update)",
        "sources read now: 1 offset-sync record(s) did not decode: not used",
        "sources read now: west: its groups could not be read now (timed out): planned from gold's snapshot",
    ]
