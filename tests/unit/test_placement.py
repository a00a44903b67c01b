"""Every partition a source group committed is placed or refused, never left to auto.offset.reset."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from offsetlake.apply.placement import (
    KnownPartition,
    TopicRouting,
    partial_groups,
    plan_untranslated,
    untranslated_partitions,
)
from offsetlake.apply.planner import (
    Action,
    CommittedOffset,
    Guards,
    LogBounds,
    Selection,
    TargetGroup,
    TargetState,
    Untranslated,
)
from offsetlake.contract.gold import GoldOffset
from offsetlake.k2k.routing import TracingRoute
from offsetlake.kafka.group_offsets import GroupOffset
from offsetlake.mirror.policy import ReplicationPolicy

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
MM2 = TopicRouting(ReplicationPolicy(), "dr")


def snapshot(group: str, topic: str, partition: int, offset: int, at: datetime = NOW) -> GroupOffset:
    return GroupOffset(group, "Empty", topic, partition, offset, "meta", at)


def known(partition: int = 0, offset: int = 0, group: str = "app") -> KnownPartition:
    return KnownPartition("east", group, "east.orders", partition, "orders", offset, NOW, "meta")


def state(
    committed: dict[int, int] | None = None, *, group_state: str = "Empty", bounds: tuple[int, int] = (5, 9)
) -> TargetState:
    return TargetState(
        {
            "app": TargetGroup(
                group_state,
                committed={("east.orders", p): CommittedOffset(o) for p, o in (committed or {}).items()},
            )
        },
        {("east.orders", p): LogBounds(*bounds) for p in range(3)},
        {"east.orders": 3},
    )


def guards(**kwargs: object) -> Guards:
    return Guards(reference_time=NOW, **kwargs)  # type: ignore[arg-type]


def test_routing_names_a_topic_as_the_pipeline_does() -> None:
    routing = TopicRouting(ReplicationPolicy(), "dr", (TracingRoute("west", "{topic}.copy"),))
    assert routing.target_topic("east", "orders") == "east.orders"
    assert routing.target_topic("east", "dr.orders") == "orders"  # failback: renameTopicPartition
    assert routing.target_topic("west", "orders") == "orders.copy"  # K2K's route
    assert TopicRouting(ReplicationPolicy(kind="identity")).target_topic("east", "orders") == "orders"


def test_the_untranslated_partitions_are_the_snapshots_no_gold_row_covers() -> None:
    snapshots = {
        "east": [
            snapshot("app", "orders", 0, 0),  # offset 0, first records filtered: no translation
            snapshot("app", "orders", 1, 40),  # translated by gold
            snapshot("app", "orders", 2, -1),  # no commit on this partition
            snapshot("other", "orders", 0, 7),  # not selected
        ]
    }
    gold = [GoldOffset("east", "app", "east.orders", 1, 33, NOW, "checkpoint")]
    found = untranslated_partitions(snapshots, MM2, gold, Selection(groups="app"))
    assert found == [KnownPartition("east", "app", "east.orders", 0, "orders", 0, NOW, "meta")]


def test_two_sources_naming_one_partition_give_the_newest_snapshot() -> None:
    identity = TopicRouting(ReplicationPolicy(kind="identity"))
    older, newer = snapshot("app", "t", 0, 3, NOW - timedelta(minutes=5)), snapshot("app", "t", 0, 9)
    (found,) = untranslated_partitions({"a": [newer], "b": [older]}, identity, [], Selection())
    assert (found.source_cluster, found.upstream_offset) == ("a", 9)


def test_an_untranslated_partition_is_placed_at_the_log_start_with_its_rereads_bounded() -> None:
    (row,) = plan_untranslated([known()], state(), guards())
    assert (row.action, row.planned_offset, row.translated_offset, row.method) == (
        Action.PLACE_AT_LOG_START, 5, None, "untranslated",
    )  # fmt: skip
    assert row.action.alters and row.action.places
    assert "re-reads at most the 4 records" in row.reason and "east's orders[0] offset 0" in row.reason
    assert row.metadata == "meta"


def test_a_group_behind_the_log_start_is_moved_up_to_it_and_one_there_is_left() -> None:
    (behind,) = plan_untranslated([known()], state({0: 2}), guards())
    assert (behind.action, behind.planned_offset) == (Action.PLACE_AT_LOG_START, 5)
    (there,) = plan_untranslated([known()], state({0: 5}), guards())
    assert there.action is Action.NOOP


def test_a_position_on_the_target_no_one_can_vouch_for_is_refused_unless_rewinds_are_allowed() -> None:
    (row,) = plan_untranslated([known()], state({0: 8}), guards())
    assert (row.action, row.planned_offset) == (Action.SKIP_UNTRANSLATED, 5)
    assert "--allow-rewind" in row.reason
    (rewound,) = plan_untranslated([known()], state({0: 8}), guards(allow_rewind=True))
    assert (rewound.action, rewound.records_reread) == (Action.PLACE_AT_LOG_START, 3)


def test_refusals_of_an_untranslated_partition() -> None:
    refuse = guards(untranslated=Untranslated.REFUSE)
    assert plan_untranslated([known()], state(), refuse)[0].action is Action.SKIP_UNTRANSLATED
    active = plan_untranslated([known()], state(group_state="Stable"), guards())[0]
    assert active.action is Action.SKIP_ACTIVE_GROUP
    missing = plan_untranslated([known(partition=3)], state(), guards())[0]
    assert missing.action is Action.SKIP_MISSING_TOPIC and "has 3" in missing.reason
    unread = plan_untranslated([known()], state(), guards(unread_sources={"east": "no checkpoints topic"}))
    assert unread[0].action is Action.SKIP_TAIL_UNREAD


@settings(max_examples=200)
@given(
    st.tuples(
        st.lists(st.tuples(st.integers(0, 3), st.integers(0, 20)), max_size=6, unique_by=lambda p: p[0]),
        st.dictionaries(st.integers(0, 3), st.integers(0, 20), max_size=4),
        st.integers(0, 10),
        st.integers(0, 10),
    ),
    st.booleans(),
    st.sampled_from(["Empty", "Stable"]),
)
def test_a_placed_partition_never_skips_what_the_target_holds(
    scenario: tuple[list[tuple[int, int]], dict[int, int], int, int], allow_rewind: bool, group_state: str
) -> None:
    """Whatever the target holds, a placement lands at its log start, never past it: no record the
    partition still holds is skipped; and every known partition gets exactly one row."""
    partitions, committed, start, held = scenario
    partitions_known = [known(partition, offset) for partition, offset in partitions]
    target = TargetState(
        {
            "app": TargetGroup(
                group_state, committed={("east.orders", p): CommittedOffset(o) for p, o in committed.items()}
            )
        },
        {("east.orders", p): LogBounds(start, start + held) for p in range(3)},
        {"east.orders": 3},
    )
    rows = plan_untranslated(partitions_known, target, guards(allow_rewind=allow_rewind))
    assert [row.key for row in rows] == [partition.key for partition in partitions_known]
    for row in rows:
        if row.action.alters:
            assert row.planned_offset == start
            assert group_state == "Empty"
            assert allow_rewind or row.current_offset is None or row.current_offset <= start


def test_groups_with_checkpoints_on_only_some_partitions_are_counted() -> None:
    gold = [
        GoldOffset("east", "a", "east.orders", 0, 1, NOW),
        *(GoldOffset("east", "b", "east.orders", p, 1, NOW) for p in range(3)),
    ]
    assert partial_groups(gold, state()) == 1
