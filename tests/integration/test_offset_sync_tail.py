"""The offset-sync tail on real brokers: MM2's offset-syncs topics read whole at either location,
each record's source cluster the one bronze_offset_syncs lands, a malformed record counted with its
reason, every partition in Kafka order, an unreachable cluster one error naming its role."""

from __future__ import annotations

import socket
from collections.abc import Callable

import pytest

from offsetlake.codecs.mm2 import OffsetSync, decode_offset_sync, encode_offset_sync
from offsetlake.kafka.offset_sync_tail import OffsetSyncTailError, SyncRecord, read_offset_sync_tail
from offsetlake.mirror.policy import ReplicationPolicy
from offsetlake_dev.local_cluster import LOOPBACK
from offsetlake_dev.simulate import MirrorSettings, MirrorSimulator
from tests.kafka_helpers import create_topic, produce

pytestmark = pytest.mark.kafka

POLICY = ReplicationPolicy()


def _on(records: tuple[SyncRecord, ...], topic: str) -> list[SyncRecord]:
    return [record for record in records if record.topic == topic]


def _write_syncs(bootstrap: str, topic: str, syncs: list[OffsetSync], partition: int = 0) -> list[int]:
    return produce(
        bootstrap, topic, [encode_offset_sync(sync) for sync in syncs], partition, one_per_batch=False
    )


def _decode_error(key: bytes, value: bytes | None) -> str:
    with pytest.raises(ValueError) as raised:
        decode_offset_sync(key, value)
    return str(raised.value)


def test_location_source_with_the_target_alias_reads_that_flows_topic_only(
    source_bootstrap: str, target_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    """The syncs MM2 writes on the source for one target; another flow's topic there is not read."""
    settings = MirrorSettings(unique_name("src"), unique_name("tgt"), source_bootstrap, target_bootstrap)
    orders = unique_name("orders")
    with MirrorSimulator(settings) as simulator:
        simulator.create_topic(orders, 2)
        simulator.produce(orders, 3)
        written = simulator.replicate().offset_syncs
    other_flow = POLICY.offset_syncs_topic(unique_name("other"))
    create_topic(source_bootstrap, other_flow)
    _write_syncs(source_bootstrap, other_flow, [OffsetSync(orders, 0, 0, 0)])

    tail = read_offset_sync_tail(
        {"bootstrap.servers": source_bootstrap},
        POLICY,
        timeout_s=30,
        source_alias=settings.source_alias,
        target_alias=settings.target_alias,
    )

    assert tail.topics == (settings.offset_syncs_topic,) and tail.unreadable == ()
    assert written and [record.sync for record in tail.records] == list(written)
    assert [record.offset for record in tail.records] == list(range(len(written)))
    assert {(record.source_cluster, record.partition, record.error) for record in tail.records} == {
        (settings.source_alias, 0, None)
    }


def _decode_error(key: bytes, value: bytes | None) -> str:
    with pytest.raises(ValueError) as raised:
        decode_offset_sync(key, value)
    return str(raised.value)


def test_location_source_without_a_target_alias_reads_every_syncs_topic_as_that_source(
    source_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    """bronze_offset_syncs subscribes by pattern when offsetlake.target.alias is unset: every
    record is the source's, whichever target its topic names."""
    source_alias = unique_name("src")
    topics = [POLICY.offset_syncs_topic(unique_name(target)) for target in ("west", "north")]
    for n, topic in enumerate(topics):
        create_topic(source_bootstrap, topic)
        _write_syncs(
            source_bootstrap, topic, [OffsetSync(f"orders{n}", 0, 5, 7), OffsetSync(f"orders{n}", 0, 9, 11)]
        )

    tail = read_offset_sync_tail(
        {"bootstrap.servers": source_bootstrap},
        POLICY,
        timeout_s=30,
        source_alias=source_alias,
        target_alias="",
    )

    assert set(topics) <= set(tail.topics)
    for n, topic in enumerate(topics):
        mine = _on(tail.records, topic)
        assert [(record.offset, record.sync) for record in mine] == [
            (0, OffsetSync(f"orders{n}", 0, 5, 7)),
            (1, OffsetSync(f"orders{n}", 0, 9, 11)),
        ]
        assert {record.source_cluster for record in mine} == {source_alias}


def test_location_target_takes_each_records_source_from_its_topic_name(
    target_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    """At location target the topic name is the only place the source alias is: the pattern's
    group 1, greedy as Spark's regexp_extract in bronze, so an alias holding the separator stays whole."""
    east, dotted = unique_name("east"), f"{unique_name('west')}.dc1"
    topics = {alias: POLICY.offset_syncs_topic(alias) for alias in (east, dotted)}
    for alias, topic in topics.items():
        create_topic(target_bootstrap, topic)
        _write_syncs(target_bootstrap, topic, [OffsetSync(f"{alias}-orders", 1, 3, 4)])

    tail = read_offset_sync_tail(
        {"bootstrap.servers": target_bootstrap},
        POLICY,
        timeout_s=30,
        source_alias=None,
        target_alias="primary",
    )

    assert set(topics.values()) <= set(tail.topics)
    for alias, topic in topics.items():
        (record,) = _on(tail.records, topic)
        assert (record.source_cluster, record.sync) == (alias, OffsetSync(f"{alias}-orders", 1, 3, 4))


def test_a_malformed_record_is_counted_with_its_reason_and_not_decoded(
    source_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    source_alias, target_alias = unique_name("src"), unique_name("tgt")
    topic = POLICY.offset_syncs_topic(target_alias)
    create_topic(source_bootstrap, topic)
    good = OffsetSync("orders", 0, 1, 2)
    key, value = encode_offset_sync(good)
    malformed = [(b"\x00", b"\x00\x00"), (key, None)]  # a truncated key; a tombstone
    produce(source_bootstrap, topic, [(key, value), *malformed], one_per_batch=False)
    reasons = [_decode_error(*record) for record in malformed]

    tail = read_offset_sync_tail(
        {"bootstrap.servers": source_bootstrap},
        POLICY,
        timeout_s=30,
        source_alias=source_alias,
        target_alias=target_alias,
    )

    assert [(record.offset, record.sync, record.error) for record in tail.records] == [
        (0, good, None),
        (1, None, reasons[0]),
        (2, None, reasons[1]),
    ]


def test_every_partition_is_read_whole_in_kafka_order(
    source_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    """MM2 writes every sync to partition 0, but a syncs topic created by hand may have more: each
    partition is read from its log start to its end, its records in offset order."""
    source_alias, target_alias = unique_name("src"), unique_name("tgt")
    topic = POLICY.offset_syncs_topic(target_alias)
    create_topic(source_bootstrap, topic, partitions=3)
    written = {
        partition: [OffsetSync("orders", partition, 10 * n, 10 * n + partition) for n in range(25)]
        for partition in range(3)
    }
    for partition, syncs in written.items():
        _write_syncs(source_bootstrap, topic, syncs, partition)

    tail = read_offset_sync_tail(
        {"bootstrap.servers": source_bootstrap},
        POLICY,
        timeout_s=30,
        source_alias=source_alias,
        target_alias=target_alias,
    )

    assert tail.unreadable == () and len(tail.records) == 75
    for partition, syncs in written.items():
        mine = [record for record in tail.records if record.partition == partition]
        assert [(record.offset, record.sync) for record in mine] == list(enumerate(syncs))


def test_a_cluster_that_cannot_list_its_topics_is_one_error_naming_its_role() -> None:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        port = probe.getsockname()[1]
    config = {"bootstrap.servers": f"{LOOPBACK}:{port}"}

    with pytest.raises(OffsetSyncTailError, match="cannot list the source east's topics"):
        read_offset_sync_tail(config, POLICY, timeout_s=2, source_alias="east", target_alias="west")
    with pytest.raises(OffsetSyncTailError, match="cannot list the target's topics"):
        read_offset_sync_tail(config, POLICY, timeout_s=2, source_alias=None, target_alias="west")
