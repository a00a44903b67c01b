"""Why a plan or apply run did not simply succeed, as typed values; ``render()`` gives the words.

A run's verdict (offsetlake.apply.run.verdict) carries these values, never sentences; what is
printed is their ``render()``: the same words in the CLI, the demo and the Databricks task. The
command-line flags those words (and the planner's reasons) point an operator to are spelled
once, in :class:`Flag`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class Flag(StrEnum):
    """The `offsetlake plan|apply` flags an operator is told to pass (offsetlake.cli.apply defines them)."""

    GROUPS = "--groups"
    EXCLUDE_GROUPS = "--exclude-groups"
    TOPICS = "--topics"
    EXCLUDE_TOPICS = "--exclude-topics"
    MAX_AGE = "--max-age"
    ALLOW_REWIND = "--allow-rewind"
    ACTIVE_GROUP_POLICY = "--active-group-policy"
    IGNORE_K2K_GUARD = "--ignore-k2k-guard"
    K2K_GUARD_PREFIX = "--k2k-guard-prefix"
    ON_MULTIPLE_TARGETS = "--on-multiple-targets"
    UNTRANSLATED = "--untranslated"
    ACCEPT_GOLD_WITHOUT_TAIL = "--accept-gold-without-tail"
    RESUME_SYNC = "--resume-sync"
    AS_FAILOVER = "--as-failover"


@dataclass(frozen=True)
class Tally:
    """How many plan rows ended in each outcome: ``applied 3, not_attempted 2``."""

    counts: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, outcomes: Iterable[str]) -> Tally:
        return cls(tuple(sorted(Counter(outcomes).items())))

    def render(self) -> str:
        return ", ".join(f"{outcome} {count}" for outcome, count in self.counts)


@dataclass(frozen=True)
class NoTranslation:
    """Gold holds no translation (valid at ``as_of``): the pipeline has not translated anything yet."""

    run_id: str
    schema: str
    as_of: datetime | None = None

    def render(self) -> str:
        where = f"valid at {self.as_of.isoformat()} in" if self.as_of else "in"
        return (
            f"run {self.run_id}: no translation {where} gold ({self.schema}): nothing can be applied; "
            "has the pipeline run against these clusters? (see cluster_health)"
        )


@dataclass(frozen=True)
class RefusedActiveGroups:
    """The ``fail`` active-group policy refused the run before anything was altered."""

    run_id: str
    groups: tuple[str, ...]

    def render(self) -> str:
        return (
            f"run {self.run_id}: refused, nothing altered: groups active on the target: "
            f"{', '.join(self.groups)} (stop their consumers, or pass {Flag.ACTIVE_GROUP_POLICY} skip)"
        )


@dataclass(frozen=True)
class AllStale:
    """Every selected translation is older than --max-age: gold has not been refreshed."""

    run_id: str
    newest_observed_at: datetime

    def render(self) -> str:
        return (
            f"run {self.run_id}: every selected translation is older than {Flag.MAX_AGE} "
            f"(the newest was observed at {self.newest_observed_at.isoformat(timespec='seconds')}): the "
            f"pipeline has not refreshed gold since; refresh it, or pass a larger {Flag.MAX_AGE} to fail "
            "over anyway"
        )


@dataclass(frozen=True)
class ResultsNotRecorded:
    """Offsets were altered, but writing their results to the audit table failed."""

    run_id: str
    audit_table: str
    error: str
    """The write's error, secrets already masked."""

    def render(self) -> str:
        return (
            f"run {self.run_id}: offsets were altered but the results could not be written to "
            f"{self.audit_table}: {self.error}; rerun the same command to converge"
        )


@dataclass(frozen=True)
class StoppedEarly:
    """The run stopped starting groups: the target stopped answering, or the deadline passed."""

    run_id: str
    because: str
    tally: Tally
    target: str
    audit_table: str

    def render(self) -> str:
        return (
            f"run {self.run_id}: stopped early, {self.because}: {self.tally.render()} on {self.target} "
            f"(every row recorded in {self.audit_table}); rerun the same command when the target "
            "answers: it reads the target again and converges"
        )


@dataclass(frozen=True)
class PartitionsFailed:
    """Alters or read-backs failed (``failed``, ``verify_failed``)."""

    run_id: str
    count: int
    target: str

    def render(self) -> str:
        return f"run {self.run_id}: {self.count} partitions failed on {self.target}"


@dataclass(frozen=True)
class ActiveDuringRun:
    """Under the ``fail`` policy, groups that became active between plan and alter (not altered)."""

    run_id: str

    def render(self) -> str:
        return f"run {self.run_id}: groups became active during the run and were not altered"


@dataclass(frozen=True)
class NotPlaced:
    """Partitions a source group committed that the run left without a position that skips nothing
    (refused by the plan, or not verified): their consumers would start where
    ``auto.offset.reset`` says (Java's default ``latest`` skips)."""

    run_id: str
    partitions: tuple[tuple[str, str, int, str], ...]
    """(group, topic, partition, action) of each, in plan order."""
    audit_table: str

    SHOWN = 10

    def render(self) -> str:
        shown = [f"{group} {topic}[{part}] ({action})" for group, topic, part, action in self.partitions]
        more = len(shown) - self.SHOWN
        listing = ", ".join(shown[: self.SHOWN]) + (f", and {more} more" if more > 0 else "")
        return (
            f"INCOMPLETE: {len(self.partitions)} partitions not placed: {listing} "
            f"(run {self.run_id}; every row with its reason in {self.audit_table})"
        )


@dataclass(frozen=True)
class Interrupted:
    """SIGINT/SIGTERM stopped the run after every planned row got its result: what the error adds."""

    signal_message: str
    run_id: str
    tally: Tally
    audit_table: str

    def render(self) -> str:
        return (
            f"{self.signal_message}; run {self.run_id}: {self.tally.render()} (every row recorded "
            f"in {self.audit_table}); rerun the same command to converge"
        )


Problem = (
    NoTranslation
    | RefusedActiveGroups
    | AllStale
    | ResultsNotRecorded
    | StoppedEarly
    | PartitionsFailed
    | ActiveDuringRun
    | NotPlaced
)
"""What an ApplyResult carries (``reasons``); its ``problems`` are these rendered."""
