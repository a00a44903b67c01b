"""The checkpoint tail on a real broker: every record from the log start, decoded, found under the
pipeline's replication policy, bounded."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import pytest

from offsetlake.codecs.mm2 import Checkpoint, encode_checkpoint
from offsetlake.kafka import topic_tail
from offsetlake.kafka.checkpoint_tail import CheckpointTailError, read_checkpoint_tail
from offsetlake.mirror.policy import ReplicationPolicy
from offsetlake_dev.local_cluster import LOOPBACK
from tests.kafka_helpers import create_topic, produce

pytestmark = pytest.mark.kafka


def test_every_record_from_the_log_start_is_read_decoded_and_a_malformed_one_keeps_its_reason(
    target_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    """Bronze may hold records gold never saw (a refresh cut short after bronze committed): the tail
    starts at the log start, not at any high-water mark."""
    alias = unique_name("primary")
    topic = f"{alias}.checkpoints.internal"
    create_topic(target_bootstrap, topic)
    checkpoints = [Checkpoint("app", f"{alias}.orders", 0, 10 * n, 10 * n - 1, "") for n in range(1, 4)]
    records = [(*encode_checkpoint(c), 1_700_000_000_000 + n) for n, c in enumerate(checkpoints)]
    offsets = produce(target_bootstrap, topic, [*records, (b"\x00", b"\x00\x00")], one_per_batch=False)

    tail = read_checkpoint_tail({"bootstrap.servers": target_bootstrap}, ReplicationPolicy(), timeout_s=30)

    mine = [record for record in tail.records if record.topic == topic]
    assert topic in tail.topics and tail.unreadable == ()
    assert [record.offset for record in mine] == offsets == [0, 1, 2, 3]
    assert [record.checkpoint for record in mine[:3]] == checkpoints
    assert {record.source_cluster for record in mine} == {alias}
    assert mine[1].timestamp.timestamp() == pytest.approx(1_700_000_000.001)
    assert mine[-1].checkpoint is None and mine[-1].error


def test_a_custom_separator_finds_its_topic_and_the_default_policy_does_not(
    target_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    """MM2 names its internal topics with replication.policy.separator (KIP-690): the pipeline's
    policy must be the tail's, or the tail reads nothing."""
    alias = unique_name("east")
    topic = f"{alias}_checkpoints_internal"
    create_topic(target_bootstrap, topic)
    checkpoint = Checkpoint("app", f"{alias}_orders", 0, 7, 7, "")
    produce(target_bootstrap, topic, [(*encode_checkpoint(checkpoint), 1_700_000_000_000)])
    config = {"bootstrap.servers": target_bootstrap}

    tail = read_checkpoint_tail(config, ReplicationPolicy(separator="_"), timeout_s=30)
    default = read_checkpoint_tail(config, ReplicationPolicy(), timeout_s=30)

    assert topic in tail.topics and topic not in default.topics
    (found,) = [record for record in tail.records if record.topic == topic]
    assert (found.source_cluster, found.offset, found.checkpoint) == (alias, 0, checkpoint)


def test_an_unreachable_target_costs_its_timeout_and_is_one_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """One metadata request, bounded by the tail's timeout, then one error: no partition is read."""
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        port = probe.getsockname()[1]
    asked: list[float] = []
    real_read_metadata = topic_tail.read_metadata

    def counted(admin: Any, *, timeout_s: float) -> Any:
        asked.append(timeout_s)
        return real_read_metadata(admin, timeout_s=timeout_s)

    monkeypatch.setattr(topic_tail, "read_metadata", counted)
    with pytest.raises(CheckpointTailError, match="cannot list the target's topics"):
        read_checkpoint_tail({"bootstrap.servers": f"{LOOPBACK}:{port}"}, ReplicationPolicy(), timeout_s=2)
    assert asked == [2]
