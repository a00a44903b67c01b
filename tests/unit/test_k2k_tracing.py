"""The search over a target partition on K2K's tracing headers, against a brute-force oracle.

Hypothesis builds target partitions as K2K leaves them: records that were there before replication
(no headers), the sought source partition's records in order with gaps (filtered records,
transaction markers), records of another source partition interleaved. The probe is a plain scan
of that list, optionally giving up after a few records (a long untraced stretch).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsetlake.errors import InvalidValueError
from offsetlake.k2k.routing import TracingRoute
from offsetlake.k2k.tracing import (
    Probe,
    ProbeResult,
    Scanned,
    TracedRecord,
    TracingHeaderNames,
    search_translation,
    traced_origin,
)

SOUGHT, OTHER, UNTRACED = "sought", "other", "untraced"


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
