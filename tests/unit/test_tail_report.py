"""The report of the checkpoint tail: the topics read, a plain word when none matched the policy
while gold holds checkpoint translations, and the partitions that could not be read."""

from __future__ import annotations

from datetime import UTC, datetime

from offsetlake.apply.run import ApplyRequest, ApplyResult, ApplyStatus
from offsetlake.apply.tail_merge import TailMerge
from offsetlake.cli.render import tail_lines
from offsetlake.kafka.checkpoint_tail import UnreadablePartition
from offsetlake.mirror.policy import ReplicationPolicy


def lines(merged: TailMerge) -> list[str]:
    request = ApplyRequest(dry_run=True, checkpoint_tail=ReplicationPolicy(separator="_"))
    result = ApplyResult(
        request, "run", ApplyStatus.OK, "target", "audit", datetime.now(UTC), tail_merge=merged
    )
    return tail_lines(result)


def test_the_topics_read_are_named() -> None:
    (line,) = lines(TailMerge((), 12, 2, (), gold_checkpoints=3, topics=("east_checkpoints_internal",)))
    assert "12 record(s) read from the log start of 1 topic(s) (east_checkpoints_internal)" in line
    assert "2 group-partition(s) newer than gold" in line


def test_no_topic_while_gold_holds_checkpoints_says_so_with_the_policys_name() -> None:
    found = lines(TailMerge((), 0, 0, (), gold_checkpoints=3))
    assert "0 topic(s) (none)" in found[0]
    assert "NO topic named like <alias>_checkpoints_internal while gold holds 3 checkpoint" in found[1]
    assert len(lines(TailMerge((), 0, 0, (), gold_checkpoints=0))) == 1, (
        "no checkpoints in gold: nothing to miss"
    )


def test_an_unreadable_partition_is_listed_with_its_reason() -> None:
    part = UnreadablePartition("east_checkpoints_internal", 0, "no record and no end of the log for 30s")
    found = lines(TailMerge((), 0, 0, (), topics=("east_checkpoints_internal",), unreadable=(part,)))
    assert found[1] == (
        "checkpoint tail: east_checkpoints_internal-0 NOT READ, none of its records used: "
        "no record and no end of the log for 30s"
    )
