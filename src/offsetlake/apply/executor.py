"""Carries out a plan: alter offsets per group with bounded concurrency, then read them back.

Each group is judged on its own: an error in one group (it became active, an alter was refused)
is recorded for that group and never stops the others. Right before altering, the group's state
is read again, because a consumer may have joined since planning and Tansu, unlike Apache Kafka,
does not reject commits to a group with members.

A worker takes a batch of groups (up to GROUPS_PER_BATCH, spread over the workers): their states in
one describe, then their alters in flight together, then their read-backs. librdkafka sends one
group per request either way; what the batch saves is a thread hand-off per request, much of the
client's CPU (10,000 groups of 4.6 partitions on 2 shared cores: 7.0-9.4 s against 10.7-11.2 s a
group a worker, benchmarks/README.md).

The run as a whole fails fast. When the target stops answering (a request times out, the
transport fails), when the overall deadline passes, or when the process is asked to stop
(SIGINT/SIGTERM), no new group is started; groups in flight get about two request timeouts to
finish and are then abandoned. Every altering row still gets exactly one result: ``applied``,
``verify_failed``, ``failed``, ``skipped_active_group``, ``not_attempted`` (no alter was sent),
or ``unknown`` (an alter was sent and not answered: the target may or may not hold it; a rerun
reads the target again and converges).

Each worker thread has its own AdminClient, a kept client (offsetlake.kafka.clients.new_admin,
made by the caller's ``new_client``), and drops it the moment a request on it goes unanswered:
librdkafka (up to at least 2.16) aborts the whole process when a late answer reaches a timed-out
group request of a live client (librdkafka issue #4605), which would lose the audit of this very
run when the target comes back. A dropped client never sees that answer. Every client's log lines
are flushed (offsetlake.kafka.clients.flush_logs) when it is dropped or when the run is done.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from confluent_kafka.admin import AdminClient

from offsetlake.apply.planner import PlanRow, is_safe_to_alter
from offsetlake.apply.target_state import target_group
from offsetlake.errors import StopSignalError
from offsetlake.kafka import admin as kafka_admin
from offsetlake.kafka.admin import ClusterUnresponsiveError, GroupActiveError, KafkaAdminError
from offsetlake.kafka.clients import flush_logs
from offsetlake.mirror.positions import CommittedOffset

ABANDON_AFTER_TIMEOUTS = 2
"""Groups in flight when the run stops get this many request timeouts to finish."""
GROUPS_PER_BATCH = 32
"""The most groups one worker describes, alters and reads back together."""


class Outcome(StrEnum):
    APPLIED = "applied"
    VERIFY_FAILED = "verify_failed"
    SKIPPED_ACTIVE_GROUP = "skipped_active_group"
    FAILED = "failed"
    NOT_ATTEMPTED = "not_attempted"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class PartitionResult:
    row: PlanRow
    outcome: Outcome
    applied_offset: int | None
    read_back_offset: int | None
    error: str | None
    finished_at: datetime

    @property
    def verified(self) -> bool:
        return self.outcome is Outcome.APPLIED


@dataclass(frozen=True)
class Execution:
    """One result per altering plan row, in plan order, and why the run stopped early, if it did."""

    results: tuple[PartitionResult, ...]
    stopped_because: str | None = None
    interrupted: StopSignalError | None = None
    """Set when SIGINT/SIGTERM stopped the run: the caller records the results, then re-raises it."""


class _ClientPerWorker:
    """One kept AdminClient per worker thread, created on first use, dropped when it stops
    answering; the live ones are flushed and let go by :meth:`flush_all` once the run is done."""

    def __init__(self, new_client: Callable[[], AdminClient]) -> None:
        self._new_client = new_client
        self._local = threading.local()
        self._live: dict[int, AdminClient] = {}
        self._lock = threading.Lock()

    def get(self) -> AdminClient:
        client: AdminClient | None = getattr(self._local, "client", None)
        if client is None:
            client = self._new_client()
            self._local.client = client
            with self._lock:
                self._live[id(client)] = client
        return client

    def drop(self) -> None:
        client: AdminClient | None = getattr(self._local, "client", None)
        self._local.client = None
        if client is not None:
            with self._lock:
                self._live.pop(id(client), None)  # no reference may keep a dropped client alive
            flush_logs(client)

    def flush_all(self) -> None:
        with self._lock:
            live, self._live = list(self._live.values()), {}
        for client in live:
            flush_logs(client)


@dataclass
class _GroupProgress:
    """What a worker has done so far, readable by the coordinator when it abandons the group."""

    alter_sent: bool = False


@dataclass(frozen=True)
class _BatchOutcome:
    results: dict[str, list[PartitionResult]]
    unresponsive: str | None = None
    """The target did not answer one of the batch's requests (the first message), else None."""


def execute_plan(
    new_client: Callable[[], AdminClient],
    plan: Sequence[PlanRow],
    *,
    timeout_s: float,
    concurrency: int,
    deadline: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    stopped: threading.Event | None = None,
    groups_per_batch: int = GROUPS_PER_BATCH,
) -> Execution:
    """Alter and verify every altering row of ``plan``; ``new_client`` makes a target AdminClient the
    executor keeps (offsetlake.kafka.clients.new_admin); ``deadline`` is a ``clock()`` value after
    which no new batch of groups starts. ``clock`` and ``stopped`` (set once no new batch will
    start) let a test move the deadline past at an event and answer a held request once the run
    stopped. A batch is at most ``groups_per_batch`` groups, fewer when the groups would not
    otherwise reach every worker."""
    clients = _ClientPerWorker(new_client)
    rows_by_group: dict[str, list[PlanRow]] = defaultdict(list)
    for row in plan:
        if row.action.alters:
            rows_by_group[row.consumer_group].append(row)
    workers = max(1, concurrency)
    dispatch = _Dispatch(
        rows_by_group,
        stopping=stopped if stopped is not None else threading.Event(),
        clock=clock,
        timeout_s=timeout_s,
        batch=max(1, min(groups_per_batch, -(-len(rows_by_group) // workers))),
    )
    interrupted: StopSignalError | None = None
    pool = ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="apply")
    try:
        dispatch.run(pool, clients, concurrency=concurrency, deadline=deadline)
    except StopSignalError as error:
        interrupted = error
        dispatch.stop(str(error))
    finally:
        # Abandoned workers end within one request timeout (each step checks ``stopping``); they are
        # waited for so that no request is still in flight when the caller lets the client go
        # (librdkafka 2.16 can abort the process on a late answer to a destroyed admin request).
        # After SIGINT/SIGTERM nobody waits: the process is on its way out.
        pool.shutdown(wait=interrupted is None, cancel_futures=True)
        if interrupted is None:
            clients.flush_all()
    return Execution(
        results=dispatch.results(plan), stopped_because=dispatch.stopped_because, interrupted=interrupted
    )


class _Dispatch:
    """The coordinator of one execution: groups queued, in flight and finished, and why it stopped
    (the first reason holds; from then on no group starts and those in flight get
    ABANDON_AFTER_TIMEOUTS request timeouts)."""

    def __init__(
        self,
        rows_by_group: dict[str, list[PlanRow]],
        *,
        stopping: threading.Event,
        clock: Callable[[], float],
        timeout_s: float,
        batch: int,
    ) -> None:
        self.rows_by_group = rows_by_group
        self.progress = {group: _GroupProgress() for group in rows_by_group}
        self.stopping, self.clock, self.timeout_s = stopping, clock, timeout_s
        self.finished: dict[str, list[PartitionResult]] = {}
        self.in_flight: dict[Future[_BatchOutcome], list[str]] = {}
        ordered = sorted(rows_by_group)
        self.queued = iter([ordered[start : start + batch] for start in range(0, len(ordered), batch)])
        self.stopped_because: str | None = None
        self.abandon_at = float("inf")

    def stop(self, reason: str) -> None:
        if self.stopped_because is None:
            self.stopped_because = reason
            self.abandon_at = self.clock() + ABANDON_AFTER_TIMEOUTS * self.timeout_s
            self.stopping.set()

    def run(
        self, pool: ThreadPoolExecutor, clients: _ClientPerWorker, *, concurrency: int, deadline: float | None
    ) -> None:
        """Keep ``concurrency`` groups in flight until every group finished or the run stopped."""
        while True:
            self._start_groups(pool, clients, concurrency=concurrency, deadline=deadline)
            if not self.in_flight:
                return
            wait_until = self.abandon_at if self.stopped_because else (deadline or float("inf"))
            done, _ = wait(
                self.in_flight, timeout=_seconds_until(wait_until, self.clock), return_when=FIRST_COMPLETED
            )
            for future in done:
                self.in_flight.pop(future)
                outcome = future.result()
                self.finished.update(outcome.results)
                if outcome.unresponsive:
                    self.stop(f"the target stopped answering ({outcome.unresponsive})")
            if not done:
                if self.stopped_because:
                    return  # abandon what is still in flight
                self.stop("the overall deadline passed")

    def _start_groups(
        self, pool: ThreadPoolExecutor, clients: _ClientPerWorker, *, concurrency: int, deadline: float | None
    ) -> None:
        while self.stopped_because is None and len(self.in_flight) < concurrency:
            groups = next(self.queued, None)
            if groups is None:
                return
            if deadline is not None and self.clock() >= deadline:
                self.stop("the overall deadline passed")  # checked before each batch, not only when idle
                return
            future = pool.submit(
                _apply_groups,
                clients,
                [self.rows_by_group[group] for group in groups],
                timeout_s=self.timeout_s,
                progress=self.progress,
                stopping=self.stopping,
            )
            self.in_flight[future] = groups

    def results(self, plan: Sequence[PlanRow]) -> tuple[PartitionResult, ...]:
        """One result per altering row, in plan order; a group that did not finish is abandoned."""
        finished = self.finished
        for group, rows in self.rows_by_group.items():
            if group not in finished:
                finished[group] = _abandoned(
                    rows, self.progress[group], self.stopped_because or "the run stopped"
                )
        results = {result.row.key: result for results in finished.values() for result in results}
        return tuple(results[row.key] for row in plan if row.key in results)


def _abandoned(rows: list[PlanRow], progress: _GroupProgress, reason: str) -> list[PartitionResult]:
    if progress.alter_sent:
        return _all(rows, Outcome.UNKNOWN, f"alter sent, no answer before the run stopped: {reason}")
    return _all(rows, Outcome.NOT_ATTEMPTED, f"not attempted: {reason}")


def _apply_groups(
    clients: _ClientPerWorker,
    batch: list[list[PlanRow]],
    *,
    timeout_s: float,
    progress: dict[str, _GroupProgress],
    stopping: threading.Event,
) -> _BatchOutcome:
    outcome = _apply_groups_with(
        clients.get(), batch, timeout_s=timeout_s, progress=progress, stopping=stopping
    )
    if outcome.unresponsive:
        clients.drop()
    return outcome


def _apply_groups_with(
    admin: AdminClient,
    batch: list[list[PlanRow]],
    *,
    timeout_s: float,
    progress: dict[str, _GroupProgress],
    stopping: threading.Event,
) -> _BatchOutcome:
    """Each group of the batch as it would be alone: its state read again right before the alter (one
    describe for the batch), the alter, the read-back; the batch's requests of a step in flight
    together. A request the target leaves unanswered stops the batch's groups not yet altered."""
    rows_of = {rows[0].consumer_group: rows for rows in batch}
    results: dict[str, list[PartitionResult]] = {}
    described, failures = kafka_admin.describe_groups(admin, list(rows_of), timeout_s=timeout_s)
    silent = next(
        (str(e) for _, e in sorted(failures.items()) if isinstance(e, ClusterUnresponsiveError)), None
    )
    if silent is not None:
        for group, rows in rows_of.items():
            why = str(failures[group]) if group in failures else f"the target stopped answering ({silent})"
            results[group] = _all(rows, Outcome.NOT_ATTEMPTED, f"not attempted: {why}")
        return _BatchOutcome(results, silent)
    to_alter: dict[str, list[PlanRow]] = {}
    for group, rows in rows_of.items():
        if group in failures:
            results[group] = _all(rows, Outcome.FAILED, f"group state read failed: {failures[group]}")
        elif not is_safe_to_alter(state := target_group(described[group])):
            became = f"{state.type} group became {state.state} ({state.members} members) before the alter"
            results[group] = _all(rows, Outcome.SKIPPED_ACTIVE_GROUP, became)
        elif stopping.is_set():
            results[group] = _all(rows, Outcome.NOT_ATTEMPTED, "not attempted: the run was stopping")
        else:
            to_alter[group] = rows
    for group in to_alter:
        progress[group].alter_sent = True
    altered = kafka_admin.alter_committed_offsets_of_each(
        admin, {group: _offsets(rows) for group, rows in to_alter.items()}, timeout_s=timeout_s
    )
    unresponsive = next(
        (str(answer) for answer in altered.values() if isinstance(answer, ClusterUnresponsiveError)), None
    )
    to_read: dict[str, dict[tuple[str, int], str]] = {}
    for group, rows in to_alter.items():
        answer = altered[group]
        if isinstance(answer, GroupActiveError):
            results[group] = _all(rows, Outcome.SKIPPED_ACTIVE_GROUP, str(answer))
        elif isinstance(answer, ClusterUnresponsiveError):
            results[group] = _all(rows, Outcome.UNKNOWN, f"alter sent, no answer: {answer}")
        elif isinstance(answer, KafkaAdminError):
            results[group] = _all(rows, Outcome.FAILED, f"alter failed: {answer}")
        elif unresponsive is not None or stopping.is_set():  # the run stops: no read-back is waited for
            results[group] = _unverified(rows, answer, "the run was stopping")
        else:
            to_read[group] = answer
    read_back = kafka_admin.list_committed_offsets_of_each(
        admin,
        {group: [(row.topic, row.partition) for row in to_alter[group]] for group in to_read},
        timeout_s=timeout_s,
    )
    for group, alter_errors in to_read.items():
        rows, answer = to_alter[group], read_back[group]
        if isinstance(answer, KafkaAdminError):
            if isinstance(answer, ClusterUnresponsiveError):
                unresponsive = unresponsive or str(answer)
            results[group] = _unverified(rows, alter_errors, f"the read-back failed: {answer}")
        else:
            results[group] = [_verified(row, alter_errors, answer) for row in rows]
    return _BatchOutcome(results, unresponsive)


def _verified(
    row: PlanRow, alter_errors: dict[tuple[str, int], str], read_back: dict[tuple[str, int], CommittedOffset]
) -> PartitionResult:
    key = (row.topic, row.partition)
    if key in alter_errors:
        return _result(row, Outcome.FAILED, None, None, alter_errors[key])
    committed = read_back.get(key)
    offset = committed.offset if committed is not None else None
    if offset == row.planned_offset:
        return _result(row, Outcome.APPLIED, row.planned_offset, offset, None)
    return _result(
        row,
        Outcome.VERIFY_FAILED,
        row.planned_offset,
        offset,
        f"read back {offset} after setting {row.planned_offset}",
    )


def _unverified(
    rows: list[PlanRow], alter_errors: dict[tuple[str, int], str], why: str
) -> list[PartitionResult]:
    """The alter was answered but not read back: accepted partitions are ``verify_failed``."""
    return [
        _result(row, Outcome.FAILED, None, None, alter_errors[(row.topic, row.partition)])
        if (row.topic, row.partition) in alter_errors
        else _result(row, Outcome.VERIFY_FAILED, row.planned_offset, None, f"altered, not verified: {why}")
        for row in rows
    ]


def _offsets(rows: list[PlanRow]) -> dict[tuple[str, int], CommittedOffset]:
    """The group's offsets to set, each with the source group's own commit metadata."""
    offsets = {}
    for row in rows:
        if row.planned_offset is None:
            raise ValueError(f"altering row without a planned offset: {row}")
        offsets[(row.topic, row.partition)] = CommittedOffset(row.planned_offset, row.metadata)
    return offsets


def _all(rows: list[PlanRow], outcome: Outcome, error: str) -> list[PartitionResult]:
    return [_result(row, outcome, None, None, error) for row in rows]


def _result(
    row: PlanRow, outcome: Outcome, applied: int | None, read_back: int | None, error: str | None
) -> PartitionResult:
    return PartitionResult(row, outcome, applied, read_back, error, datetime.now(UTC))


def _seconds_until(moment: float, clock: Callable[[], float]) -> float | None:
    return None if moment == float("inf") else max(0.0, moment - clock())
