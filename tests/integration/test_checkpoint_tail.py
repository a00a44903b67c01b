"""The checkpoint tail on a real broker: records after gold's high-water mark, decoded, bounded."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

import pytest

from offsetlake.codecs.mm2 import Checkpoint, encode_checkpoint
from offsetlake.kafka.checkpoint_tail import CheckpointTailError, read_checkpoint_tail
from offsetlake.mirror.policy import ReplicationPolicy
from offsetlake_dev.local_cluster import LOOPBACK
from tests.kafka_helpers import create_topic, produce

pytestmark = pytest.mark.kafka


def test_records_after_the_high_water_mark_are_read_decoded_and_a_malformed_one_keeps_its_reason(
    target_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    alias = unique_name("primary")
    topic = f"{alias}.checkpoints.internal"
    create_topic(target_bootstrap, topic)
    checkpoints = [Checkpoint("app", f"{alias}.orders", 0, 10 * n, 10 * n - 1, "") for n in range(1, 4)]
    records = [(*encode_checkpoint(c), 1_700_000_000_000 + n) for n, c in enumerate(checkpoints)]
    offsets = produce(target_bootstrap, topic, [*records, (b"\x00", b"\x00\x00")], one_per_batch=False)

    tail = read_checkpoint_tail(
        {"bootstrap.servers": target_bootstrap}, ReplicationPolicy(), {(topic, 0): offsets[1]}, timeout_s=30
    )

    mine = [record for record in tail.records if record.topic == topic]
    assert topic in tail.topics
    assert [record.offset for record in mine] == offsets[1:]
    assert [record.checkpoint for record in mine[:2]] == checkpoints[1:]
    assert {record.source_cluster for record in mine} == {alias}
    assert mine[0].timestamp.timestamp() == pytest.approx(1_700_000_000.001)
    assert mine[-1].checkpoint is None and mine[-1].error


def test_an_unreachable_target_costs_its_timeout_and_is_one_error() -> None:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(CheckpointTailError, match="cannot list the target's topics"):
        read_checkpoint_tail(
            {"bootstrap.servers": f"{LOOPBACK}:{port}"}, ReplicationPolicy(), {}, timeout_s=2
        )
    assert time.monotonic() - started < 10
