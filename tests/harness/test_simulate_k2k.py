"""The simulator's K2K side against real brokers: tracing headers, spread and duplicated mappings.

One module-scoped scenario: ``orders`` is traced and mapped (pre-existing target records,
transaction markers, filtered records), ``payments`` is mapped but not traced and has more
partitions than the mapping topic, and every mapping is also written as a second routing. What
lands on the target is read back with plain consumers and judged against the ground truth.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from offsetlake.codecs.mappings import OffsetMapping, decode_k2k_json_v1
from offsetlake_dev.simulate import (
    TRACING_HEADERS,
    MirrorSettings,
    MirrorSimulator,
    ReplicationReport,
    SimulationError,
)
from tests.kafka_helpers import consume_all, create_topic

pytestmark = pytest.mark.kafka

ORDERS_PARTITIONS = 2
PAYMENTS_PARTITIONS = 3
MAPPING_PARTITIONS = 2
PREEXISTING = 3
PIPELINE = "east-to-west"


@dataclass
class Scenario:
    simulator: MirrorSimulator
    orders: str
    payments: str
    reports: list[ReplicationReport]


@pytest.fixture(scope="module")
def scenario(source_bootstrap: str, target_bootstrap: str) -> Iterator[Scenario]:
    token = uuid.uuid4().hex[:8]
    orders, payments = f"orders-{token}", f"payments-{token}"
    settings = MirrorSettings(
        source_alias=f"src-{token}",
        target_alias=f"tgt-{token}",
        source_bootstrap=source_bootstrap,
        target_bootstrap=target_bootstrap,
        mapping_topic=f"k2k-mappings-{token}",
        mapped_topics=frozenset({orders, payments}),
        mapping_partitions=MAPPING_PARTITIONS,
        duplicate_mapping_topic=f"copy-{token}",
        traced_topics=frozenset({orders}),
        k2k_pipeline=PIPELINE,
    )
    with MirrorSimulator(settings) as simulator:
        simulator.create_topic(orders, ORDERS_PARTITIONS, preexisting_target_records=PREEXISTING)
        simulator.create_topic(payments, PAYMENTS_PARTITIONS, preexisting_target_records=PREEXISTING)
        simulator.produce(orders, 10, transaction_size=4)  # commit markers: upstream gaps
        simulator.produce(payments, 6)
        reports = [simulator.replicate()]
        simulator.produce(orders, 12, filter_every=5)  # filtered records: not replicated at all
        simulator.produce(payments, 4, filter_every=3)
        reports.append(simulator.replicate())
        yield Scenario(simulator, orders, payments, reports)


def _tracing(headers: tuple[tuple[str, bytes | None], ...]) -> list[tuple[str, bytes | None]]:
    return [(name, value) for name, value in headers if name in TRACING_HEADERS]


def test_traced_records_carry_their_source_position_and_preexisting_ones_nothing(
    scenario: Scenario, target_bootstrap: str
) -> None:
    settings, truth = scenario.simulator.settings, scenario.simulator.ground_truth
    remote = settings.remote_topic(scenario.orders)
    for partition in range(ORDERS_PARTITIONS):
        on_target = consume_all(target_bootstrap, remote, partition)
        assert [record.headers for record in on_target[:PREEXISTING]] == [()] * PREEXISTING
        replicated = truth.records(scenario.orders, partition)
        assert [record.offset for record in on_target[PREEXISTING:]] == [r.target_offset for r in replicated]
        for record, origin in zip(on_target[PREEXISTING:], replicated, strict=True):
            # The source records carry no headers of their own, so these are all of them.
            assert list(record.headers) == [
                ("k2k_topic", scenario.orders.encode()),
                ("k2k_partition", str(partition).encode()),
                ("k2k_offset", str(origin.source_offset).encode()),
                ("k2k_pipeline", PIPELINE.encode()),
            ]


def test_untraced_topics_carry_no_tracing_headers(scenario: Scenario, target_bootstrap: str) -> None:
    remote = scenario.simulator.settings.remote_topic(scenario.payments)
    for partition in range(PAYMENTS_PARTITIONS):
        on_target = consume_all(target_bootstrap, remote, partition)
        assert len(on_target) == PREEXISTING + len(
            scenario.simulator.ground_truth.records(scenario.payments, partition)
        )
        assert all(not _tracing(record.headers) for record in on_target)


def test_mappings_are_spread_over_partitions_and_each_record_has_two_routings(
    scenario: Scenario, target_bootstrap: str
) -> None:
    settings, truth = scenario.simulator.settings, scenario.simulator.ground_truth
    assert settings.duplicate_mapping_topic is not None
    by_partition = {
        partition: [
            decode_k2k_json_v1(r.key, r.value, r.headers)
            for r in consume_all(target_bootstrap, settings.mapping_topic, partition)
        ]
        for partition in range(MAPPING_PARTITIONS)
    }
    expected: list[OffsetMapping] = []
    for topic, partitions in ((scenario.orders, ORDERS_PARTITIONS), (scenario.payments, PAYMENTS_PARTITIONS)):
        for source_partition in range(partitions):
            for r in truth.records(topic, source_partition):
                mapping = OffsetMapping(
                    topic,
                    source_partition,
                    r.source_offset,
                    r.target_topic,
                    r.target_partition,
                    r.target_offset,
                )
                expected.append(mapping)
                expected.append(
                    OffsetMapping(
                        topic,
                        source_partition,
                        r.source_offset,
                        settings.duplicate_mapping_topic,
                        r.target_partition,
                        r.target_offset,
                    )
                )
    written = [mapping for mappings in by_partition.values() for mapping in mappings]
    assert Counter(written) == Counter(expected)  # two routings per replicated record, no other
    assert sum(report.mappings for report in scenario.reports) == len(expected) == 2 * len(truth)
    for partition, mappings in by_partition.items():
        assert mappings, f"mapping partition {partition} holds mappings"
        assert {m.source_partition % MAPPING_PARTITIONS for m in mappings} == {partition}
        # Mapping partition 0 interleaves source partitions 0 and 2; each keeps its own order.
        for source in {(m.source_topic, m.source_partition) for m in mappings}:
            offsets = [m.source_offset for m in mappings if (m.source_topic, m.source_partition) == source]
            assert offsets == sorted(offsets)
    assert {m.source_partition for m in by_partition[0] if m.source_topic == scenario.payments} == {0, 2}


def test_a_preexisting_mapping_topic_with_too_few_partitions_is_refused(
    source_bootstrap: str, target_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    mapping_topic = unique_name("k2k-mappings")
    create_topic(target_bootstrap, mapping_topic, partitions=1)
    settings = MirrorSettings(
        source_alias=unique_name("src"),
        target_alias=unique_name("tgt"),
        source_bootstrap=source_bootstrap,
        target_bootstrap=target_bootstrap,
        mapping_topic=mapping_topic,
        mapped_topics=frozenset({"orders"}),
        mapping_partitions=6,
    )
    with pytest.raises(SimulationError, match="fewer than mapping_partitions=6"):
        MirrorSimulator(settings)


def test_mapping_partitions_must_be_positive() -> None:
    with pytest.raises(ValueError, match="mapping_partitions"):
        MirrorSettings("src", "tgt", "unused:1", "unused:2", mapping_partitions=0)
