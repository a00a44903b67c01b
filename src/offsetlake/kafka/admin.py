"""Every AdminClient call offsetlake makes, with one error type and one way of describing errors.

Reading the source cluster (group snapshots), reading the target (planning), altering the target
(apply) and planning a Kafka read (the data source) all go through these functions, so timeouts,
"no committed offset" sentinels and error messages are handled the same way everywhere.
"""

from __future__ import annotations

import functools
import itertools
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    IsolationLevel,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, ConfigResource, OffsetSpec, ResourceType

from offsetlake.errors import ExternalError
from offsetlake.kafka import clients
from offsetlake.mirror.positions import CommittedOffset, LogBounds, TopicPartitionKey

_Answer = TypeVar("_Answer")

# What Apache Kafka answers when an admin commit meets a group that has members (classic and
# KIP-848 consumer groups): the group is active, not broken.
ACTIVE_GROUP_ERRORS = frozenset(
    {
        KafkaError.UNKNOWN_MEMBER_ID,
        KafkaError.ILLEGAL_GENERATION,
        KafkaError.NON_EMPTY_GROUP,
        KafkaError.REBALANCE_IN_PROGRESS,
        KafkaError.FENCED_MEMBER_EPOCH,
        KafkaError.STALE_MEMBER_EPOCH,
    }
)
# Groups a DescribeConsumerGroups request asks for, and such requests in flight at once.
DESCRIBE_CHUNK = 256
DESCRIBES_IN_FLIGHT = 4
NOT_FOUND = "NotFound"
"""State of a group the cluster does not know (GROUP_ID_NOT_FOUND)."""


class KafkaAdminError(ExternalError):
    """A cluster could not be read or changed (unreachable, timed out, not authorised)."""


class GroupActiveError(KafkaAdminError):
    """The broker refused an offset alter because the group has members."""


class ClusterUnresponsiveError(KafkaAdminError):
    """The cluster did not answer in time (timeout, transport failure, no broker up).

    Apply stops starting new work when it sees one: every further request would wait its own
    timeout for a cluster that is not answering.
    """


# librdkafka's and Kafka's codes for "no answer": as opposed to an answer that refused something.
UNRESPONSIVE_ERRORS = frozenset(
    {
        KafkaError._TIMED_OUT,
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._WAIT_COORD,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.NETWORK_EXCEPTION,
    }
)


def admin_error(error: KafkaException | TimeoutError, message: str) -> KafkaAdminError:
    """``message``: description as the error to raise; ClusterUnresponsiveError when nothing answered."""
    text = f"{message}: {describe_error(error)}"
    return ClusterUnresponsiveError(text) if unanswered(error) else KafkaAdminError(text)


def unanswered(error: KafkaException | TimeoutError) -> bool:
    """Whether ``error`` says the cluster did not answer (as opposed to an answer refusing something)."""
    return isinstance(error, TimeoutError) or error_code(error) in UNRESPONSIVE_ERRORS


@dataclass(frozen=True)
class ClusterProbe:
    """Whether a cluster answered a metadata request in time, and what the client said if not."""

    reachable: bool
    error: str | None
    seconds: float


def probe_cluster(config: Mapping[str, str], *, timeout_s: float) -> ClusterProbe:
    """Ask the cluster for its metadata once, for at most ``timeout_s`` (the error never holds
    credentials: only the Kafka client's error name and text)."""
    started = time.monotonic()
    try:
        with clients.admin(config) as admin:
            metadata = read_metadata(admin, timeout_s=timeout_s)
    except KafkaException as error:
        return ClusterProbe(False, describe_error(error), time.monotonic() - started)
    seconds = time.monotonic() - started
    if not metadata.brokers:
        return ClusterProbe(False, "the cluster answered without any broker", seconds)
    return ClusterProbe(True, None, seconds)


def read_metadata(admin: AdminClient, *, timeout_s: float) -> Any:
    """``admin.list_topics(timeout=timeout_s)``, waited for where SIGINT/SIGTERM can cut in.

    librdkafka's metadata call does not return to Python before its timeout, so a signal handler
    would wait up to ``timeout_s`` (measured: SIGTERM at 2 s handled at 15 s with a 15 s timeout).
    The call runs in a daemon thread instead; the main thread waits on a future, which a signal
    interrupts at once.
    """
    answer: Future[Any] = Future()

    def call() -> None:
        try:
            answer.set_result(admin.list_topics(timeout=timeout_s))
        except BaseException as error:  # handed to the waiting thread, which raises it
            answer.set_exception(error)

    threading.Thread(target=call, name="kafka-metadata", daemon=True).start()
    return answer.result()


def describe_error(error: BaseException) -> str:
    """``NAME: description`` for a Kafka error, the plain text for anything else."""
    kafka_error = error.args[0] if isinstance(error, KafkaException) and error.args else None
    if isinstance(kafka_error, KafkaError):
        return f"{kafka_error.name()}: {kafka_error.str()}"
    return str(error)


def error_code(error: KafkaException) -> Any:
    return error.args[0].code() if error.args and isinstance(error.args[0], KafkaError) else None


OFFSETS_RETENTION_CONFIG = "offsets.retention.minutes"


def read_offsets_retention(admin: AdminClient, *, timeout_s: float) -> timedelta | None:
    """The cluster's ``offsets.retention.minutes`` from one broker's configuration, or None when
    it cannot be read (no DescribeConfigs permission, a broker that does not implement it)."""
    try:
        brokers = sorted(read_metadata(admin, timeout_s=timeout_s).brokers)
        if not brokers:
            return None
        resource = ConfigResource(ResourceType.BROKER, str(brokers[0]))
        configs = admin.describe_configs([resource], request_timeout=timeout_s)[resource].result(
            timeout=timeout_s
        )
        entry = configs.get(OFFSETS_RETENTION_CONFIG)
        return timedelta(minutes=int(entry.value)) if entry is not None and entry.value else None
    except (KafkaException, TimeoutError, ValueError):
        return None


def list_partition_counts(admin: AdminClient, *, timeout_s: float) -> dict[str, int]:
    """Every topic the client may see and its number of partitions."""
    try:
        metadata = read_metadata(admin, timeout_s=timeout_s)
    except KafkaException as error:
        raise KafkaAdminError(f"cannot list topics: {describe_error(error)}") from error
    return {name: len(topic.partitions) for name, topic in metadata.topics.items() if topic.error is None}


def list_group_ids(admin: AdminClient, *, timeout_s: float) -> list[str]:
    """Every consumer group of the cluster; fails if any broker did not answer (groups would be missing)."""
    try:
        listing = admin.list_consumer_groups(request_timeout=timeout_s).result(timeout=timeout_s)
    except (KafkaException, TimeoutError) as error:
        raise KafkaAdminError(f"listing consumer groups failed: {error}") from error
    if listing.errors:
        raise KafkaAdminError(f"listing consumer groups failed on some brokers: {listing.errors}")
    return [group.group_id for group in listing.valid]


@dataclass(frozen=True)
class GroupDescription:
    """A consumer group as the cluster describes it; ``state`` None: the cluster does not know it."""

    state: ConsumerGroupState | None
    type: ConsumerGroupType
    """CLASSIC or CONSUMER (KIP-848); UNKNOWN when the broker does not say (DescribeGroups before
    Kafka 4, Tansu) or for a group of another kind."""
    members: int


def describe_groups(
    admin: AdminClient,
    groups: Iterable[str],
    *,
    timeout_s: float,
    chunk_size: int = DESCRIBE_CHUNK,
    max_in_flight: int = DESCRIBES_IN_FLIGHT,
) -> tuple[dict[str, GroupDescription], dict[str, KafkaAdminError]]:
    """(description per group, error per group that could not be described).

    librdkafka (>= 2.10) asks with ConsumerGroupDescribe first and falls back to DescribeGroups,
    so groups on the KIP-848 consumer protocol are described with their real state and members.
    A group the cluster does not know has state None (GROUP_ID_NOT_FOUND, KIP-1043). Asked
    ``chunk_size`` groups a request, each request with ``timeout_s`` (see :func:`_pipelined`):
    10,000 groups in one request did not come back within a 5 s timeout (issue 50).
    """
    groups = list(groups)
    described: dict[str, GroupDescription] = {}
    failures: dict[str, KafkaAdminError] = {}

    def take(group: str, future: Future[Any]) -> bool:
        try:
            description = future.result()
            described[group] = GroupDescription(
                getattr(description, "state", None),
                getattr(description, "type", ConsumerGroupType.UNKNOWN),
                len(description.members or []),
            )
        except KafkaException as error:
            _forget(error)  # held by the future: its traceback would hold this frame and the client
            if error_code(error) == KafkaError.GROUP_ID_NOT_FOUND:
                described[group] = GroupDescription(None, ConsumerGroupType.UNKNOWN, 0)
            else:
                failures[group] = admin_error(error, f"cannot describe group {group}")
                return isinstance(failures[group], ClusterUnresponsiveError)
        return False

    chunks = [groups[i : i + chunk_size] for i in range(0, len(groups), chunk_size)]
    describe = functools.partial(admin.describe_consumer_groups, request_timeout=timeout_s)
    _pipelined(
        (functools.partial(describe, chunk) for chunk in chunks),
        take,
        timeout_s=timeout_s,
        max_in_flight=max_in_flight,
    )
    for group in groups:
        if group not in described and group not in failures:
            failures[group] = ClusterUnresponsiveError(
                f"cannot describe group {group}: timed out (or not asked: no answers came)"
            )
    return described, failures


def _pipelined(
    requests: Iterable[Callable[[], Mapping[str, Future[Any]]]],
    take: Callable[[str, Future[Any]], bool],
    *,
    timeout_s: float,
    max_in_flight: int,
) -> None:
    """Up to ``max_in_flight`` ``requests`` in flight (each submits one: its future per group), each
    group's answer given to ``take`` as it comes; groups never given to it got no answer.

    The wait is bounded by progress, not by the total (Kafka's KafkaBasedLog.readToEnd): it ends
    when nothing answered for ``timeout_s``, so a dead cluster costs about one timeout and a
    cluster that keeps answering is read to the end however many groups there are. No request is
    started after ``take`` returns True (no answer from the cluster: each would wait its timeout).
    """
    queued = iter(requests)
    in_flight: dict[Future[Any], tuple[int, str]] = {}
    waiting: dict[int, int] = {}  # request number: its groups not answered yet
    numbers = itertools.count()

    def submit_next() -> None:
        request = next(queued, None)
        if request is not None:
            number = next(numbers)
            futures = request()
            waiting[number] = len(futures)
            in_flight.update({future: (number, group) for group, future in futures.items()})

    for _ in range(max_in_flight):
        submit_next()
    stopped = False
    while in_flight:
        done, _ = wait(in_flight, timeout=timeout_s, return_when=FIRST_COMPLETED)
        if not done:
            return
        for future in done:
            number, group = in_flight.pop(future)
            stopped = take(group, future) or stopped
            waiting[number] -= 1
            if not waiting[number] and not stopped:
                submit_next()


def describe_group_states(
    admin: AdminClient, groups: Iterable[str], *, timeout_s: float
) -> tuple[dict[str, ConsumerGroupState | None], dict[str, KafkaAdminError]]:
    """(state per group, error per group that could not be described); see :func:`describe_groups`."""
    described, failures = describe_groups(admin, groups, timeout_s=timeout_s)
    return {group: description.state for group, description in described.items()}, failures


def list_committed_offsets(
    admin: AdminClient,
    group: str,
    partitions: Iterable[TopicPartitionKey] | None = None,
    *,
    timeout_s: float,
) -> dict[TopicPartitionKey, CommittedOffset]:
    """The group's committed offsets (of ``partitions``, or all); partitions without one are left out."""
    return _listed(group, _submit_list(admin, group, partitions, timeout_s), timeout_s)


def list_committed_offsets_of_each(
    admin: AdminClient, partitions: Mapping[str, Iterable[TopicPartitionKey]], *, timeout_s: float
) -> dict[str, dict[TopicPartitionKey, CommittedOffset] | KafkaAdminError]:
    """:func:`list_committed_offsets` of each group's ``partitions``, every request in flight at once
    (librdkafka takes one group per request): each group's offsets, or its error."""
    futures = {group: _submit_list(admin, group, keys, timeout_s) for group, keys in partitions.items()}
    return _each_answer(futures, _listed, timeout_s)


def _submit_list(
    admin: AdminClient, group: str, partitions: Iterable[TopicPartitionKey] | None, timeout_s: float
) -> Future[Any]:
    request = None if partitions is None else [TopicPartition(t, p) for t, p in partitions]
    return admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, request)], request_timeout=timeout_s
    )[group]


def _listed(group: str, future: Future[Any], timeout_s: float) -> dict[TopicPartitionKey, CommittedOffset]:
    try:
        answer = future.result(timeout=timeout_s)
    except (KafkaException, TimeoutError) as error:
        _forget(error)  # held by the future: its traceback would hold this frame and the client
        raise admin_error(error, f"cannot read committed offsets of group {group}") from error
    return _committed(group, answer.topic_partitions or [])


def list_committed_offsets_of_groups(
    admin: AdminClient,
    groups: Iterable[str],
    *,
    timeout_s: float,
    max_in_flight: int,
) -> tuple[dict[str, dict[TopicPartitionKey, CommittedOffset]], dict[str, str]]:
    """Every committed offset of many groups, and the error per failed group.

    librdkafka takes one group per request, so up to ``max_in_flight`` requests are in flight at a
    time, pipelined on librdkafka's own threads: no Python thread waits per request (2,000 groups
    of 100 partitions on a loaded 2-core machine: 3.6-3.9 s against 5.0-7.7 s with a thread per
    request). Each request gets ``timeout_s``; see :func:`_pipelined` for when the reading stops.
    """
    groups = list(groups)
    offsets: dict[str, dict[TopicPartitionKey, CommittedOffset]] = {}
    failures: dict[str, str] = {}

    def take(group: str, future: Future[Any]) -> bool:
        try:
            offsets[group] = _committed(group, future.result().topic_partitions or [])
        except KafkaAdminError as error:
            failures[group] = str(error)
        except (KafkaException, TimeoutError) as error:
            _forget(error)  # held by the future: its traceback would hold this frame and the client
            failures[group] = f"listing committed offsets failed: {describe_error(error)}"
            return unanswered(error)
        return False

    _pipelined(
        (functools.partial(_submit_list_all, admin, group, timeout_s) for group in groups),
        take,
        timeout_s=timeout_s,
        max_in_flight=max_in_flight,
    )
    for group in groups:
        if group not in offsets and group not in failures:
            failures[group] = "timed out listing committed offsets (or not asked: no answers came)"
    return offsets, failures


def _submit_list_all(admin: AdminClient, group: str, timeout_s: float) -> Mapping[str, Future[Any]]:
    return admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=timeout_s)


def list_log_offsets(
    admin: AdminClient,
    partitions: Collection[TopicPartitionKey],
    spec: OffsetSpec,
    *,
    timeout_s: float,
    read_committed: bool = False,
) -> dict[TopicPartitionKey, int]:
    """One ListOffsets answer (``OffsetSpec.earliest()`` / ``latest()``) per partition."""
    if not partitions:
        return {}
    level = IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED
    request = {TopicPartition(topic, partition): spec for topic, partition in partitions}
    offsets = {}
    futures = admin.list_offsets(request, isolation_level=level, request_timeout=timeout_s)
    for tp, future in futures.items():
        try:
            offsets[(tp.topic, tp.partition)] = future.result(timeout=timeout_s).offset
        except (KafkaException, TimeoutError) as error:
            raise KafkaAdminError(
                f"cannot read log offsets of {tp.topic}-{tp.partition}: {describe_error(error)}"
            ) from error
    return offsets


def list_log_bounds(
    admin: AdminClient, partitions: Collection[TopicPartitionKey], *, timeout_s: float
) -> dict[TopicPartitionKey, LogBounds]:
    """Log start and log end offset of each partition."""
    starts = list_log_offsets(admin, partitions, OffsetSpec.earliest(), timeout_s=timeout_s)
    ends = list_log_offsets(admin, partitions, OffsetSpec.latest(), timeout_s=timeout_s)
    return {key: LogBounds(starts[key], ends[key]) for key in partitions}


def delete_records_before(
    admin: AdminClient, offsets: Mapping[TopicPartitionKey, int], *, timeout_s: float
) -> dict[TopicPartitionKey, int]:
    """DeleteRecords: every record below ``offsets[partition]`` goes; returns each new log start."""
    request = [TopicPartition(topic, partition, offset) for (topic, partition), offset in offsets.items()]
    if not request:
        return {}
    futures = admin.delete_records(request, request_timeout=timeout_s, operation_timeout=timeout_s)
    try:
        return {
            (tp.topic, tp.partition): future.result(timeout=timeout_s).low_watermark
            for tp, future in futures.items()
        }
    except (KafkaException, TimeoutError) as error:
        raise admin_error(error, f"deleting records of {sorted(offsets)}") from error


def alter_committed_offsets(
    admin: AdminClient,
    group: str,
    offsets: Mapping[TopicPartitionKey, CommittedOffset],
    *,
    timeout_s: float,
) -> dict[TopicPartitionKey, str]:
    """Commit ``offsets`` for the group; returns the per-partition errors (empty when all succeeded).

    Raises GroupActiveError when the broker refuses because the group has members (Apache Kafka
    reports that per partition, not per request), KafkaAdminError when the request failed.
    """
    return _altered(group, _submit_alter(admin, group, offsets, timeout_s), timeout_s)


def alter_committed_offsets_of_each(
    admin: AdminClient,
    offsets: Mapping[str, Mapping[TopicPartitionKey, CommittedOffset]],
    *,
    timeout_s: float,
) -> dict[str, dict[TopicPartitionKey, str] | KafkaAdminError]:
    """:func:`alter_committed_offsets` of each group, every request in flight at once (librdkafka takes
    one group per request): each group's per-partition errors, or its error (GroupActiveError, ...)."""
    futures = {
        group: _submit_alter(admin, group, committed, timeout_s) for group, committed in offsets.items()
    }
    return _each_answer(futures, _altered, timeout_s)


def _each_answer(
    futures: Mapping[str, Future[Any]],
    answer: Callable[[str, Future[Any], float], _Answer],
    timeout_s: float,
) -> dict[str, _Answer | KafkaAdminError]:
    """Each group's ``answer`` from its request in flight, all within one ``timeout_s``: its result,
    or its error (freed of its traceback, so no cycle keeps the client alive)."""
    deadline = time.monotonic() + timeout_s
    answers: dict[str, _Answer | KafkaAdminError] = {}
    for group, future in futures.items():
        try:
            answers[group] = answer(group, future, _remaining(deadline))
        except KafkaAdminError as error:
            answers[group] = _unraised(error)
    return answers


def _unraised(error: KafkaAdminError) -> KafkaAdminError:
    """The error as a value, without the traceback it was raised with: its frames hold the client,
    and a client kept alive after its requests timed out aborts the process when the late answers
    come (librdkafka issue #4605; offsetlake.apply.executor drops such clients)."""
    return type(error)(*error.args)


def _submit_alter(
    admin: AdminClient, group: str, offsets: Mapping[TopicPartitionKey, CommittedOffset], timeout_s: float
) -> Future[Any]:
    request = [
        TopicPartition(topic, partition, committed.offset, metadata=committed.metadata)
        for (topic, partition), committed in offsets.items()
    ]
    return admin.alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, request)], request_timeout=timeout_s
    )[group]


def _altered(group: str, future: Future[Any], timeout_s: float) -> dict[TopicPartitionKey, str]:
    try:
        answer = future.result(timeout=timeout_s)
    except (KafkaException, TimeoutError) as error:
        _forget(error)  # held by the future: its traceback would hold this frame and the client
        if isinstance(error, KafkaException) and error_code(error) in ACTIVE_GROUP_ERRORS:
            raise GroupActiveError(
                f"the target refused the alter, group is active: {describe_error(error)}"
            ) from error
        raise admin_error(error, f"altering group {group}") from error
    failed = [tp for tp in answer.topic_partitions if tp.error is not None]
    active = [tp for tp in failed if tp.error.code() in ACTIVE_GROUP_ERRORS]
    if active:
        raise GroupActiveError(
            "the target refused the alter, group is active: "
            f"{active[0].error.name()}: {active[0].error.str()}"
        )
    return {(tp.topic, tp.partition): f"alter failed: {tp.error.name()}: {tp.error.str()}" for tp in failed}


def _committed(
    group: str, topic_partitions: Iterable[TopicPartition]
) -> dict[TopicPartitionKey, CommittedOffset]:
    committed = {}
    for tp in topic_partitions:
        if tp.error is not None:
            raise KafkaAdminError(
                f"cannot read committed offset of group {group} on {tp.topic}-{tp.partition}: "
                f"{tp.error.str()}"
            )
        # No committed offset reads back as -1 (Kafka) or OFFSET_INVALID -1001 (librdkafka).
        if tp.offset >= 0:
            committed[(tp.topic, tp.partition)] = CommittedOffset(tp.offset, tp.metadata or "")
    return committed


def _forget(error: BaseException) -> None:
    """Drop the traceback of an error a request's future holds (``future.result()`` raised it): it
    holds the caller's frame, which holds the future (a cycle) and the AdminClient. A client kept
    alive that way outlives the executor's drop of it after an unanswered request, and librdkafka
    (#4605) aborts the process when the late answer comes (seen when a paused target came back)."""
    error.__traceback__ = None


def _remaining(deadline: float) -> float:
    return max(0.001, deadline - time.monotonic())
