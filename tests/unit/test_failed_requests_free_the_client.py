"""A failed request to the target must not keep the client alive.

The executor drops a client whose request went unanswered so that no late answer reaches it
(librdkafka issue #4605 aborts the process). An error raised straight from the dict that holds it
ties the dict, the error's traceback and the raising frame (which holds the client) in a reference
cycle, as does an error a request's future holds, raised from it in a frame that holds the
client; the client then lives until the garbage collector runs: after a paused target came back, the
process aborted (benchmarks/README.md, issue 50). Checked with the collector off, by a weak
reference to a stand-in client.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterable, Iterator
from concurrent.futures import Future

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException

from offsetlake.apply.target_state import read_groups
from offsetlake.kafka import admin as kafka_admin
from offsetlake.kafka.admin import ClusterUnresponsiveError, KafkaAdminError
from offsetlake.mirror.positions import CommittedOffset


class StandInClient:
    """What read_groups passes to describe_groups; only its lifetime matters here."""


def unanswered(
    admin: StandInClient, groups: Iterable[str], *, timeout_s: float
) -> tuple[dict[str, kafka_admin.GroupDescription], dict[str, KafkaAdminError]]:
    return {}, {
        group: ClusterUnresponsiveError(f"cannot describe group {group}: timed out") for group in groups
    }


@pytest.fixture
def collector_off() -> Iterator[None]:
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.mark.usefixtures("collector_off")
def test_a_describe_that_went_unanswered_is_raised_without_keeping_the_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(kafka_admin, "describe_groups", unanswered)
    client = StandInClient()
    alive = weakref.ref(client)
    with pytest.raises(ClusterUnresponsiveError, match="cannot describe group a: timed out"):
        read_groups(client, ["b", "a"], timeout_s=1.0)  # type: ignore[arg-type]
    del client
    assert alive() is None  # freed by reference counting: nothing but the caller held it


class AnsweringWithAnError:
    """A stand-in AdminClient whose group requests are answered with ``error`` (librdkafka sets it
    on the request's future, which holds it)."""

    def __init__(self, error: KafkaException) -> None:
        self.error = error

    def _answered(self, requests: list[ConsumerGroupTopicPartitions]) -> dict[str, Future[object]]:
        answers: dict[str, Future[object]] = {}
        for request in requests:
            future: Future[object] = Future()
            future.set_exception(self.error)
            answers[request.group_id] = future
        return answers

    def list_consumer_group_offsets(
        self, requests: list[ConsumerGroupTopicPartitions], **_: object
    ) -> dict[str, Future[object]]:
        return self._answered(requests)

    def alter_consumer_group_offsets(
        self, requests: list[ConsumerGroupTopicPartitions], **_: object
    ) -> dict[str, Future[object]]:
        return self._answered(requests)


@pytest.mark.usefixtures("collector_off")
@pytest.mark.parametrize("request_kind", ["read-back", "alter"])
def test_a_request_answered_with_an_error_is_raised_without_keeping_the_client(request_kind: str) -> None:
    client = AnsweringWithAnError(KafkaException(KafkaError(KafkaError._TIMED_OUT)))
    alive = weakref.ref(client)
    with pytest.raises(ClusterUnresponsiveError):
        if request_kind == "read-back":
            kafka_admin.list_committed_offsets(client, "app", [("orders", 0)], timeout_s=1.0)  # type: ignore[arg-type]
        else:
            offsets = {("orders", 0): CommittedOffset(4)}
            kafka_admin.alter_committed_offsets(client, "app", offsets, timeout_s=1.0)  # type: ignore[arg-type]
    del client
    assert alive() is None
