"""A failover stays failed over: the groups it placed are held until an operator resumes them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from offsetlake.apply.audit import Mode, Stage, failover_holds
from offsetlake.apply.planner import Selection

T0 = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def failover(group: str, minutes: int, *, verified: bool | None = True, outcome: str = "applied") -> tuple:
    return (group, Mode.FAILOVER.value, Stage.RESULT.value, verified, outcome, at(minutes))


def resume(group: str, minutes: int) -> tuple:
    return (group, Mode.RESUME.value, Stage.PLAN.value, None, None, at(minutes))


def test_a_group_a_failover_placed_is_held_until_a_later_resume() -> None:
    noop = failover("b", 1, verified=None, outcome="noop")
    rows = [failover("a", 1), noop, resume("a", 2), failover("c", 5), resume("c", 3)]
    assert failover_holds(rows, None) == {"b": at(1), "c": at(5)}
    assert failover_holds(rows, Selection(groups="c")) == {"c": at(5)}


def test_what_a_failover_refused_or_only_planned_is_not_held() -> None:
    refused = failover("a", 1, verified=None, outcome="skip_active_group")
    planned = ("b", Mode.FAILOVER.value, Stage.PLAN.value, None, None, at(1))
    unverified = failover("c", 1, verified=False, outcome="verify_failed")
    assert failover_holds([refused, planned, unverified], None) == {}


@given(st.lists(st.tuples(st.sampled_from(["failover", "resume"]), st.integers(0, 20)), max_size=8))
def test_held_exactly_when_the_newest_failover_is_after_the_newest_resume(
    events: list[tuple[str, int]],
) -> None:
    rows = [failover("g", minute) if kind == "failover" else resume("g", minute) for kind, minute in events]
    failovers = [minute for kind, minute in events if kind == "failover"]
    resumes = [minute for kind, minute in events if kind == "resume"]
    held = bool(failovers) and (not resumes or max(resumes) < max(failovers))
    assert failover_holds(rows, None) == ({"g": at(max(failovers))} if held else {})
