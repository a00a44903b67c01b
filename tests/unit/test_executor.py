"""The executor's outcomes a real broker cannot be made to give on demand.

The executor talks to the target through offsetlake.kafka.admin only (``describe_groups`` through
target_state.read_groups, ``alter_committed_offsets``, ``list_committed_offsets``), so the target is
faked at exactly that seam: the functions are replaced by ones answering from a FakeTarget, and the
"AdminClient" the executor keeps per worker is a FakeClient that only counts its log flushes.
The paths a broker does give (applied, not_attempted, unknown, SIGTERM) are exercised against real
brokers in tests/integration/test_apply.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest
from confluent_kafka import ConsumerGroupState, ConsumerGroupType

from offsetlake.apply.executor import Execution, Outcome, execute_plan
from offsetlake.apply.planner import Action, PlanRow
from offsetlake.kafka import admin as kafka_admin
from offsetlake.kafka.admin import ClusterUnresponsiveError, GroupActiveError, KafkaAdminError
from offsetlake.mirror.positions import CommittedOffset, TopicPartitionKey

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


@dataclass
class FakeGroup:
    """How one group answers: its state when described again before the alter, and each request."""

    state: ConsumerGroupState | None = ConsumerGroupState.EMPTY
    members: int = 0
    describe_error: KafkaAdminError | None = None
    alter_error: KafkaAdminError | None = None
    partition_errors: dict[TopicPartitionKey, str] = field(default_factory=dict)
    read_back: dict[TopicPartitionKey, CommittedOffset] | None = None
    """What reading the offsets back returns; None: what was altered."""
    read_back_error: KafkaAdminError | None = None
    committed: dict[TopicPartitionKey, CommittedOffset] = field(default_factory=dict)


@dataclass
class FakeTarget:
    groups: dict[str, FakeGroup]
    clients: list[FakeClient] = field(default_factory=list)
    altered: list[str] = field(default_factory=list)

    def new_client(self) -> FakeClient:
        client = FakeClient(self)
        self.clients.append(client)
        return client


@dataclass
class FakeClient:
    """What the executor keeps per worker: offsetlake.kafka.clients.flush_logs polls it."""

    target: FakeTarget
    flushes: int = 0

    def poll(self, timeout: float) -> int:
        self.flushes += 1
        return 0


def describe_groups(
    admin: FakeClient, groups: Iterable[str], *, timeout_s: float
) -> tuple[dict[str, kafka_admin.GroupDescription], dict[str, KafkaAdminError]]:
    described, failures = {}, {}
    for group in groups:
        fake = admin.target.groups[group]
        if fake.describe_error is not None:
            failures[group] = fake.describe_error
        else:
            described[group] = kafka_admin.GroupDescription(
                fake.state, ConsumerGroupType.CLASSIC, fake.members
            )
    return described, failures


def alter_committed_offsets(
    admin: FakeClient, group: str, offsets: Mapping[TopicPartitionKey, CommittedOffset], *, timeout_s: float
) -> dict[TopicPartitionKey, str]:
    fake = admin.target.groups[group]
    admin.target.altered.append(group)
    if fake.alter_error is not None:
        raise fake.alter_error
    fake.committed.update(
        {key: offset for key, offset in offsets.items() if key not in fake.partition_errors}
    )
    return {key: error for key, error in fake.partition_errors.items() if key in offsets}


def list_committed_offsets(
    admin: FakeClient, group: str, partitions: Iterable[TopicPartitionKey] | None = None, *, timeout_s: float
) -> dict[TopicPartitionKey, CommittedOffset]:
    fake = admin.target.groups[group]
    if fake.read_back_error is not None:
        raise fake.read_back_error
    committed = fake.committed if fake.read_back is None else fake.read_back
    return {key: offset for key, offset in committed.items() if partitions is None or key in set(partitions)}


def alter_committed_offsets_of_each(
    admin: FakeClient, offsets: Mapping[str, Mapping[TopicPartitionKey, CommittedOffset]], *, timeout_s: float
) -> dict[str, dict[TopicPartitionKey, str] | KafkaAdminError]:
    answers: dict[str, dict[TopicPartitionKey, str] | KafkaAdminError] = {}
    for group, committed in offsets.items():
        try:
            answers[group] = alter_committed_offsets(admin, group, committed, timeout_s=timeout_s)
        except KafkaAdminError as error:
            answers[group] = error
    return answers


def list_committed_offsets_of_each(
    admin: FakeClient, partitions: Mapping[str, Iterable[TopicPartitionKey]], *, timeout_s: float
) -> dict[str, dict[TopicPartitionKey, CommittedOffset] | KafkaAdminError]:
    answers: dict[str, dict[TopicPartitionKey, CommittedOffset] | KafkaAdminError] = {}
    for group, keys in partitions.items():
        try:
            answers[group] = list_committed_offsets(admin, group, keys, timeout_s=timeout_s)
        except KafkaAdminError as error:
            answers[group] = error
    return answers


@pytest.fixture(autouse=True)
def faked_admin_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kafka_admin, "describe_groups", describe_groups)
    monkeypatch.setattr(kafka_admin, "alter_committed_offsets_of_each", alter_committed_offsets_of_each)
    monkeypatch.setattr(kafka_admin, "list_committed_offsets_of_each", list_committed_offsets_of_each)


@pytest.fixture(params=[1, 32], ids=["a-group-a-batch", "batches"])
def groups_per_batch(request: pytest.FixtureRequest) -> int:
    """Every outcome is the same whether a worker takes one group or a batch of them."""
    return int(request.param)


def row(group: str, partition: int = 0, planned: int = 40) -> PlanRow:
    return PlanRow("us-east", group, "orders", partition, planned, planned, 30, Action.APPLY, "why", NOW)


def execute(
    target: FakeTarget, *plan: PlanRow, concurrency: int = 2, groups_per_batch: int = 32
) -> Execution:
    return execute_plan(
        target.new_client,  # type: ignore[arg-type]
        plan,
        timeout_s=1.0,
        concurrency=concurrency,
        groups_per_batch=groups_per_batch,
    )


def outcomes(execution: Execution) -> list[tuple[str, int, Outcome, str | None]]:
    return [(r.row.consumer_group, r.row.partition, r.outcome, r.error) for r in execution.results]


@pytest.mark.parametrize(
    ("state", "members", "became"),
    [
        (ConsumerGroupState.STABLE, 1, "classic group became Stable (1 members) before the alter"),
        (ConsumerGroupState.PREPARING_REBALANCING, 0, "classic group became PreparingRebalance (0 members)"),
        # Some brokers describe a KIP-848 group in use as Empty, with its members.
        (ConsumerGroupState.EMPTY, 2, "classic group became Empty (2 members) before the alter"),
    ],
)
def test_a_group_that_became_active_between_plan_and_alter_is_skipped_unaltered(
    state: ConsumerGroupState, members: int, became: str, groups_per_batch: int
) -> None:
    target = FakeTarget({"idle": FakeGroup(), "joined": FakeGroup(state=state, members=members)})
    execution = execute(
        target, row("idle"), row("joined"), row("joined", 1), groups_per_batch=groups_per_batch
    )
    assert [(group, partition, outcome) for group, partition, outcome, _ in outcomes(execution)] == [
        ("idle", 0, Outcome.APPLIED),
        ("joined", 0, Outcome.SKIPPED_ACTIVE_GROUP),
        ("joined", 1, Outcome.SKIPPED_ACTIVE_GROUP),
    ]
    assert all(became in (result.error or "") for result in execution.results[1:])
    assert target.altered == ["idle"]  # no alter was ever sent for the group that joined
    assert execution.stopped_because is None


def test_a_group_the_broker_refuses_as_active_is_skipped(groups_per_batch: int) -> None:
    refused = GroupActiveError("the target refused the alter, group is active: UNKNOWN_MEMBER_ID")
    target = FakeTarget({"raced": FakeGroup(alter_error=refused)})
    assert outcomes(execute(target, row("raced"), groups_per_batch=groups_per_batch)) == [
        ("raced", 0, Outcome.SKIPPED_ACTIVE_GROUP, str(refused))
    ]


def test_failed_outcomes_are_recorded_per_group_and_never_stop_the_others(groups_per_batch: int) -> None:
    target = FakeTarget(
        {
            "unreadable": FakeGroup(describe_error=KafkaAdminError("cannot describe group unreadable: AUTH")),
            "refused": FakeGroup(alter_error=KafkaAdminError("altering group refused: NOT_AUTHORIZED")),
            "half": FakeGroup(partition_errors={("orders", 1): "alter failed: UNKNOWN_TOPIC_OR_PART: gone"}),
            "fine": FakeGroup(),
        }
    )
    execution = execute(
        target,
        *(row("unreadable"), row("refused"), row("half"), row("half", 1), row("fine")),
        groups_per_batch=groups_per_batch,
    )
    assert outcomes(execution) == [
        ("unreadable", 0, Outcome.FAILED, "group state read failed: cannot describe group unreadable: AUTH"),
        ("refused", 0, Outcome.FAILED, "alter failed: altering group refused: NOT_AUTHORIZED"),
        ("half", 0, Outcome.APPLIED, None),
        ("half", 1, Outcome.FAILED, "alter failed: UNKNOWN_TOPIC_OR_PART: gone"),
        ("fine", 0, Outcome.APPLIED, None),
    ]
    assert execution.stopped_because is None


def test_an_offset_that_reads_back_differently_or_not_at_all_is_verify_failed(groups_per_batch: int) -> None:
    target = FakeTarget(
        {
            # Another committer moved partition 0 right after the alter; partition 1 reads back nothing.
            "moved": FakeGroup(read_back={("orders", 0): CommittedOffset(7)}),
            "unread": FakeGroup(
                read_back_error=KafkaAdminError("cannot read committed offsets of group unread")
            ),
            "half": FakeGroup(
                partition_errors={("orders", 1): "alter failed: OFFSET_METADATA_TOO_LARGE: too large"},
                read_back_error=KafkaAdminError("cannot read committed offsets of group half"),
            ),
        }
    )
    execution = execute(
        target,
        *(row("moved"), row("moved", 1), row("unread"), row("half"), row("half", 1)),
        groups_per_batch=groups_per_batch,
    )
    assert outcomes(execution) == [
        ("moved", 0, Outcome.VERIFY_FAILED, "read back 7 after setting 40"),
        ("moved", 1, Outcome.VERIFY_FAILED, "read back None after setting 40"),
        ("unread", 0, Outcome.VERIFY_FAILED,
         "altered, not verified: the read-back failed: cannot read committed offsets of group unread"),
        ("half", 0, Outcome.VERIFY_FAILED,
         "altered, not verified: the read-back failed: cannot read committed offsets of group half"),
        ("half", 1, Outcome.FAILED, "alter failed: OFFSET_METADATA_TOO_LARGE: too large"),
    ]  # fmt: skip
    moved = execution.results[0]
    assert (moved.applied_offset, moved.read_back_offset, moved.verified) == (40, 7, False)
    assert execution.stopped_because is None


def test_a_target_that_stops_answering_stops_the_run_and_its_client_is_dropped(
    groups_per_batch: int,
) -> None:
    silent = ClusterUnresponsiveError("cannot describe group a: timed out")
    target = FakeTarget({"a": FakeGroup(describe_error=silent), "b": FakeGroup(), "c": FakeGroup()})
    execution = execute(
        target, row("a"), row("b"), row("c"), concurrency=1, groups_per_batch=groups_per_batch
    )
    assert outcomes(execution) == [
        ("a", 0, Outcome.NOT_ATTEMPTED, f"not attempted: {silent}"),
        ("b", 0, Outcome.NOT_ATTEMPTED, f"not attempted: the target stopped answering ({silent})"),
        ("c", 0, Outcome.NOT_ATTEMPTED, f"not attempted: the target stopped answering ({silent})"),
    ]
    assert execution.stopped_because == f"the target stopped answering ({silent})"
    (dropped,) = target.clients
    assert dropped.flushes == 1  # its log lines were handed over when it was dropped


def test_an_alter_left_unanswered_is_unknown(groups_per_batch: int) -> None:
    silent = ClusterUnresponsiveError("altering group a: timed out")
    target = FakeTarget({"a": FakeGroup(alter_error=silent)})
    assert outcomes(execute(target, row("a"), groups_per_batch=groups_per_batch)) == [
        ("a", 0, Outcome.UNKNOWN, f"alter sent, no answer: {silent}")
    ]


def test_every_client_the_run_kept_has_its_logs_flushed_at_the_end(groups_per_batch: int) -> None:
    target = FakeTarget({group: FakeGroup() for group in "abcdef"})
    execution = execute(
        target, *(row(group) for group in "abcdef"), concurrency=3, groups_per_batch=groups_per_batch
    )
    assert {result.outcome for result in execution.results} == {Outcome.APPLIED}
    assert 1 <= len(target.clients) <= 3  # one per worker thread
    assert [client.flushes for client in target.clients] == [1] * len(target.clients)


@dataclass
class SteppedClock:
    """The executor's clock, moved on by the test: the deadline passes at an event, not after a wait."""

    now: float = 1_000.0

    def __call__(self) -> float:
        return self.now


def test_no_group_starts_after_the_deadline_passed_during_the_one_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The deadline passes while group b is altered; b still finishes, c, d and e never start."""
    clock = SteppedClock()
    deadline = clock.now + 60
    described: list[str] = []

    def describe_then_pass_the_deadline_at_b(
        admin: FakeClient, groups: Iterable[str], *, timeout_s: float
    ) -> tuple[dict[str, kafka_admin.GroupDescription], dict[str, KafkaAdminError]]:
        groups = list(groups)
        described.extend(groups)
        if groups == ["b"]:
            clock.now = deadline + 1
        return describe_groups(admin, groups, timeout_s=timeout_s)

    monkeypatch.setattr(kafka_admin, "describe_groups", describe_then_pass_the_deadline_at_b)
    target = FakeTarget({group: FakeGroup() for group in "abcde"})
    plan = [row(group) for group in "abcde"]
    execution = execute_plan(
        target.new_client,
        plan,
        timeout_s=1.0,
        concurrency=1,
        deadline=deadline,
        clock=clock,  # type: ignore[arg-type]
        groups_per_batch=1,
    )
    assert described == ["a", "b"]
    assert target.altered == ["a", "b"]
    late = "not attempted: the overall deadline passed"
    assert outcomes(execution) == [
        ("a", 0, Outcome.APPLIED, None),
        ("b", 0, Outcome.APPLIED, None),
        ("c", 0, Outcome.NOT_ATTEMPTED, late),
        ("d", 0, Outcome.NOT_ATTEMPTED, late),
        ("e", 0, Outcome.NOT_ATTEMPTED, late),
    ]
    assert execution.stopped_because == "the overall deadline passed"


def test_a_deadline_passed_before_the_first_group_starts_none() -> None:
    target = FakeTarget({group: FakeGroup() for group in "ab"})
    execution = execute_plan(
        target.new_client,  # type: ignore[arg-type]
        [row("a"), row("b")],
        timeout_s=1.0,
        concurrency=2,
        deadline=999.0,
        clock=SteppedClock(1_000.0),
    )
    assert target.clients == [] and target.altered == []  # not even a client was made
    assert {result.outcome for result in execution.results} == {Outcome.NOT_ATTEMPTED}
    assert execution.stopped_because == "the overall deadline passed"


def test_a_deadline_passing_during_the_last_group_stops_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = SteppedClock()

    def describe_then_pass_the_deadline(
        admin: FakeClient, groups: Iterable[str], *, timeout_s: float
    ) -> tuple[dict[str, kafka_admin.GroupDescription], dict[str, KafkaAdminError]]:
        clock.now += 120
        return describe_groups(admin, groups, timeout_s=timeout_s)

    monkeypatch.setattr(kafka_admin, "describe_groups", describe_then_pass_the_deadline)
    target = FakeTarget({"only": FakeGroup()})
    execution = execute_plan(
        target.new_client,  # type: ignore[arg-type]
        [row("only")],
        timeout_s=1.0,
        concurrency=1,
        deadline=clock.now + 60,
        clock=clock,
    )
    assert outcomes(execution) == [("only", 0, Outcome.APPLIED, None)]
    assert execution.stopped_because is None


def test_a_batch_is_described_in_one_request_and_no_batch_starts_after_the_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two groups a batch on one worker: the deadline passes while a and b are described; both are
    still applied, c, d and e never start."""
    clock = SteppedClock()
    deadline = clock.now + 60
    described: list[list[str]] = []

    def describe_then_pass_the_deadline(
        admin: FakeClient, groups: Iterable[str], *, timeout_s: float
    ) -> tuple[dict[str, kafka_admin.GroupDescription], dict[str, KafkaAdminError]]:
        described.append(list(groups))
        clock.now = deadline + 1
        return describe_groups(admin, groups, timeout_s=timeout_s)

    monkeypatch.setattr(kafka_admin, "describe_groups", describe_then_pass_the_deadline)
    target = FakeTarget({group: FakeGroup() for group in "abcde"})
    execution = execute_plan(
        target.new_client,  # type: ignore[arg-type]
        [row(group) for group in "abcde"],
        timeout_s=1.0,
        concurrency=1,
        deadline=deadline,
        clock=clock,
        groups_per_batch=2,
    )
    assert described == [["a", "b"]]
    late = "not attempted: the overall deadline passed"
    assert outcomes(execution) == [
        ("a", 0, Outcome.APPLIED, None),
        ("b", 0, Outcome.APPLIED, None),
        ("c", 0, Outcome.NOT_ATTEMPTED, late),
        ("d", 0, Outcome.NOT_ATTEMPTED, late),
        ("e", 0, Outcome.NOT_ATTEMPTED, late),
    ]


def test_an_unanswered_alter_in_a_batch_stops_the_run_before_the_read_backs() -> None:
    """b's alter was answered, a's was not: the run stops, so b is not read back (not verified),
    and its client is dropped."""
    silent = ClusterUnresponsiveError("altering group a: timed out")
    target = FakeTarget({"a": FakeGroup(alter_error=silent), "b": FakeGroup(), "c": FakeGroup()})
    execution = execute(target, row("a"), row("b"), row("c"), concurrency=1, groups_per_batch=2)
    assert outcomes(execution) == [
        ("a", 0, Outcome.UNKNOWN, f"alter sent, no answer: {silent}"),
        ("b", 0, Outcome.VERIFY_FAILED, "altered, not verified: the run was stopping"),
        ("c", 0, Outcome.NOT_ATTEMPTED, f"not attempted: the target stopped answering ({silent})"),
    ]
    assert execution.stopped_because == f"the target stopped answering ({silent})"
    assert target.altered == ["a", "b"]
    (dropped,) = target.clients
    assert dropped.flushes == 1
