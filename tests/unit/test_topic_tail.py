"""read_whole_topics' own rules on a scripted cluster: only the topics the pattern matches are read; a
topic or partition whose metadata failed, and a partition that failed mid-read, are reported with
their reason and none of their records kept; the rest is delivered decoded, each partition in
offset order; a cluster that cannot list its topics is the caller's error naming its role."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, Message, TopicPartition

from offsetlake.kafka import topic_tail
from offsetlake.kafka.topic_tail import TopicTailError, UnreadablePartition, read_whole_topics

PATTERN = re.compile(r"^(.+)\.checkpoints\.internal$")


@dataclass
class _Consumer:
    """Answers each consume() with the next scripted batch, then nothing."""

    script: list[list[Message]]
    assigned: list[tuple[str, int]] = field(default_factory=list)

    def assign(self, partitions: Sequence[TopicPartition]) -> None:
        self.assigned = [(p.topic, p.partition) for p in partitions]

    def incremental_unassign(self, partitions: Sequence[TopicPartition]) -> None:
        pass

    def consume(self, num_messages: int, timeout: float) -> list[Message]:
        return self.script.pop(0) if self.script else []


def _topic(error: int | None = None, partitions: dict[int, int | None] | None = None) -> SimpleNamespace:
    return SimpleNamespace(
        error=KafkaError(error) if error is not None else None,
        partitions={
            number: SimpleNamespace(error=KafkaError(code) if code is not None else None)
            for number, code in (partitions or {}).items()
        },
    )


def _record(topic: str, partition: int, offset: int) -> Message:
    return Message(topic=topic, partition=partition, offset=offset, key=b"k", value=b"v")


def _error(topic: str, partition: int, offset: int, code: int) -> Message:
    return Message(topic=topic, partition=partition, offset=offset, error=KafkaError(code, f"error {code}"))


def _cluster(monkeypatch: pytest.MonkeyPatch, metadata: Any, consumer: _Consumer) -> None:
    @contextmanager
    def admin(config: object) -> Iterator[None]:
        yield None

    @contextmanager
    def reader(config: object) -> Iterator[_Consumer]:
        yield consumer

    def read_metadata(admin: object, *, timeout_s: float) -> Any:
        if isinstance(metadata, Exception):
            raise metadata
        return metadata

    monkeypatch.setattr(topic_tail, "clients", SimpleNamespace(admin=admin, consumer=reader))
    monkeypatch.setattr(topic_tail, "read_metadata", read_metadata)


def test_unreadable_partitions_keep_no_record_and_the_rest_is_read_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a, b, c = (f"{alias}.checkpoints.internal" for alias in "abc")
    metadata = SimpleNamespace(
        topics={
            a: _topic(partitions={0: None, 1: KafkaError.NO_ERROR}),
            b: _topic(error=KafkaError.LEADER_NOT_AVAILABLE),
            c: _topic(partitions={0: KafkaError.NOT_LEADER_FOR_PARTITION, 1: None}),
            "orders": _topic(partitions={0: None}),
        }
    )
    consumer = _Consumer(
        [
            [_record(a, 0, 0), _record(a, 1, 0), _record(c, 1, 0), _record(a, 0, 1)],
            [
                _error(c, 1, -1001, KafkaError.TOPIC_AUTHORIZATION_FAILED),
                _error(a, 1, 1, KafkaError._PARTITION_EOF),
                _record(a, 0, 2),
                _error(a, 0, 3, KafkaError._PARTITION_EOF),
            ],
        ]
    )
    _cluster(monkeypatch, metadata, consumer)

    read = read_whole_topics(
        {}, PATTERN, timeout_s=5, decode=lambda m: (m.topic(), m.partition(), m.offset()), role="target"
    )

    assert consumer.assigned == [(a, 0), (a, 1), (c, 1)]
    assert read.topics == (a, b, c)
    assert read.records == ((a, 0, 0), (a, 1, 0), (a, 0, 1), (a, 0, 2))
    assert read.unreadable == (
        UnreadablePartition(b, -1, f"metadata: {KafkaError(KafkaError.LEADER_NOT_AVAILABLE).str()}"),
        UnreadablePartition(c, 0, f"metadata: {KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION).str()}"),
        UnreadablePartition(c, 1, f"error {KafkaError.TOPIC_AUTHORIZATION_FAILED}"),
    )


def test_no_matching_topic_reads_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    consumer = _Consumer([])
    _cluster(monkeypatch, SimpleNamespace(topics={"orders": _topic(partitions={0: None})}), consumer)

    read = read_whole_topics({}, PATTERN, timeout_s=5, decode=lambda m: m, role="target")

    assert (read.records, read.topics, read.unreadable, consumer.assigned) == ((), (), (), [])


def test_a_cluster_that_cannot_list_its_topics_raises_the_callers_error_naming_its_role(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class SyncsError(TopicTailError):
        pass

    _cluster(monkeypatch, RuntimeError("no broker answered"), _Consumer([]))

    with pytest.raises(SyncsError, match=r"^cannot list the source east's topics: no broker answered$"):
        read_whole_topics({}, PATTERN, timeout_s=5, decode=lambda m: m, role="source east", error=SyncsError)
