"""No silent fallback: a source whose newest checkpoints the tail could not read is named, with why."""

from __future__ import annotations

from datetime import UTC, datetime

from offsetlake.apply.tail_gaps import unread_sources
from offsetlake.apply.tail_merge import TailMerge
from offsetlake.contract.gold import GoldOffset
from offsetlake.kafka.checkpoint_tail import TailRecord, UnreadablePartition
from offsetlake.mirror.policy import ReplicationPolicy

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
POLICY = ReplicationPolicy()


def merged(**kwargs: object) -> TailMerge:
    fields: dict[str, object] = {"offsets": (), "records": 0, "replaced": 0, "rejected": ()}
    return TailMerge(**(fields | kwargs))  # type: ignore[arg-type]


def checkpoint_row(source: str) -> GoldOffset:
    return GoldOffset(source, "app", f"{source}.orders", 0, 15, NOW, "checkpoint")


def test_a_tail_read_whole_names_no_source() -> None:
    tail = merged(topics=("east.checkpoints.internal",))
    assert unread_sources(tail, POLICY, [checkpoint_row("east")]) == {}


def test_an_unreadable_checkpoints_partition_names_its_source() -> None:
    tail = merged(
        topics=("east.checkpoints.internal", "west.checkpoints.internal"),
        unreadable=(UnreadablePartition("east.checkpoints.internal", 0, "no leader"),),
    )
    reasons = unread_sources(tail, POLICY, [checkpoint_row("east"), checkpoint_row("west")])
    assert reasons == {"east": "checkpoints east.checkpoints.internal-0 not read to its end (no leader)"}


def test_a_record_that_does_not_decode_names_its_source() -> None:
    bad = TailRecord("east", "east.checkpoints.internal", 0, 41, NOW, None, "truncated value")
    tail = merged(topics=("east.checkpoints.internal",), rejected=(bad,))
    assert unread_sources(tail, POLICY, []) == {
        "east": "checkpoint record east.checkpoints.internal-0@41 does not decode (truncated value)"
    }


def test_no_checkpoints_topic_while_gold_holds_checkpoint_rows_names_the_source() -> None:
    offset_sync = GoldOffset("west", "app", "west.orders", 0, 15, NOW, "offset_sync")
    reasons = unread_sources(merged(), POLICY, [checkpoint_row("east"), offset_sync])
    assert reasons == {
        "east": "no checkpoints topic east.checkpoints.internal on the target while gold holds its "
        "checkpoint translations"
    }
