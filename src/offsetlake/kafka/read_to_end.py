"""Read assigned partitions to their end, bounded: the one loop behind every offsetlake reader that
must see a whole log or a whole offset range (as Kafka's ``KafkaBasedLog.readToEnd`` serves
MirrorMaker's and Connect's stores). Callers keep their decoding and decide what a failure means.

The consumer comes from :func:`offsetlake.kafka.clients.consumer` with ``enable.partition.eof``
set (:func:`reader_consumer_config` sets it); the read assigns it the partitions (it never joins or
commits to a group). Three rules, decided here once:

- **End of a partition**: librdkafka's partition-EOF event, or the given end offset (exclusive),
  whichever comes first. EOF comes from the fetch response's high watermark, never from ListOffsets:
  Tansu's ListOffsets "latest" is wrong when a partition's last batch holds several records, so no
  end is ever looked up here. A given end is the caller's bound: a record at or past it ends the
  partition and is not delivered (the end may fall on a transaction marker or a compacted gap);
  an EOF before it ends the partition too, with ``log_end`` saying where the log ended.
- **Deadline**: the read makes progress (a record delivered, a partition ended) or, after
  ``timeout_s`` without any, every partition not yet ended is ``STALLED``. So a read of any length
  goes on while records come, and a broker that stops answering costs ``timeout_s``. A read given
  a ``deadline`` (a ``time.monotonic()`` instant: a search's time, progress or not) stalls there
  too, whichever comes first. Either may be passed by up to one poll slice.
- **Errors**: librdkafka retries what can be retried; an error a retry cannot fix (fatal, or one of
  ``PERMANENT_ERRORS``) ends its partition ``FAILED`` (an error of the client, not of a partition,
  ends every open partition); an offset no longer in the log (``auto.offset.reset=error``) ends it
  ``LOST``; any other error is logged once and kept as the reason should the partition stall.
  Nothing is raised for a partition: each ends with a typed :class:`PartitionRead`.

Every record is delivered at most once: records of an ended partition, records before a
partition's position (a re-fetch) and records at or past its end are dropped.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from confluent_kafka import Consumer, KafkaError, Message, TopicPartition

POLL_SLICE_S = 0.1
"""How long one consume() waits for a batch to fill: a short read (a tail of a few records, its
end) waits this long per call, so 0.5 s made a 10-record tail cost 1.5 s; a long read fills its
batches first."""
DEFAULT_BATCH = 10_000

PERMANENT_ERRORS = frozenset(
    {
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError._UNKNOWN_TOPIC,
        KafkaError._UNKNOWN_PARTITION,
        KafkaError.SASL_AUTHENTICATION_FAILED,
        KafkaError._AUTHENTICATION,
        KafkaError._SSL,
        KafkaError._INVALID_ARG,
    }
)
"""Errors no retry can fix: they end a read at once rather than at its deadline."""

_LOST = frozenset({KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE})

_log = logging.getLogger(__name__)


def reader_consumer_config(client_config: Mapping[str, str], *, fail_on_data_loss: bool) -> dict[str, Any]:
    """Consumer settings for a read to the end: assign-only, no commits, partition EOF on, and an
    offset gone from the log either ``LOST`` (``fail_on_data_loss``) or skipped to the log start.

    librdkafka insists on a group.id; a random one that is never joined or committed leaves no
    trace on the cluster. Reads are read_uncommitted unless the user asks otherwise, as in Spark.
    """
    return {
        "isolation.level": "read_uncommitted",
        **client_config,
        "group.id": f"offsetlake-reader-{uuid.uuid4()}",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": True,
        "auto.offset.reset": "error" if fail_on_data_loss else "earliest",
    }


@dataclass(frozen=True)
class PartitionToRead:
    topic: str
    partition: int
    start: int
    """The first offset to read, or ``confluent_kafka.OFFSET_BEGINNING`` (the log start)."""
    end: int | None = None
    """Exclusive bound; None: the partition's end as the fetch reports it (EOF)."""


class ReadOutcome(StrEnum):
    END = "end"
    """Read to its end: the given end offset, or the log's end (partition EOF)."""
    LOST = "lost"
    """The offset to read next is no longer in the log."""
    FAILED = "failed"
    """An error no retry can fix."""
    STALLED = "stalled"
    """No progress for the read's timeout, or its deadline came."""


@dataclass(frozen=True)
class PartitionRead:
    topic: str
    partition: int
    outcome: ReadOutcome
    position: int
    """The next offset to read: past the last record delivered, or where the log ended."""
    records: int
    """How many records of the partition were delivered."""
    log_end: int | None = None
    """Where partition EOF said the log ends, when EOF ended the partition."""
    error: str | None = None
    """LOST and FAILED: the error; STALLED: the last retried error seen, if any."""

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


class ReadToEnd:
    """One bounded read of ``partitions``: iterate for their records, batch by batch (a batch may mix
    partitions), then :attr:`results` says how each partition ended (in the order given)."""

    def __init__(
        self,
        consumer: Consumer,
        partitions: Sequence[PartitionToRead],
        *,
        timeout_s: float,
        deadline: float | None = None,
        batch_size: int = DEFAULT_BATCH,
    ) -> None:
        self._consumer = consumer
        self._partitions = tuple(partitions)
        self._timeout_s = timeout_s
        self._deadline = deadline
        self._batch_size = batch_size
        self._results: dict[tuple[str, int], PartitionRead] | None = None
        self._done = False
        self._client_error: str | None = None
        """The last retried error of the client (not of a partition): a stalled read's reason."""
        self._logged: set[tuple[tuple[str, int] | None, int]] = set()

    @property
    def results(self) -> tuple[PartitionRead, ...]:
        if not self._done or self._results is None:
            raise RuntimeError("the read has not been iterated to its end")
        return tuple(self._results[(p.topic, p.partition)] for p in self._partitions)

    def __iter__(self) -> Iterator[list[Message]]:
        if self._results is not None:
            raise RuntimeError("a read is iterated once")
        self._results = {}
        open_: dict[tuple[str, int], _Progress] = {}
        for wanted in self._partitions:
            progress = _Progress(wanted)
            if wanted.end is not None and 0 <= wanted.end <= wanted.start:
                self._results[progress.key] = progress.result(ReadOutcome.END)
            else:
                open_[progress.key] = progress
        if open_:
            yield from self._read(open_)
        self._done = True

    def _read(self, open_: dict[tuple[str, int], _Progress]) -> Iterator[list[Message]]:
        self._consumer.assign([TopicPartition(*key, p.position) for key, p in open_.items()])
        deadline = self._stall_at()
        while open_:
            if time.monotonic() > deadline:
                for key, progress in list(open_.items()):
                    self._end(open_, key, ReadOutcome.STALLED, progress.last_error or self._client_error)
                break
            delivered: list[Message] = []
            ended = len(open_)
            for message in self._consumer.consume(num_messages=self._batch_size, timeout=POLL_SLICE_S):
                topic, number = message.topic(), message.partition()
                key = (topic, number) if topic is not None and number is not None else None
                error = message.error()
                if error is not None:
                    self._on_error(open_, key, error, message.offset())
                    continue
                progress = open_.get(key) if key is not None else None
                if progress is None:
                    continue  # an ended partition's: not delivered
                if progress.accepts(message.offset()):
                    delivered.append(message)
                if progress.reached_end or progress.past_end(message.offset()):
                    self._end(open_, progress.key, ReadOutcome.END)
            if delivered or len(open_) < ended:
                deadline = self._stall_at()
            if delivered:
                yield delivered

    def _stall_at(self) -> float:
        """When the read stalls without further progress: ``timeout_s`` from now, never past its deadline."""
        then = time.monotonic() + self._timeout_s
        return then if self._deadline is None else min(then, self._deadline)

    def _on_error(
        self,
        open_: dict[tuple[str, int], _Progress],
        key: tuple[str, int] | None,
        error: KafkaError,
        offset: int | None,
    ) -> None:
        """The error policy of the module docstring, for one error event."""
        code = error.code()
        permanent = error.fatal() or code in PERMANENT_ERRORS
        if key is None:  # the client's, not a partition's
            if permanent:
                for open_key in list(open_):
                    self._end(open_, open_key, ReadOutcome.FAILED, error.str())
                return
            self._client_error = error.str()
        elif (progress := open_.get(key)) is None:
            return  # an ended partition's
        elif code == KafkaError._PARTITION_EOF:
            progress.log_end = offset
            self._end(open_, key, ReadOutcome.END)
            return
        elif code in _LOST:
            self._end(open_, key, ReadOutcome.LOST, error.str())
            return
        elif permanent:
            self._end(open_, key, ReadOutcome.FAILED, error.str())
            return
        else:
            progress.last_error = error.str()
        # librdkafka retries by itself; the deadline bounds how long that may take.
        if (key, code) not in self._logged:
            self._logged.add((key, code))
            _log.warning("%s: Kafka error, librdkafka retries: %s", key or "client", error.str())

    def _end(
        self,
        open_: dict[tuple[str, int], _Progress],
        key: tuple[str, int],
        outcome: ReadOutcome,
        error: str | None = None,
    ) -> None:
        """Record how the partition ended and stop fetching it (the others go on)."""
        assert self._results is not None
        progress = open_.pop(key)
        self._results[key] = progress.result(outcome, error)
        if open_:
            self._consumer.incremental_unassign([TopicPartition(*key)])


class _Progress:
    """Where one partition's read stands: the next offset to deliver and how many were delivered."""

    def __init__(self, wanted: PartitionToRead) -> None:
        self.key = (wanted.topic, wanted.partition)
        self.position = wanted.start
        self.end = wanted.end
        self.records = 0
        self.log_end: int | None = None
        self.last_error: str | None = None

    def past_end(self, offset: int) -> bool:
        return self.end is not None and offset >= self.end

    def accepts(self, offset: int) -> bool:
        """Count the record at ``offset`` unless it was delivered already or lies past the end."""
        if offset < self.position or self.past_end(offset):
            return False
        self.position = offset + 1
        self.records += 1
        return True

    @property
    def reached_end(self) -> bool:
        return self.end is not None and self.position >= self.end

    def result(self, outcome: ReadOutcome, error: str | None = None) -> PartitionRead:
        position = self.position if self.log_end is None else max(self.position, self.log_end)
        return PartitionRead(*self.key, outcome, position, self.records, self.log_end, error)
