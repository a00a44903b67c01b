"""The search over a target partition on K2K's tracing headers, against a brute-force oracle.

Hypothesis builds target partitions as K2K leaves them: records that were there before replication
(no headers), the sought source partition's records in order with gaps (filtered records,
transaction markers), records of another source partition interleaved. The probe is a plain scan
of that list, optionally giving up after a few records (a long untraced stretch).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offsetlake.errors import InvalidValueError
from offsetlake.k2k.routing import TracingRoute, shared_target
from offsetlake.k2k.tracing import (
    MixedPartitionsError,
    Probe,
    ProbeResult,
    Scan,
    Scanned,
    ScanResult,
    TracedRecord,
    TracingHeaderNames,
    scan_pays,
    search_translation,
    search_translations,
    sought_record,
    traced_origin,
)

SOUGHT, OTHER, UNTRACED = "sought", "other", "untraced"
SCAN_EVERYTHING = 10**9
"""records_per_probe so high that reading the range once always pays."""


@dataclass(frozen=True)
class Partition:
    """Target offsets low.. with, per record, whose it is and (sought/other) its source offset."""

    low: int
    records: tuple[tuple[str, int], ...]

    @property
    def high(self) -> int:
        return self.low + len(self.records)

    def sought(self) -> list[tuple[int, int]]:
        """(target offset, source offset) of the sought source partition's records."""
        return [(self.low + i, source) for i, (kind, source) in enumerate(self.records) if kind == SOUGHT]


@st.composite
def partitions(draw: st.DrawFn) -> Partition:
    source = draw(st.integers(0, 30))
    other = 0
    records: list[tuple[str, int]] = [(UNTRACED, -1)] * draw(st.integers(0, 12))  # pre-existing data
    for _ in range(draw(st.integers(0, 60))):
        kind = draw(st.sampled_from([SOUGHT, SOUGHT, SOUGHT, OTHER, UNTRACED]))
        if kind == SOUGHT:
            records.append((SOUGHT, source))
            source += draw(st.sampled_from([1, 1, 1, 2, 3, 5]))  # gaps: filtered, transaction markers
        elif kind == OTHER:
            records.append((OTHER, other))
            other += 1
        else:
            records.append((UNTRACED, -1))
    return Partition(draw(st.integers(0, 1000)), tuple(records))


def scanning_probe(partition: Partition, scan_limit: int | None = None) -> Probe:
    def probe(start: int, end: int) -> ProbeResult:
        for scanned, offset in enumerate(range(start, min(end, partition.high)), start=1):
            kind, source = partition.records[offset - partition.low]
            if kind == SOUGHT:
                return TracedRecord(offset, source)
            if scan_limit is not None and scanned >= scan_limit:
                return Scanned(offset + 1)
        return None

    return probe


def list_scan(partition: Partition, stop_after: int | None = None) -> Scan:
    """A sequential read of the list; ``stop_after``: its time runs out after that many records."""

    def scan(start: int, end: int) -> ScanResult:
        offsets = range(start, min(end, partition.high))
        until = end
        if stop_after is not None and stop_after < len(offsets):
            offsets, until = offsets[:stop_after], start + stop_after
        records = tuple(
            TracedRecord(offset, partition.records[offset - partition.low][1])
            for offset in offsets
            if partition.records[offset - partition.low][0] == SOUGHT
        )
        return ScanResult(records, until, len(offsets))

    return scan


def oracle(partition: Partition, upstream: int) -> int | None:
    """Largest traced source offset <= U: its target offset if exact, else + 1; None if none."""
    below = [(target, source) for target, source in partition.sought() if source <= upstream]
    if not below:
        return None
    target, source = below[-1]
    return target if source == upstream else target + 1


@given(partitions(), st.integers(0, 200))
def test_the_search_equals_the_oracle_never_skips_and_is_logarithmic(
    partition: Partition, upstream: int
) -> None:
    result = search_translation(
        scanning_probe(partition),
        partition.low,
        partition.high,
        upstream,
        where="t[0] in x.t[0]",
        max_probes=10_000,
    )
    assert result.downstream_offset == oracle(partition, upstream)
    pending = [target for target, source in partition.sought() if source >= upstream]
    if result.downstream_offset is not None:
        assert result.downstream_offset <= (pending[0] if pending else partition.high), "never skips"
        assert result.reason is None
    else:
        assert result.reason
    exact = [target for target, source in partition.sought() if source == upstream]
    assert result.exact == bool(exact)
    if exact:
        assert result.downstream_offset == exact[0]
    assert result.probes <= 2 * math.ceil(math.log2(len(partition.records) + 1)) + 2


@given(partitions(), st.integers(0, 200), st.integers(1, 4), st.integers(1, 12))
def test_a_probe_that_gives_up_or_runs_out_still_answers_safely(
    partition: Partition, upstream: int, scan_limit: int, max_probes: int
) -> None:
    """Limits may lose precision or the translation, never safety: the answer is a real record <= U."""
    result = search_translation(
        scanning_probe(partition, scan_limit),
        partition.low,
        partition.high,
        upstream,
        where="t[0] in x.t[0]",
        max_probes=max_probes,
    )
    assert result.probes <= max_probes
    best = oracle(partition, upstream)
    if result.downstream_offset is None:
        assert result.reason
        return
    assert best is not None and result.downstream_offset <= best
    assert (result.matched_target_offset, result.matched_source_offset) in partition.sought()
    assert result.matched_source_offset is not None and result.matched_source_offset <= upstream


def test_reasons_say_why_there_is_no_translation() -> None:
    empty = search_translation(scanning_probe(Partition(7, ())), 7, 7, 3, where="orders[0] in e.orders[0]")
    assert "empty" in (empty.reason or "")
    late = Partition(0, ((UNTRACED, -1), (SOUGHT, 57), (SOUGHT, 58)))
    starts_after = search_translation(scanning_probe(late), 0, 3, 41, where="orders[0] in e.orders[0]")
    assert starts_after.downstream_offset is None
    assert "starts after" in (starts_after.reason or "") and "57 > 41" in (starts_after.reason or "")
    headerless = Partition(0, ((UNTRACED, -1), (OTHER, 1)))
    none = search_translation(scanning_probe(headerless), 0, 2, 1, where="orders[0] in e.orders[0]")
    assert "carries K2K tracing headers" in (none.reason or "")
    timed_out = search_translation(scanning_probe(late), 0, 3, 60, where="w", expired=lambda: True)
    assert timed_out.downstream_offset is None and "time limit" in (timed_out.reason or "")


def test_headers_give_the_origin_only_when_all_three_are_there_and_numeric() -> None:
    names = TracingHeaderNames()
    full = [("k2k_topic", b"orders"), ("k2k_partition", b"2"), ("k2k_offset", b"41"), ("k2k_pipeline", b"p")]
    assert traced_origin(full, names) == ("orders", 2, 41)
    assert traced_origin([*full, ("k2k_offset", b"42")], names) == ("orders", 2, 42), "the last one counts"
    assert traced_origin(full[:2], names) is None
    assert traced_origin(None, names) is None
    assert traced_origin([("k2k_topic", b"o"), ("k2k_partition", b"x"), ("k2k_offset", b"1")], names) is None
    assert traced_origin([("k2k_topic", b"o"), ("k2k_partition", b"0"), ("k2k_offset", b"-1")], names) is None
    assert traced_origin([("k2k_topic", None), ("k2k_partition", b"0"), ("k2k_offset", b"1")], names) is None
    renamed = TracingHeaderNames.parse("offset=src.offset")
    assert traced_origin([("k2k_topic", b"o"), ("k2k_partition", b"0"), ("src.offset", b"9")], renamed) == (
        "o",
        0,
        9,
    )


def test_header_names_parse_and_print_back() -> None:
    names = TracingHeaderNames.parse("topic=t, partition=p")
    assert (names.topic, names.partition, names.offset) == ("t", "p", "k2k_offset")
    assert TracingHeaderNames.parse(names.text()) == names
    for bad in ("pipeline=x", "offset=", "offset"):
        with pytest.raises(InvalidValueError, match="tracing header names"):
            TracingHeaderNames.parse(bad)


def test_a_route_template_covers_k2ks_routing_strategies() -> None:
    assert TracingRoute("e", "{topic}").target_topic("orders") == "orders"
    assert TracingRoute("e", "eu.{topic}.copy").target_topic("orders") == "eu.orders.copy"
    assert TracingRoute("e", "all-orders").target_topic("orders") == "all-orders"
    assert TracingRoute("e", "eu.{topic}.copy").parts == ["eu.", ".copy"]


_TOPIC_TEXT = st.text("ab.", min_size=1, max_size=3)
_TEMPLATES = st.one_of(
    _TOPIC_TEXT, st.tuples(st.text("ab.", max_size=2), st.text("ab.", max_size=2)).map("{topic}".join)
)


@given(_TEMPLATES, _TEMPLATES)
def test_two_routes_meet_exactly_when_shared_target_names_a_topic_both_write(first: str, second: str) -> None:
    """Over every topic name of up to four characters: two routes write one target topic only when
    shared_target says so, and the topic it names is one both write."""
    east, west = TracingRoute("east", first), TracingRoute("west", second)
    topics = ["".join(chars) for size in range(1, 5) for chars in itertools.product("ab.", repeat=size)]
    meet = {east.target_topic(topic) for topic in topics} & {west.target_topic(topic) for topic in topics}
    shared = shared_target(east, west)
    if shared is None:
        assert not meet
    else:
        assert all(_writes(route, shared) for route in (east, west))


def _writes(route: TracingRoute, target: str) -> bool:
    """Whether some non-empty source topic name routes to ``target``."""
    if len(route.parts) == 1:
        return target == route.template
    prefix, suffix = route.parts
    return target.startswith(prefix) and target.endswith(suffix) and len(target) > len(prefix) + len(suffix)


def test_a_record_of_the_sought_topic_from_another_partition_refuses_the_search() -> None:
    """K2K kept no partition here: orders[1]'s records in the partition searched for orders[0]."""
    assert sought_record(("orders", 0, 41), "orders", 0, 7) == TracedRecord(7, 41)
    assert sought_record(("payments", 1, 41), "orders", 0, 7) is None
    assert sought_record(None, "orders", 0, 7) is None
    with pytest.raises(MixedPartitionsError, match=r"target offset 7 holds orders\[1\]@41"):
        sought_record(("orders", 1, 41), "orders", 0, 7)


def counted(probe: Probe) -> tuple[Probe, list[int]]:
    calls: list[int] = []

    def counting(start: int, end: int) -> ProbeResult:
        calls.append(start)
        return probe(start, end)

    return counting, calls


@settings(deadline=None)
@given(
    partitions(),
    st.lists(st.integers(0, 200), max_size=40),
    st.sampled_from([1, 8, SCAN_EVERYTHING]),
    st.sampled_from([None, 1, 3]),
)
def test_batched_answers_equal_each_positions_own_search_for_fewer_probes(
    partition: Partition, uppers: list[int], records_per_probe: int, scan_limit: int | None
) -> None:
    """Whatever the layout, and whether the batch searches or reads the range once: each U's answer
    is the one its own search gives, and the batch never probes more than those searches did."""
    where = "t[0] in x.t[0]"
    probe, made = counted(scanning_probe(partition, scan_limit))
    batch = search_translations(
        probe,
        list_scan(partition),
        partition.low,
        partition.high,
        uppers,
        where=where,
        max_probes=10_000,
        records_per_probe=records_per_probe,
    )
    assert set(batch.translations) == set(uppers)
    assert batch.probes == len(made)
    single_probes = 0
    for upstream in set(uppers):
        alone = search_translation(
            scanning_probe(partition, scan_limit),
            partition.low,
            partition.high,
            upstream,
            where=where,
            max_probes=10_000,
        )
        single_probes += alone.probes
        got = batch.translations[upstream]
        assert (got.downstream_offset, got.matched_source_offset, got.matched_target_offset) == (
            alone.downstream_offset,
            alone.matched_source_offset,
            alone.matched_target_offset,
        )
        assert (got.exact, got.reason) == (alone.exact, alone.reason)
        assert got.downstream_offset == oracle(partition, upstream)
    assert batch.probes <= single_probes
    assert batch.scanned <= len(partition.records)


def dense() -> tuple[Partition, list[int]]:
    """2,000 records: orders[0] with a gap every 7th source offset, another partition every 5th
    record; 60 positions spread over it."""
    records: list[tuple[str, int]] = []
    source = 0
    for target in range(2000):
        if target % 5 == 0:
            records.append((OTHER, target))
        else:
            source += 2 if source % 7 == 6 else 1
            records.append((SOUGHT, source))
    return Partition(100, tuple(records)), list(range(5, source, source // 60))


def test_the_searches_of_one_partition_share_their_probes() -> None:
    partition, uppers = dense()
    where = "t[0] in x.t[0]"
    alone = [
        search_translation(scanning_probe(partition), partition.low, partition.high, upstream, where=where)
        for upstream in uppers
    ]
    probe, made = counted(scanning_probe(partition))
    batch = search_translations(
        probe, list_scan(partition), partition.low, partition.high, uppers, where=where, records_per_probe=1
    )
    assert batch.scanned == 0, "reading 2,000 records costs more than 60 searches at one record a probe"
    assert [batch.translations[upstream] for upstream in uppers] == alone, "the same answers, probes included"
    assert len(made) == batch.probes < sum(single.probes for single in alone) * 3 // 4
    assert len(made) == len(set(made)), "no probe is made twice"


def test_a_dense_batch_reads_the_range_between_its_extremes_once() -> None:
    partition, uppers = dense()
    probe, made = counted(scanning_probe(partition))
    batch = search_translations(
        probe, list_scan(partition), partition.low, partition.high, uppers, where="w", records_per_probe=500
    )
    lowest, highest = batch.translations[uppers[0]], batch.translations[uppers[-1]]
    assert lowest.matched_target_offset is not None and highest.matched_target_offset is not None
    assert batch.scanned == highest.matched_target_offset + 1 - lowest.matched_target_offset
    assert batch.probes == len(made) <= lowest.probes + highest.probes
    assert all(
        batch.translations[upstream].downstream_offset == oracle(partition, upstream) for upstream in uppers
    )


def test_the_crossover_weighs_one_read_against_the_searches_it_replaces() -> None:
    assert scan_pays(100_000, 1_000, 500), "1,000 positions in 100,000 records: read them"
    assert not scan_pays(100_000, 10, 500), "10 positions: 10 searches of ~13 probes are cheaper"
    assert scan_pays(100, 1, 500), "a short range: one read"


@settings(deadline=None)
@given(partitions(), st.lists(st.integers(0, 200), min_size=3, max_size=30), st.integers(0, 20))
def test_a_read_cut_short_by_its_time_still_answers_safely(
    partition: Partition, uppers: list[int], stop_after: int
) -> None:
    batch = search_translations(
        scanning_probe(partition),
        list_scan(partition, stop_after),
        partition.low,
        partition.high,
        uppers,
        where="w",
        records_per_probe=SCAN_EVERYTHING,
    )
    for upstream, got in batch.translations.items():
        best = oracle(partition, upstream)
        if got.reason is None:
            assert got.downstream_offset == best
        elif got.downstream_offset is not None:
            assert best is not None and got.downstream_offset <= best, "may re-read, never skip"
            assert got.matched_source_offset is not None and got.matched_source_offset <= upstream
            assert "time limit" in got.reason


def test_a_batch_keeps_the_reasons_a_single_search_gives() -> None:
    empty = search_translations(
        scanning_probe(Partition(7, ())), list_scan(Partition(7, ())), 7, 7, [3, 4], where="w"
    )
    assert {t.reason for t in empty.translations.values()} == {"target partition is empty (w)"}
    assert empty.probes == 0
    late = Partition(0, ((UNTRACED, -1), (SOUGHT, 57), (SOUGHT, 58), (SOUGHT, 59)))
    batch = search_translations(scanning_probe(late), list_scan(late), 0, 4, [41, 50, 58, 70], where="w")
    assert [batch.translations[u].downstream_offset for u in (41, 50, 58, 70)] == [None, None, 2, 4]
    assert "57 > 50" in (batch.translations[50].reason or "")
    with pytest.raises(ValueError, match=">= 0"):
        search_translations(scanning_probe(late), list_scan(late), 0, 4, [-1, 3], where="w")
