"""Real consumers on the target cluster: one that resumes a group after failover, one that keeps a group busy.

Failover is only proven when an application-like consumer, joined to the group with its own
group.id, starts from the committed position and reads on; reading the committed offsets with an
AdminClient would not show what an application does. Group timeouts are 6000 ms: the broker
minimum on Apache Kafka, and short enough for Tansu, whose joins wait for the whole rebalance
timeout.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from offsetlake.errors import ExternalError

GROUP_TIMEOUT_MS = 6000
JOIN_TIMEOUT_S = 60.0
READ_TIMEOUT_S = 60.0


class ConsumerCheckError(ExternalError):
    """A target consumer could not join its group or read its partitions in time."""


@dataclass(frozen=True)
class ResumedPartition:
    """What a group's consumer read on one target partition, from its committed position to the log end."""

    topic: str
    partition: int
    committed_offset: int | None
    """None when the group has no committed offset there (the consumer then reads nothing)."""
    log_end_offset: int
    values: tuple[str, ...]


def _group_consumer(bootstrap: str, group: str, auto_offset_reset: str) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,  # observe the position, never move it
            "auto.offset.reset": auto_offset_reset,
            "session.timeout.ms": GROUP_TIMEOUT_MS,
            "max.poll.interval.ms": GROUP_TIMEOUT_MS,
        }
    )


def resume_group(
    bootstrap: str, group: str, topics: Sequence[str], *, timeout_s: float = JOIN_TIMEOUT_S + READ_TIMEOUT_S
) -> dict[tuple[str, int], ResumedPartition]:
    """Join ``group`` on ``topics`` and read every assigned partition from its committed offset to its end.

    ``auto.offset.reset=error``: a partition without a committed offset is reported, not silently
    started from the beginning or the end.
    """
    consumer = _group_consumer(bootstrap, group, "error")
    assigned: list[TopicPartition] = []
    joined = threading.Event()

    def on_assign(_consumer: Consumer, partitions: list[TopicPartition]) -> None:
        assigned.extend(partitions)
        joined.set()

    deadline = time.monotonic() + timeout_s
    try:
        consumer.subscribe(list(topics), on_assign=on_assign)
        early: list[tuple[tuple[str, int], int, str]] = []
        while not joined.is_set():
            if time.monotonic() > deadline:
                raise ConsumerCheckError(
                    f"group {group} got no assignment of {list(topics)} within {timeout_s:g} s"
                )
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                early.append(_read(message))
        committed = consumer.committed(assigned, timeout=READ_TIMEOUT_S)
        positions: dict[tuple[str, int], int | None] = {}
        ends: dict[tuple[str, int], int] = {}
        for tp in committed:
            key = (tp.topic, tp.partition)
            if tp.error is not None:
                raise ConsumerCheckError(
                    f"group {group}: committed offset of {tp.topic}[{tp.partition}]: {tp.error}"
                )
            positions[key] = tp.offset if tp.offset >= 0 else None
            _, high = consumer.get_watermark_offsets(
                TopicPartition(tp.topic, tp.partition), timeout=READ_TIMEOUT_S
            )
            ends[key] = int(high)
        read: dict[tuple[str, int], list[tuple[int, str]]] = {key: [] for key in positions}
        for key, offset, value in early:
            read[key].append((offset, value))
        waiting = {
            key
            for key, position in positions.items()
            if position is not None and position < ends[key] and not _reached_end(read[key], ends[key])
        }
        while waiting:
            if time.monotonic() > deadline:
                raise ConsumerCheckError(
                    f"group {group}: partitions not read to their end in time: {sorted(waiting)}"
                )
            message = consumer.poll(0.2)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._AUTO_OFFSET_RESET:
                    continue  # a partition without a committed offset: reported as such below
                raise ConsumerCheckError(f"group {group}: {error}")
            key, offset, value = _read(message)
            read[key].append((offset, value))
            if _reached_end(read[key], ends[key]):
                waiting.discard(key)
    except KafkaException as error:
        raise ConsumerCheckError(f"group {group}: {error}") from error
    finally:
        consumer.close()
    return {
        key: ResumedPartition(
            topic=key[0],
            partition=key[1],
            committed_offset=positions[key],
            log_end_offset=ends[key],
            values=tuple(value for offset, value in sorted(read[key]) if offset < ends[key]),
        )
        for key in positions
    }


def _read(message: Message) -> tuple[tuple[str, int], int, str]:
    key = (str(message.topic()), int(message.partition() or 0))
    return key, int(message.offset() or 0), (message.value() or b"").decode(errors="replace")


def _reached_end(read: list[tuple[int, str]], log_end_offset: int) -> bool:
    return any(offset >= log_end_offset - 1 for offset, _ in read)


@contextmanager
def active_member(
    bootstrap: str, group: str, topics: Sequence[str], *, timeout_s: float = JOIN_TIMEOUT_S
) -> Iterator[list[tuple[str, int]]]:
    """Keep a live member in ``group`` for the block, like an application already running on the target.

    Yields the member's assignment as (topic, partition) pairs. A background thread polls so the
    member stays past max.poll.interval.ms; it starts at the log end and commits nothing.
    """
    joined = threading.Event()
    stop = threading.Event()
    assignment: list[tuple[str, int]] = []
    failure: list[BaseException] = []

    def on_assign(_consumer: Consumer, partitions: list[TopicPartition]) -> None:
        assignment.extend((tp.topic, tp.partition) for tp in partitions)
        joined.set()

    def member() -> None:
        consumer = _group_consumer(bootstrap, group, "latest")
        try:
            consumer.subscribe(list(topics), on_assign=on_assign)
            while not stop.is_set():
                consumer.poll(0.2)
        except BaseException as error:  # handed to the caller's thread below
            failure.append(error)
            joined.set()
        finally:
            consumer.close()

    thread = threading.Thread(target=member, name=f"active-member-{group}", daemon=True)
    thread.start()
    try:
        if not joined.wait(timeout_s):
            raise ConsumerCheckError(
                f"group {group} got no assignment of {list(topics)} within {timeout_s:g} s"
            )
        if failure:
            raise ConsumerCheckError(f"group {group}: {failure[0]}") from failure[0]
        yield assignment
    finally:
        stop.set()
        thread.join(timeout=timeout_s)
