"""The broker fixtures and tests/kafka_helpers.py do what other tests rely on, on both clusters.

Runs against the session's Tansu pair, or a real Kafka pair when OFFSETLAKE_TEST_*_BOOTSTRAP are set.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka import OFFSET_INVALID, ConsumerGroupState, KafkaException

from tests.kafka_helpers import (
    ClustersUnderTest,
    active_consumer,
    alter_group_offsets,
    commit_offsets,
    committed_offsets,
    consume_all,
    create_topic,
    group_state,
    log_end_offset,
    log_start_offset,
    produce,
)

pytestmark = pytest.mark.kafka

SIDES = ("source", "target")


def _bootstrap(clusters: ClustersUnderTest, side: str) -> str:
    return clusters.source_bootstrap if side == "source" else clusters.target_bootstrap


def test_the_two_clusters_are_distinct(
    kafka_clusters: ClustersUnderTest, unique_name: Callable[[str], str]
) -> None:
    topic = unique_name("only-on-source")
    create_topic(kafka_clusters.source_bootstrap, topic)
    produce(kafka_clusters.source_bootstrap, topic, [(b"k", b"v")])

    create_topic(kafka_clusters.target_bootstrap, topic)
    assert consume_all(kafka_clusters.target_bootstrap, topic) == []
    assert log_end_offset(kafka_clusters.target_bootstrap, topic) == 0


@pytest.mark.parametrize("side", SIDES)
def test_produce_consume_and_log_offsets(
    kafka_clusters: ClustersUnderTest, unique_name: Callable[[str], str], side: str
) -> None:
    bootstrap = _bootstrap(kafka_clusters, side)
    topic = unique_name(f"records-{side}")
    create_topic(bootstrap, topic, partitions=2)

    offsets = produce(
        bootstrap,
        topic,
        [
            (b"k0", b"v0", 1_700_000_000_000),
            (None, b"v1", 1_700_000_000_001),
            (b"k2", None, 1_700_000_000_002),
        ],
        partition=1,
    )

    assert offsets == [0, 1, 2]
    records = consume_all(bootstrap, topic, partition=1)
    assert [(r.offset, r.key, r.value, r.timestamp_ms) for r in records] == [
        (0, b"k0", b"v0", 1_700_000_000_000),
        (1, None, b"v1", 1_700_000_000_001),
        (2, b"k2", None, 1_700_000_000_002),
    ]
    assert {(r.topic, r.partition) for r in records} == {(topic, 1)}
    assert (log_start_offset(bootstrap, topic, 1), log_end_offset(bootstrap, topic, 1)) == (0, 3)
    assert (log_start_offset(bootstrap, topic, 0), log_end_offset(bootstrap, topic, 0)) == (0, 0)
    assert consume_all(bootstrap, topic, partition=0) == []


@pytest.mark.parametrize("side", SIDES)
def test_commit_then_alter_group_offsets(
    kafka_clusters: ClustersUnderTest, unique_name: Callable[[str], str], side: str
) -> None:
    bootstrap = _bootstrap(kafka_clusters, side)
    topic = unique_name(f"committed-{side}")
    group = unique_name(f"group-{side}")
    create_topic(bootstrap, topic, partitions=2)
    for partition in (0, 1):
        produce(bootstrap, topic, [(None, b"x")] * 5, partition=partition)
    partitions = [(topic, 0), (topic, 1)]

    commit_offsets(bootstrap, group, {(topic, 0): 4, (topic, 1): 2})
    assert committed_offsets(bootstrap, group, partitions) == {(topic, 0): 4, (topic, 1): 2}

    alter_group_offsets(bootstrap, group, {(topic, 0): 1, (topic, 1): 5})
    assert committed_offsets(bootstrap, group, partitions) == {(topic, 0): 1, (topic, 1): 5}


@pytest.mark.parametrize("side", SIDES)
def test_a_group_with_an_active_member_is_not_empty(
    kafka_clusters: ClustersUnderTest, unique_name: Callable[[str], str], side: str
) -> None:
    bootstrap = _bootstrap(kafka_clusters, side)
    topic = unique_name(f"active-{side}")
    group = unique_name(f"active-group-{side}")
    create_topic(bootstrap, topic)

    with active_consumer(bootstrap, group, topic) as assignment:
        assert assignment == [(topic, 0)]
        # State only: Tansu's DescribeGroups returns no members.
        assert group_state(bootstrap, group) == ConsumerGroupState.STABLE
        # What the failover job meets if it runs before the consumers are stopped.
        with pytest.raises(KafkaException, match="UNKNOWN_MEMBER_ID"):
            alter_group_offsets(bootstrap, group, {(topic, 0): 0})

    # The member's close() has returned (the block joined it): its LeaveGroup was answered.
    assert group_state(bootstrap, group) == ConsumerGroupState.EMPTY


def test_an_unknown_group_has_no_committed_offsets(
    kafka_clusters: ClustersUnderTest, unique_name: Callable[[str], str]
) -> None:
    topic = unique_name("no-group")
    create_topic(kafka_clusters.target_bootstrap, topic)

    offsets = committed_offsets(kafka_clusters.target_bootstrap, unique_name("never-committed"), [(topic, 0)])

    if kafka_clusters.is_tansu:
        assert offsets == {(topic, 0): OFFSET_INVALID}  # Tansu quirk: -1001 rather than an error
    else:
        assert offsets[(topic, 0)] < 0
