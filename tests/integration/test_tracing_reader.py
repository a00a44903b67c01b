"""K2K tracing-header searches on a real target: reasons, not errors; bounded time; one per position;
the positions of one partition searched together, partitions by a pool."""

from __future__ import annotations

import socket
from collections.abc import Callable, Sequence

import pytest

from offsetlake.k2k.tracing import TracingHeaderNames
from offsetlake.kafka import tracing_reader
from offsetlake.kafka.tracing_reader import (
    SearchLimits,
    TracingRequest,
    TracingResult,
    translate_from_tracing_headers,
)
from offsetlake_dev.local_cluster import LOOPBACK
from tests.kafka_helpers import Traced, create_topic, produce_traced

pytestmark = pytest.mark.kafka
NAMES = TracingHeaderNames()


def test_a_missing_topic_or_partition_is_a_reason_and_shared_positions_are_searched_once(
    target_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    topic = unique_name("east.orders")
    create_topic(target_bootstrap, topic)
    offsets = produce_traced(target_bootstrap, topic, [("orders", 0, n) for n in range(10)])
    shared = TracingRequest(topic, 0, "orders", 0, 4)
    requests = [
        shared,
        shared,  # another group at the same position
        TracingRequest(topic, 3, "orders", 3, 4),
        TracingRequest(unique_name("absent"), 0, "orders", 0, 4),
    ]
    results = translate_from_tracing_headers({"bootstrap.servers": target_bootstrap}, requests, NAMES)
    assert len(results) == 3, "one search per distinct position"
    by_request = {result.request: result.translation for result in results}
    assert by_request[shared].downstream_offset == offsets[4] and by_request[shared].exact
    assert "has no partition 3" in (by_request[requests[2]].reason or "")
    assert "does not exist" in (by_request[requests[3]].reason or "")


def test_a_spent_budget_leaves_the_requests_left_unsearched_with_the_reason(
    target_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    topic = unique_name("east.orders")
    create_topic(target_bootstrap, topic)
    produce_traced(target_bootstrap, topic, [("orders", 0, n) for n in range(5)])
    requests = [TracingRequest(topic, 0, "orders", 0, upstream) for upstream in range(5)]
    searched = translate_from_tracing_headers(
        {"bootstrap.servers": target_bootstrap}, requests, NAMES, SearchLimits(budget_s=3600)
    )
    assert all(result.translation.downstream_offset is not None for result in searched)
    spent = translate_from_tracing_headers(
        {"bootstrap.servers": target_bootstrap}, requests, NAMES, SearchLimits(budget_s=0)
    )
    assert [result.translation.reason for result in spent] == [
        "not searched: this call's budget of 0 s ran out"
    ] * 5
    assert all(result.translation.probes == 0 for result in spent)


def test_a_long_untraced_stretch_costs_bounded_probes_and_the_answer_stays_safe(
    target_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    topic = unique_name("east.orders")
    create_topic(target_bootstrap, topic)
    layout = [("orders", 0, 0), ("orders", 0, 1)] + [None] * 30 + [("orders", 0, 2), ("orders", 0, 3)]
    offsets = produce_traced(target_bootstrap, topic, layout)
    request = TracingRequest(topic, 0, "orders", 0, 3)
    [roomy] = translate_from_tracing_headers({"bootstrap.servers": target_bootstrap}, [request], NAMES)
    assert roomy.translation.downstream_offset == offsets[-1] and roomy.translation.exact
    [tight] = translate_from_tracing_headers(
        {"bootstrap.servers": target_bootstrap}, [request], NAMES, SearchLimits(max_probes=3, scan_limit=2)
    )
    assert tight.translation.probes <= 3
    found = tight.translation.downstream_offset
    assert found is None or found <= offsets[-1], "a limited search may lose precision, never safety"
    assert tight.translation.reason


def test_an_unreachable_target_is_one_reason_for_every_request_in_bounded_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """20 partitions, 2 workers: only the searches started before the first timeout ask the target."""
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        port = probe.getsockname()[1]
    searched: list[str] = []

    class CountedSearch(tracing_reader._PartitionSearch):
        def run(self, group: Sequence[TracingRequest], started: float) -> list[TracingResult]:
            searched.append(self.key.target_topic)
            return super().run(group, started)

    monkeypatch.setattr(tracing_reader, "_PartitionSearch", CountedSearch)
    requests = [TracingRequest("east.orders", partition, "orders", partition, 5) for partition in range(20)]
    limits = SearchLimits(timeout_s=2, concurrency=2)
    results = translate_from_tracing_headers(
        {"bootstrap.servers": f"{LOOPBACK}:{port}"}, requests, NAMES, limits
    )
    assert len(results) == 20
    assert all((r.translation.reason or "").startswith("target unreachable") for r in results)
    assert all(r.translation.downstream_offset is None for r in results)
    assert len(searched) <= limits.concurrency, "the first timeout answers for the rest"


def _layout() -> list[Traced]:
    """Two records that were on the target before, then orders[0] with a gap every 7th source offset
    and payments[0] every 4th record (a static route writes both topics into one): 150 records."""
    layout: list[Traced] = [None, None]
    source = 0
    for index in range(148):
        if index % 4 == 3:
            layout.append(("payments", 0, index // 4))
        else:
            source += 2 if source % 7 == 6 else 1
            layout.append(("orders", 0, source))
    return layout


def _answers(results: list[TracingResult]) -> list[tuple[int | None, bool, str | None]]:
    return [(r.translation.downstream_offset, r.translation.exact, r.translation.reason) for r in results]


@pytest.mark.parametrize(("records_per_probe", "reads_once"), [(1, False), (10**6, True)])
def test_the_positions_of_one_partition_share_their_reads_and_answer_as_each_alone(
    target_bootstrap: str, unique_name: Callable[[str], str], records_per_probe: int, reads_once: bool
) -> None:
    """Searched together (shared probes, or one sequential read when that costs less), 25 positions
    cost fewer probes than their 25 searches alone, and each answer is the one its own search gives."""
    topic = unique_name("east.orders")
    create_topic(target_bootstrap, topic)
    produce_traced(target_bootstrap, topic, _layout())
    config = {"bootstrap.servers": target_bootstrap}
    requests = [TracingRequest(topic, 0, "orders", 0, upstream) for upstream in range(0, 125, 5)]
    alone = [translate_from_tracing_headers(config, [request], NAMES)[0] for request in requests]
    together = translate_from_tracing_headers(
        config, requests, NAMES, SearchLimits(records_per_probe=records_per_probe)
    )
    assert _answers(together) == _answers(alone)
    assert all(answer[0] is not None and answer[2] is None for answer in _answers(alone)[1:])
    [cost] = {result.cost for result in together}
    assert cost.positions == len(requests)
    assert (cost.scanned > 0) == reads_once
    assert cost.probes < sum(result.translation.probes for result in alone) // 2
    if reads_once:
        extremes = together[0].translation.probes + together[-1].translation.probes
        assert cost.probes <= extremes, "no probe past the two extremes' searches"


def test_partitions_are_searched_by_a_pool_each_with_its_own_answers(
    target_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    """Two source topics interleaved in one target partition and a missing target partition,
    searched two at a time: each (target partition, source partition) answered on its own records."""
    topic = unique_name("east.orders")
    create_topic(target_bootstrap, topic)
    layout = _layout()
    offsets = produce_traced(target_bootstrap, topic, layout)
    at = {origin: offset for origin, offset in zip(layout, offsets, strict=True) if origin is not None}
    requests = [
        *(TracingRequest(topic, 0, "orders", 0, upstream) for upstream in (8, 50, 100)),
        *(TracingRequest(topic, 0, "payments", 0, upstream) for upstream in (3, 20, 40)),
        TracingRequest(topic, 2, "orders", 2, 5),
    ]
    results = translate_from_tracing_headers(
        {"bootstrap.servers": target_bootstrap}, requests, NAMES, SearchLimits(concurrency=2)
    )
    assert [result.request for result in results] == requests
    answers = [result.translation.downstream_offset for result in results]
    assert answers[:6] == [
        at[("orders", 0, 8)],
        at[("orders", 0, 50)],
        at[("orders", 0, 100)],
        at[("payments", 0, 3)],
        at[("payments", 0, 20)],
        at[("payments", 0, 36)] + 1,  # past the last replicated record of payments[0]: its next
    ]
    assert "has no partition 2" in (results[6].translation.reason or "")
    assert [result.cost.positions for result in results] == [3, 3, 3, 3, 3, 3, 1]


@pytest.mark.parametrize("records_per_probe", [1, 10**6])
def test_records_of_another_partition_of_the_sought_topic_refuse_the_partitions_translations(
    target_bootstrap: str, unique_name: Callable[[str], str], records_per_probe: int
) -> None:
    """Issue 46: K2K did not keep the partition (producer-defined partitioning): orders[1]'s records
    in the target partition searched for orders[0]. Each of its positions is refused with the reason,
    by probes and by a sequential read alike; a search of a partition holding orders[0] alone answers."""
    topic = unique_name("east.orders")
    create_topic(target_bootstrap, topic, partitions=2)
    mixed = [("orders", 0, n) if n % 3 else ("orders", 1, n) for n in range(30)]
    produce_traced(target_bootstrap, topic, mixed)
    alone = produce_traced(target_bootstrap, topic, [("orders", 1, n) for n in range(10)], partition=1)
    requests = [TracingRequest(topic, 0, "orders", 0, upstream) for upstream in (4, 11, 16, 22, 28)]
    requests.append(TracingRequest(topic, 1, "orders", 1, 5))
    results = translate_from_tracing_headers(
        {"bootstrap.servers": target_bootstrap},
        requests,
        NAMES,
        SearchLimits(records_per_probe=records_per_probe),
    )
    refused, kept = results[:-1], results[-1]
    assert all(result.translation.downstream_offset is None for result in refused)
    assert all(
        "holds orders[1]@" in (result.translation.reason or "")
        and "K2K does not keep the source partition here" in (result.translation.reason or "")
        for result in refused
    ), [result.translation.reason for result in refused]
    assert (kept.translation.downstream_offset, kept.translation.exact) == (alone[5], True)
