"""A group snapshot is bounded by progress, not by its total (issue 50).

The cluster timeout bounds a request: 10,000 groups whose answers each come in time must be read
however long they take together, and a cluster that stops answering must fail the snapshot within
one timeout of its last answer. Time is a stand-in clock moved by a stand-in AdminClient (an answer
costs its time) and by the wait for answers (nothing answered: the time waited passes; a request
librdkafka gives up on fails with _TIMED_OUT at its request timeout).
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection
from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    KafkaError,
    KafkaException,
    TopicPartition,
)

from offsetlake.kafka import admin as kafka_admin
from offsetlake.kafka import group_offsets
from offsetlake.kafka.group_offsets import GroupSnapshotError, snapshot_group_offsets

TIMEOUT_S = 5.0  # offsetlake.cluster.timeout.ms of the failover tests


class StandInCluster:
    """An AdminClient whose requests cost stand-in time: a describe ``describe_s`` a group, a
    listing ``list_s``; after ``answers`` requests it answers no more (each request then fails at
    its request timeout, as librdkafka fails it); an ``error`` answers every describe with it."""

    def __init__(
        self,
        groups: int,
        *,
        describe_s: float = 0.0,
        list_s: float = 0.0,
        answers: int | None = None,
        error: KafkaError | None = None,
    ) -> None:
        self.groups = [f"g{n:05d}" for n in range(groups)]
        self.describe_s, self.list_s = describe_s, list_s
        self.answers_left = answers
        self.error = error
        self.now = 0.0
        self.last_answer_at = 0.0
        self.unanswered: dict[Future[Any], float] = {}  # request's future: when librdkafka gives up

    def list_consumer_groups(self, **_: object) -> Future[Any]:
        return _answered(SimpleNamespace(valid=[SimpleNamespace(group_id=g) for g in self.groups], errors=[]))

    def describe_consumer_groups(
        self, groups: list[str], *, request_timeout: float
    ) -> dict[str, Future[Any]]:
        description = SimpleNamespace(
            state=ConsumerGroupState.STABLE, type=ConsumerGroupType.CLASSIC, members=[]
        )
        futures = self._request(len(groups) * self.describe_s, request_timeout, len(groups), description)
        return dict(zip(groups, futures, strict=True))

    def list_consumer_group_offsets(
        self, requests: list[ConsumerGroupTopicPartitions], *, request_timeout: float
    ) -> dict[str, Future[Any]]:
        answer = SimpleNamespace(topic_partitions=[TopicPartition("orders", 0, 7)])
        (future,) = self._request(self.list_s, request_timeout, 1, answer)
        return {requests[0].group_id: future}

    def _request(self, cost_s: float, timeout_s: float, groups: int, answer: object) -> list[Future[Any]]:
        futures: list[Future[Any]] = [Future() for _ in range(groups)]
        if self.answers_left == 0 or cost_s > timeout_s:
            self.unanswered.update(dict.fromkeys(futures, self.now + timeout_s))
            return futures
        if self.answers_left is not None:
            self.answers_left -= 1
        self.now += cost_s
        self.last_answer_at = self.now
        for future in futures:
            if self.error is None:
                future.set_result(answer)
            else:
                future.set_exception(KafkaException(self.error))
        return futures

    def wait(
        self, futures: Collection[Future[Any]], *, timeout: float, return_when: str
    ) -> tuple[set[Future[Any]], set[Future[Any]]]:
        """concurrent.futures.wait on the stand-in clock: librdkafka fails the requests whose
        timeout comes first, else the time waited passes with no answer."""
        done = {future for future in futures if future.done()}
        if not done:
            given_up = min((self.unanswered[f] for f in futures), default=float("inf"))
            self.now = min(given_up, self.now + timeout)
            for future in futures:
                if self.unanswered[future] <= self.now:
                    future.set_exception(KafkaException(KafkaError(KafkaError._TIMED_OUT)))
                    done.add(future)
        return done, set(futures) - done


@pytest.fixture
def connect(monkeypatch: pytest.MonkeyPatch) -> Any:
    def to(cluster: StandInCluster) -> StandInCluster:
        monkeypatch.setattr(group_offsets.clients, "admin", lambda _config: contextlib.nullcontext(cluster))
        monkeypatch.setattr(kafka_admin, "wait", cluster.wait)
        return cluster

    return to


def _answered(answer: object) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_result(answer)
    return future


def snapshot() -> list[group_offsets.GroupOffset]:
    return snapshot_group_offsets({}, ".*", None, TIMEOUT_S)


def test_many_groups_answered_in_time_are_read_however_long_they_take_together(connect: Any) -> None:
    # 10,000 groups described at 2 ms a group (20 s in one request) and listed at 10 ms a group:
    # every request is answered well within 5 s, the snapshot takes 120 s.
    cluster = connect(StandInCluster(10_000, describe_s=0.002, list_s=0.01))

    rows = snapshot()

    assert [row.consumer_group for row in rows] == cluster.groups
    assert {(row.group_state, row.topic, row.partition, row.committed_offset) for row in rows} == {
        ("STABLE", "orders", 0, 7)
    }
    assert cluster.now > 10 * TIMEOUT_S


@pytest.mark.parametrize("answers", [3, 60])  # while describing, while listing offsets
def test_a_cluster_that_stops_answering_fails_the_snapshot_within_one_timeout(
    connect: Any, answers: int
) -> None:
    cluster = connect(StandInCluster(2_000, describe_s=0.002, list_s=0.01, answers=answers))

    with pytest.raises(GroupSnapshotError, match=r"(?i)timed out"):
        snapshot()

    assert cluster.last_answer_at > 0
    assert cluster.now - cluster.last_answer_at <= TIMEOUT_S


def test_the_error_names_ten_failed_groups_and_counts_the_rest(connect: Any) -> None:
    connect(StandInCluster(25, error=KafkaError(KafkaError.GROUP_AUTHORIZATION_FAILED)))

    with pytest.raises(GroupSnapshotError) as raised:
        snapshot()

    message = str(raised.value)
    assert message.startswith("could not snapshot 25 of 25 groups: g00000: describe failed: ")
    assert message.endswith("; and 15 more")
    assert "\n" not in message
    named = [f"g{n:05d}" for n in range(25) if f"g{n:05d}:" in message]
    assert named == [f"g{n:05d}" for n in range(10)]
