"""The simulator against real brokers: what it writes is what MM2 writes, and its ground truth holds.

One scenario (pre-existing target records, transaction markers, filtered records, several commit
intervals) is replicated once per module and checked from several angles, reading back the topics
with plain consumers and resuming a group with a real consumer on the target.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from offsetlake.codecs.mappings import decode_k2k_json_v1
from offsetlake.codecs.mm2 import decode_checkpoint, decode_offset_sync
from offsetlake.k2k.tracing import TracingHeaderNames, traced_origin
from offsetlake.kafka.tracing_reader import TracingRequest, translate_from_tracing_headers
from offsetlake.mirror.translation import sync_pairs, translate
from offsetlake_dev.simulate import MirrorSettings, MirrorSimulator
from offsetlake_dev.simulate.target_consumers import resume_group
from tests.kafka_helpers import alter_group_offsets, consume_all, log_end_offset

pytestmark = pytest.mark.kafka

PARTITIONS = 2
PREEXISTING = 3


@dataclass
class Scenario:
    simulator: MirrorSimulator
    topic: str
    remote: str
    group: str
    excluded_group: str
    committed: dict[tuple[str, int], int]


@pytest.fixture(scope="module")
def scenario(source_bootstrap: str, target_bootstrap: str) -> Iterator[Scenario]:
    # unique_name is per test; this module-scoped scenario names its own topics and groups
    token = uuid.uuid4().hex[:8]
    topic = f"orders-{token}"
    settings = MirrorSettings(
        source_alias=f"src-{token}",
        target_alias=f"tgt-{token}",
        source_bootstrap=source_bootstrap,
        target_bootstrap=target_bootstrap,
        offset_lag_max=10,
        mapping_topic=f"k2k-mappings-{token}",
        mapped_topics=frozenset({topic}),
        mapping_partitions=PARTITIONS,
        traced_topics=frozenset({topic}),
    )
    with MirrorSimulator(settings) as simulator:
        remote = simulator.create_topic(topic, PARTITIONS, preexisting_target_records=PREEXISTING)
        group, excluded_group = f"billing-{token}", f"console-consumer-{token}"
        simulator.produce(topic, 25, transaction_size=4)  # commit markers: upstream gaps
        simulator.replicate()
        simulator.commit()
        committed = {(topic, 0): 9, (topic, 1): 25}
        simulator.commit_source_group(group, committed)
        simulator.commit_source_group(excluded_group, committed)
        simulator.emit_checkpoints([group, excluded_group])
        simulator.produce(topic, 30, filter_every=7)  # filtered records: upstream gaps
        simulator.replicate()
        simulator.commit()
        simulator.emit_checkpoints([group, excluded_group])  # no new checkpoint: nothing moved
        yield Scenario(simulator, topic, remote, group, excluded_group, committed)


def test_every_source_record_landed_once_in_order_after_the_preexisting_ones(
    scenario: Scenario, target_bootstrap: str
) -> None:
    truth = scenario.simulator.ground_truth
    assert len(truth) == PARTITIONS * (25 + 30 - 4)
    for partition in range(PARTITIONS):
        on_target = consume_all(target_bootstrap, scenario.remote, partition)
        assert log_end_offset(target_bootstrap, scenario.remote, partition) == len(on_target)
        replicated = truth.records(scenario.topic, partition)
        assert [record.value.decode() for record in on_target[PREEXISTING:]] == [
            r.record_id for r in replicated
        ]
        assert [record.offset for record in on_target[PREEXISTING:]] == [r.target_offset for r in replicated]
        source_offsets = [r.source_offset for r in replicated]
        # 7 commit markers (25 records, 4 per transaction), then 4 filtered records (sequences 27, 34, 41, 48)
        assert source_offsets[-1] - (replicated[-1].target_offset - PREEXISTING) == 7 + 4


def test_offset_syncs_on_the_source_follow_mm2s_rules(scenario: Scenario, source_bootstrap: str) -> None:
    settings = scenario.simulator.settings
    written = [
        decode_offset_sync(record.key, record.value)
        for record in consume_all(source_bootstrap, settings.offset_syncs_topic)
    ]
    assert written == scenario.simulator.offset_syncs
    truth = scenario.simulator.ground_truth
    for partition in range(PARTITIONS):
        syncs = [sync for sync in written if sync.partition == partition]
        assert all(sync.topic == scenario.topic for sync in syncs)  # the upstream name
        replicated = truth.records(scenario.topic, partition)
        first, last = replicated[0], replicated[-1]
        assert (syncs[0].upstream_offset, syncs[0].downstream_offset) == (
            first.source_offset,
            first.target_offset,
        )
        assert (syncs[-1].upstream_offset, syncs[-1].downstream_offset) == (
            last.source_offset,
            last.target_offset,
        )
        synced = {(sync.upstream_offset, sync.downstream_offset) for sync in syncs}
        for previous, record in itertools.pairwise(replicated):
            if record.source_offset - previous.source_offset != 1:  # every upstream gap is synced
                assert (record.source_offset, record.target_offset) in synced
        for record in replicated:  # and no translation lags by offset.lag.max or more
            translated = translate(sync_pairs(syncs), record.source_offset)
            assert translated is not None
            assert 0 <= record.target_offset - translated < settings.offset_lag_max


def test_checkpoints_on_the_target_translate_the_groups_position_once(
    scenario: Scenario, target_bootstrap: str
) -> None:
    settings = scenario.simulator.settings
    written = [
        decode_checkpoint(record.key, record.value)
        for record in consume_all(target_bootstrap, settings.checkpoints_topic)
    ]
    assert written == scenario.simulator.checkpoints
    assert {checkpoint.group for checkpoint in written} == {scenario.group}  # console-consumer-* excluded
    assert sorted((c.topic, c.partition, c.upstream_offset) for c in written) == [
        (scenario.remote, 0, 9),
        (scenario.remote, 1, 25),
    ]
    truth = scenario.simulator.ground_truth
    for checkpoint in written:
        owed = truth.first_unprocessed(scenario.topic, checkpoint.partition, checkpoint.upstream_offset)
        assert owed is not None
        assert checkpoint.downstream_offset <= owed.target_offset


def test_k2k_mappings_match_the_ground_truth(scenario: Scenario, target_bootstrap: str) -> None:
    settings = scenario.simulator.settings
    by_partition = [consume_all(target_bootstrap, settings.mapping_topic, p) for p in range(PARTITIONS)]
    assert all(by_partition), "mappings are spread over the mapping topic's partitions"
    mappings = [decode_k2k_json_v1(r.key, r.value, r.headers) for records in by_partition for r in records]
    truth = scenario.simulator.ground_truth
    expected = [
        (
            r.source_topic,
            r.source_partition,
            r.source_offset,
            r.target_topic,
            r.target_partition,
            r.target_offset,
        )
        for partition in range(PARTITIONS)
        for r in truth.records(scenario.topic, partition)
    ]
    assert sorted(
        (
            m.source_topic,
            m.source_partition,
            m.source_offset,
            m.target_topic,
            m.target_partition,
            m.target_offset,
        )
        for m in mappings
    ) == sorted(expected)


def test_a_consumer_resumed_at_the_checkpoint_never_skips_and_one_past_it_does(
    scenario: Scenario, target_bootstrap: str
) -> None:
    truth = scenario.simulator.ground_truth
    positions = {(c.topic, c.partition): c.downstream_offset for c in scenario.simulator.checkpoints}
    alter_group_offsets(target_bootstrap, scenario.group, positions)
    resumed = resume_group(target_bootstrap, scenario.group, [scenario.remote])
    assert set(resumed) == set(positions)
    for (topic, partition), read in resumed.items():
        assert read.committed_offset == positions[(topic, partition)]
        assessment = truth.assess_resume(
            scenario.topic,
            partition,
            scenario.committed[(scenario.topic, partition)],
            positions[(topic, partition)],
            read.values,
        )
        assert assessment.ok, assessment.skipped
    # the same check catches a position that skips the first owed record
    owed = truth.first_unprocessed(scenario.topic, 0, scenario.committed[(scenario.topic, 0)])
    assert owed is not None
    too_far = [r.record_id for r in truth.records(scenario.topic, 0) if r.target_offset > owed.target_offset]
    assessment = truth.assess_resume(
        scenario.topic, 0, scenario.committed[(scenario.topic, 0)], owed.target_offset + 1, too_far
    )
    assert assessment.skipped == (owed.record_id,)


def test_replicated_records_carry_k2ks_tracing_headers_and_preexisting_ones_none(
    scenario: Scenario, target_bootstrap: str
) -> None:
    truth = scenario.simulator.ground_truth
    names = TracingHeaderNames()
    for partition in range(PARTITIONS):
        on_target = consume_all(target_bootstrap, scenario.remote, partition)
        assert [traced_origin(record.headers, names) for record in on_target[:PREEXISTING]] == [
            None
        ] * PREEXISTING
        by_offset = {record.offset: record for record in on_target}
        for replicated in truth.records(scenario.topic, partition):
            headers = by_offset[replicated.target_offset].headers
            assert traced_origin(headers, names) == (scenario.topic, partition, replicated.source_offset)
            assert ("k2k_pipeline", b"offsetlake-simulator") in headers


def test_the_tracing_headers_method_never_skips_and_re_reads_no_more_than_offset_syncs(
    scenario: Scenario, target_bootstrap: str
) -> None:
    """Every committed position over the scenario's gaps (transaction markers, filtered records) and
    pre-existing target data, judged against the ground truth."""
    simulator, truth = scenario.simulator, scenario.simulator.ground_truth
    requests = [
        TracingRequest(scenario.remote, partition, scenario.topic, partition, upstream)
        for partition in range(PARTITIONS)
        for upstream in range(truth.records(scenario.topic, partition)[-1].source_offset + 3)
    ]
    results = translate_from_tracing_headers(
        {"bootstrap.servers": target_bootstrap}, requests, TracingHeaderNames()
    )
    assert len(results) == len(requests)
    for result in results:
        request, translated = result.request, result.translation.downstream_offset
        replicated = truth.records(scenario.topic, request.source_partition)
        syncs = [sync for sync in simulator.offset_syncs if sync.partition == request.source_partition]
        by_syncs = translate(sync_pairs(syncs), request.upstream_offset)
        if request.upstream_offset < replicated[0].source_offset:
            assert translated is None and result.translation.reason, result
            continue
        assert translated is not None, result
        owed = truth.first_unprocessed(scenario.topic, request.source_partition, request.upstream_offset)
        assert translated <= (owed.target_offset if owed else replicated[-1].target_offset + 1), "never skips"
        assert by_syncs is not None and translated >= by_syncs, "no more re-reads than offset syncs"
        if owed is not None and owed.source_offset == request.upstream_offset:
            assert translated == owed.target_offset and result.translation.exact


def test_many_groups_committed_and_checkpointed_in_batches_read_back_to_the_log_end(
    source_bootstrap: str, target_bootstrap: str
) -> None:
    """The batched paths benchmarks build 10,000 groups with: every group's commit lands, and every
    checkpoint of the poll is read back to the log end (Tansu's log end is right only when the last
    batch holds one record)."""
    token = uuid.uuid4().hex[:8]
    topic = f"wide-{token}"
    settings = MirrorSettings(
        source_alias=f"src-{token}",
        target_alias=f"tgt-{token}",
        source_bootstrap=source_bootstrap,
        target_bootstrap=target_bootstrap,
    )
    groups = [f"app-{token}-{n}" for n in range(40)]
    with MirrorSimulator(settings) as simulator:
        simulator.create_topic(topic, PARTITIONS)
        simulator.produce(topic, 10)
        simulator.replicate()
        simulator.commit()
        positions = {
            group: {(topic, p): 1 + (index + p) % 9 for p in range(PARTITIONS)}
            for index, group in enumerate(groups)
        }
        simulator.commit_source_groups(positions, in_flight=8)
        emitted = simulator.emit_checkpoints(groups)
    written = [
        decode_checkpoint(record.key, record.value)
        for record in consume_all(target_bootstrap, settings.checkpoints_topic)
    ]
    assert written == emitted
    assert {(c.group, c.partition): c.upstream_offset for c in written} == {
        (group, p): offset for group, offsets in positions.items() for (_, p), offset in offsets.items()
    }
