"""The read-to-end primitive's policy on a scripted consumer: where a partition ends (EOF or the
given end, whichever first), the one deadline (no progress anywhere for the timeout), errors as
typed per-partition results, and every record delivered at most once."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from types import SimpleNamespace

import pytest
from confluent_kafka import OFFSET_BEGINNING, KafkaError, TopicPartition

from offsetlake.k2k.tracing import Scanned, ScanResult, TracedRecord, TracingHeaderNames
from offsetlake.kafka import read_to_end, tracing_reader
from offsetlake.kafka.read_to_end import POLL_SLICE_S, PartitionRead, PartitionToRead, ReadOutcome, ReadToEnd
from offsetlake.kafka.topic_tail import unreadable_reason
from offsetlake.mm2_reset.offsets_topic import ResetError, require_read_whole


@dataclass
class _Message:
    topic_: str | None
    partition_: int | None
    offset_: int
    error_: KafkaError | None = None
    headers_: list[tuple[str, bytes | None]] | None = None

    def topic(self) -> str | None:
        return self.topic_

    def partition(self) -> int | None:
        return self.partition_

    def offset(self) -> int:
        return self.offset_

    def error(self) -> KafkaError | None:
        return self.error_

    def headers(self) -> list[tuple[str, bytes | None]] | None:
        return self.headers_


def _record(topic: str, partition: int, offset: int) -> _Message:
    return _Message(topic, partition, offset)


def _eof(topic: str, partition: int, offset: int) -> _Message:
    return _Message(topic, partition, offset, KafkaError(KafkaError._PARTITION_EOF, "end of partition"))


def _error(topic: str | None, partition: int | None, code: int, *, fatal: bool = False) -> _Message:
    return _Message(topic, partition, -1001, KafkaError(code, f"error {code}", fatal=fatal))


@dataclass
class _Clock:
    now: float = 0.0

    def monotonic(self) -> float:
        return self.now


@dataclass
class _Consumer:
    """Answers each consume() with the next scripted batch (up to the number asked for: the rest
    comes next), then nothing; each call takes its timeout on the fake clock, as a consume that
    waits for records does."""

    clock: _Clock
    script: list[list[_Message]]
    assigned: list[tuple[str, int, int]] = field(default_factory=list)
    unassigned: list[tuple[str, int]] = field(default_factory=list)

    def assign(self, partitions: Sequence[TopicPartition]) -> None:
        self.assigned = [(p.topic, p.partition, p.offset) for p in partitions]

    def incremental_unassign(self, partitions: Sequence[TopicPartition]) -> None:
        self.unassigned += [(p.topic, p.partition) for p in partitions]

    def consume(self, num_messages: int, timeout: float) -> list[_Message]:
        self.clock.now += timeout
        if not self.script:
            return []
        batch, self.script[0] = self.script[0][:num_messages], self.script[0][num_messages:]
        if not self.script[0]:
            self.script.pop(0)
        return batch


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> _Clock:
    clock = _Clock()
    monkeypatch.setattr(read_to_end, "time", clock)
    return clock


def _read(
    clock: _Clock,
    script: Iterable[list[_Message]],
    partitions: Sequence[PartitionToRead],
    timeout_s: float = 5,
) -> tuple[list[tuple[str, int, int]], tuple[PartitionRead, ...], _Consumer]:
    consumer = _Consumer(clock, list(script))
    read = ReadToEnd(consumer, partitions, timeout_s=timeout_s)  # type: ignore[arg-type]
    delivered = [(m.topic(), m.partition(), m.offset()) for batch in read for m in batch]
    return delivered, read.results, consumer  # type: ignore[return-value]


def test_partition_eof_ends_a_partition_without_an_end_offset(clock: _Clock) -> None:
    script = [[_record("a", 0, 0), _record("a", 0, 1)], [_record("a", 0, 2), _eof("a", 0, 3)]]
    delivered, (result,), consumer = _read(clock, script, [PartitionToRead("a", 0, OFFSET_BEGINNING)])
    assert delivered == [("a", 0, 0), ("a", 0, 1), ("a", 0, 2)]
    assert result == PartitionRead("a", 0, ReadOutcome.END, position=3, records=3, log_end=3)
    assert consumer.assigned == [("a", 0, OFFSET_BEGINNING)]


def test_the_end_offset_ends_a_partition_without_waiting_for_eof_or_delivering_past_it(clock: _Clock) -> None:
    """The end may fall on a transaction marker or a compacted gap: a record past it ends the read."""
    at_end = [[_record("a", 0, 3), _record("a", 0, 4), _record("a", 0, 5), _record("a", 0, 6)]]
    gap = [[_record("b", 0, 3), _record("b", 0, 7)], [_record("b", 0, 8)]]
    delivered, (result,), _ = _read(clock, at_end, [PartitionToRead("a", 0, 3, end=5)])
    assert delivered == [("a", 0, 3), ("a", 0, 4)]
    assert result == PartitionRead("a", 0, ReadOutcome.END, position=5, records=2)
    delivered, (result,), _ = _read(clock, gap, [PartitionToRead("b", 0, 3, end=5)])
    assert delivered == [("b", 0, 3)]
    assert (result.outcome, result.position, result.log_end) == (ReadOutcome.END, 4, None)


def test_eof_before_the_end_offset_ends_the_partition_and_says_where_the_log_ended(clock: _Clock) -> None:
    script = [[_record("a", 0, 0), _eof("a", 0, 1)]]
    _, (result,), _ = _read(clock, script, [PartitionToRead("a", 0, 0, end=10)])
    assert (result.outcome, result.position, result.log_end, result.records) == (ReadOutcome.END, 1, 1, 1)


def test_an_empty_range_is_read_without_assigning_anything(clock: _Clock) -> None:
    delivered, (result,), consumer = _read(clock, [], [PartitionToRead("a", 0, 4, end=4)])
    assert (delivered, result.outcome, result.position, consumer.assigned) == ([], ReadOutcome.END, 4, [])


def test_no_progress_for_the_timeout_stalls_every_open_partition_with_its_last_error(clock: _Clock) -> None:
    script = [[_record("a", 0, 0), _error("b", 0, KafkaError._TRANSPORT)]]
    partitions = [PartitionToRead("a", 0, 0), PartitionToRead("b", 0, 0)]
    delivered, results, _ = _read(clock, script, partitions, timeout_s=2)
    assert delivered == [("a", 0, 0)]
    assert [(r.outcome, r.position, r.error) for r in results] == [
        (ReadOutcome.STALLED, 1, None),
        (ReadOutcome.STALLED, 0, f"error {KafkaError._TRANSPORT}"),
    ]
    # The record of the first poll moved the deadline to one slice + 2 s: the read stalls just past it.
    assert 2 + POLL_SLICE_S < clock.now <= 2 + 2 * POLL_SLICE_S + 1e-9


def test_progress_anywhere_moves_the_deadline_so_a_long_read_is_not_cut_short(clock: _Clock) -> None:
    """One record every poll for longer than the timeout: the read goes on while records come."""
    script = [[_record("a", 0, n)] for n in range(20)] + [[_eof("a", 0, 20), _eof("b", 0, 0)]]
    partitions = [PartitionToRead("a", 0, 0), PartitionToRead("b", 0, 0)]
    delivered, results, _ = _read(clock, script, partitions, timeout_s=1)
    assert len(delivered) == 20 and clock.now == pytest.approx(21 * POLL_SLICE_S) and clock.now > 1
    assert [r.outcome for r in results] == [ReadOutcome.END, ReadOutcome.END]


def test_a_deadline_stops_a_read_that_still_progresses(clock: _Clock) -> None:
    """A search's time: records every slice keep the timeout away, the deadline ends the read."""
    script = [[_record("a", 0, n)] for n in range(20)]
    read = ReadToEnd(_Consumer(clock, script), [PartitionToRead("a", 0, 0)], timeout_s=5, deadline=1)  # type: ignore[arg-type]
    delivered = [m.offset() for batch in read for m in batch]
    assert read.results[0].outcome is ReadOutcome.STALLED and read.results[0].position == len(delivered)
    assert 1 < clock.now <= 1 + POLL_SLICE_S + 1e-9 and len(delivered) < 20


def test_a_partition_error_ends_that_partition_only_and_the_others_read_on(clock: _Clock) -> None:
    script = [
        [_record("a", 0, 0), _error("a", 0, KafkaError.TOPIC_AUTHORIZATION_FAILED), _record("b", 0, 0)],
        [_record("a", 0, 1), _error("c", 0, KafkaError._AUTO_OFFSET_RESET), _record("b", 0, 1)],
        [_eof("b", 0, 2)],
    ]
    partitions = [PartitionToRead("a", 0, 0), PartitionToRead("b", 0, 0), PartitionToRead("c", 0, 5)]
    delivered, results, consumer = _read(clock, script, partitions)
    assert delivered == [("a", 0, 0), ("b", 0, 0), ("b", 0, 1)]
    assert [(r.outcome, r.records, r.error) for r in results] == [
        (ReadOutcome.FAILED, 1, f"error {KafkaError.TOPIC_AUTHORIZATION_FAILED}"),
        (ReadOutcome.END, 2, None),
        (ReadOutcome.LOST, 0, f"error {KafkaError._AUTO_OFFSET_RESET}"),
    ]
    assert results[2].position == 5  # the offset that is gone
    assert consumer.unassigned == [("a", 0), ("c", 0)]  # the last one ends the read: no unassign


def test_a_client_error_no_retry_fixes_ends_every_open_partition(clock: _Clock) -> None:
    script = [
        [_eof("a", 0, 0), _error(None, None, KafkaError._TRANSPORT)],
        [_error(None, None, KafkaError._AUTHENTICATION)],
    ]
    partitions = [PartitionToRead("a", 0, 0), PartitionToRead("b", 0, 0), PartitionToRead("c", 0, 0)]
    _, results, _ = _read(clock, script, partitions)
    assert [(r.outcome, r.error) for r in results] == [
        (ReadOutcome.END, None),
        (ReadOutcome.FAILED, f"error {KafkaError._AUTHENTICATION}"),
        (ReadOutcome.FAILED, f"error {KafkaError._AUTHENTICATION}"),
    ]


def test_every_record_is_delivered_and_counted_once(clock: _Clock) -> None:
    """A re-fetch repeats records, EOF comes again after new writes, records follow an end: none of
    them is delivered twice or after its partition ended."""
    script = [
        [_record("a", 0, 0), _record("a", 0, 1)],
        [_record("a", 0, 0), _record("a", 0, 1), _record("a", 0, 2), _eof("a", 0, 3)],
        [_record("a", 0, 3), _eof("a", 0, 4), _record("b", 0, 0)],
        [_eof("b", 0, 1)],
    ]
    partitions = [PartitionToRead("a", 0, 0), PartitionToRead("b", 0, 0)]
    delivered, results, _ = _read(clock, script, partitions)
    assert delivered == [("a", 0, 0), ("a", 0, 1), ("a", 0, 2), ("b", 0, 0)]
    assert [(r.records, r.position) for r in results] == [(3, 3), (1, 1)]


def test_results_exist_only_after_the_whole_read_and_a_read_runs_once(clock: _Clock) -> None:
    script = [[_record("a", 0, 0)], [_eof("a", 0, 1)]]
    read = ReadToEnd(_Consumer(clock, script), [PartitionToRead("a", 0, 0)], timeout_s=1)  # type: ignore[arg-type]
    batches = iter(read)
    next(batches)  # a caller that stops early has no results: the partition's end is unknown
    with pytest.raises(RuntimeError, match="not been iterated"):
        read.results  # noqa: B018
    assert list(batches) == []
    assert read.results[0].outcome is ReadOutcome.END
    with pytest.raises(RuntimeError, match="iterated once"):
        list(read)


def test_callers_judge_the_results_the_tail_as_reasons_the_offsets_topic_as_errors() -> None:
    """The checkpoint tail leaves a partition out with its reason; the MM2 reset refuses a partial read."""
    ended = PartitionRead("o", 0, ReadOutcome.END, 3, 3, log_end=3)
    stalled = PartitionRead("o", 1, ReadOutcome.STALLED, 0, 0, error="Connection refused")
    failed = PartitionRead("o", 2, ReadOutcome.FAILED, 0, 0, error="Broker: Topic authorization failed")
    assert (
        unreadable_reason(stalled, 30)
        == "no record and no end of the log for 30s (last error: Connection refused)"
    )
    assert unreadable_reason(replace(stalled, error=None), 30) == "no record and no end of the log for 30s"
    assert unreadable_reason(failed, 30) == "Broker: Topic authorization failed"
    require_read_whole("o", [ended], 30)
    with pytest.raises(ResetError, match=r"^reading o\[2\]: Broker: Topic authorization failed$"):
        require_read_whole("o", [ended, stalled, failed], 30)
    with pytest.raises(
        ResetError, match=r"o: not read to its end, no progress for 30 s \(partitions \[1\]\)"
    ):
        require_read_whole("o", [ended, stalled], 30)


def _traced(offset: int, source_offset: int) -> _Message:
    """A target record K2K replicated from orders[0]@source_offset."""
    headers = [("k2k_topic", b"orders"), ("k2k_partition", b"0"), ("k2k_offset", str(source_offset).encode())]
    return _Message("t", 0, offset, headers_=headers)


_TRACED_SCRIPTS = {
    "at the end offset": (6, [[_record("t", 0, 3), _traced(4, 10), _traced(5, 11), _traced(6, 12)]]),
    "at the log's end before it": (6, [[_record("t", 0, 3), _eof("t", 0, 4)]]),
    "past a gap over the end": (6, [[_record("t", 0, 3), _traced(8, 10)]]),
    "after a retried error": (
        6,
        [[_error("t", 0, KafkaError._TRANSPORT)], [_record("t", 0, 3), _traced(4, 10)], [_eof("t", 0, 5)]],
    ),
    # Records still come (every 5th slice), well within the timeout: only the deadline stops it.
    "at the partition's time": (
        5,
        [[_record("t", 0, 3)], *[[]] * 4, [_traced(4, 10)], *[[]] * 4, [_record("t", 0, 5)]],
    ),
}


@pytest.mark.parametrize(("stops_at", "script"), _TRACED_SCRIPTS.values(), ids=_TRACED_SCRIPTS)
def test_the_tracing_reads_stop_where_read_to_end_says(
    clock: _Clock, monkeypatch: pytest.MonkeyPatch, stops_at: int, script: list[list[_Message]]
) -> None:
    """One end and deadline rule: a K2K tracing scan or probe of [3, 6) ends where this read of the
    same records ends, given the partition's time as its deadline (1 s here, 10 slices)."""
    monkeypatch.setattr(tracing_reader, "time", clock)
    monkeypatch.setattr(read_to_end, "POLL_SLICE_S", 0.125)  # exact in binary: the clock adds up
    wanted = [PartitionToRead("t", 0, 3, end=6)]
    limits = tracing_reader.SearchLimits(timeout_s=1, scan_limit=100)
    read = ReadToEnd(_Consumer(clock, list(script)), wanted, timeout_s=1, deadline=1)  # type: ignore[arg-type]
    delivered = [message for batch in read for message in batch]
    (result,) = read.results
    until = 6 if result.outcome is ReadOutcome.END else result.position
    assert (until, result.error) == (stops_at, None)

    def search() -> tracing_reader._PartitionSearch:
        clock.now = 0.0
        consumer = _Consumer(clock, list(script))
        readers = SimpleNamespace(probes=consumer, scans=consumer)
        key = tracing_reader._PartitionKey("t", 0, "orders", 0)
        return tracing_reader._PartitionSearch(readers, key, TracingHeaderNames(), limits, threading.Lock())  # type: ignore[arg-type]

    records = tuple(
        TracedRecord(m.offset(), int(dict(m.headers())["k2k_offset"])) for m in delivered if m.headers()
    )
    assert search().scan(3, 6) == ScanResult(records, until, len(delivered))
    assert search().probe(3, 6) == (records[0] if records else None if until == 6 else Scanned(until))
