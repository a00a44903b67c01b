"""The target's groups are read ahead, beside the checkpoint tail, once gold's rows are known; the plan's
target read completes that read (issue 50: at 46,000 group-partitions the target read and the tail
were ~6 s and ~5 s one after the other). A run that reads nothing beside it, or stops before, does
not start it: an unreachable target would hold the run's end for a request timeout."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pytest

from offsetlake.apply import run as apply_run
from offsetlake.apply.planner import TargetGroup
from offsetlake.apply.run import ApplyRequest, run_apply
from offsetlake.apply.target_state import TargetGroups
from offsetlake.contract.gold import GoldOffset, GoldTableError
from offsetlake.kafka.checkpoint_tail import CheckpointTail
from offsetlake.mirror.policy import ReplicationPolicy
from tests.unit.test_gold_whole import T0, Gold

HELD_S = 10.0
"""How long the tail waits for the read ahead to start before the test fails (an event, not a bound
the test measures)."""

GOLD = GoldOffset("east", "app", "east.orders", 0, 15, T0, "offset_sync", T0, upstream_offset=20)
REQUEST = ApplyRequest(
    dry_run=True, target_bootstrap_servers="target:9092", checkpoint_tail=ReplicationPolicy()
)


class _PlannedError(Exception):
    """Raised where the run reads the whole target: carries what was read ahead."""

    def __init__(self, read_before: TargetGroups | None) -> None:
        super().__init__()
        self.read_before = read_before


@contextmanager
def _no_admin(_config: object) -> Iterator[None]:
    yield None


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The target's reads faked at run_apply's imports; the tail waits until the read ahead began."""
    seen: dict[str, Any] = {}
    reading_ahead = threading.Event()

    def read_target_groups(_admin: object, keys: set[Any], **_: object) -> TargetGroups:
        seen["ahead"] = set(keys)
        reading_ahead.set()
        return TargetGroups(frozenset(keys), {"app": TargetGroup("Empty")})

    def read_checkpoint_tail(*_: object, **__: object) -> CheckpointTail:
        seen["beside"] = reading_ahead.wait(HELD_S)
        return CheckpointTail((), ("east.checkpoints.internal",), 0.1)

    def read_target_state(_admin: object, keys: set[Any], **kwargs: Any) -> None:
        seen["whole"] = set(keys)
        raise _PlannedError(kwargs["read_before"])

    monkeypatch.setattr(apply_run.clients, "admin", _no_admin)
    monkeypatch.setattr(apply_run, "read_target_groups", read_target_groups)
    monkeypatch.setattr(apply_run, "read_checkpoint_tail", read_checkpoint_tail)
    monkeypatch.setattr(apply_run, "read_target_state", read_target_state)
    return seen


def _gold(*offsets: GoldOffset) -> Gold:
    store = Gold()
    store.answers |= {
        "latest_offsets": list(offsets), "count_translations": len(offsets), "failover_data_loss": [],
        "checkpoint_positions": {},
    }  # fmt: skip
    return store


def test_the_targets_groups_are_read_while_the_tail_is_read_and_completed_by_the_plans_read(
    reads: dict[str, Any],
) -> None:
    with pytest.raises(_PlannedError) as planned:
        run_apply(REQUEST, store=_gold(GOLD))  # type: ignore[arg-type]

    assert reads["beside"], "the tail was read before the target's groups were read ahead"
    assert reads["ahead"] == reads["whole"] == {GOLD.key}
    assert planned.value.read_before == TargetGroups(frozenset({GOLD.key}), {"app": TargetGroup("Empty")})


def test_nothing_is_read_ahead_without_a_read_beside_it(reads: dict[str, Any]) -> None:
    with pytest.raises(_PlannedError) as planned:
        run_apply(replace(REQUEST, checkpoint_tail=None), store=_gold(GOLD))  # type: ignore[arg-type]

    assert "ahead" not in reads
    assert planned.value.read_before is None
    assert reads["whole"] == {GOLD.key}


def test_nothing_is_read_ahead_for_a_run_refused_before_its_reads(reads: dict[str, Any]) -> None:
    """Gold emptied while bronze holds checkpoints: refused at once (the test of the refusal:
    tests/unit/test_gold_whole.py), the target not asked."""
    store = _gold()
    store.answers["checkpoint_positions"] = {("east.checkpoints.internal", 0): 7}

    with pytest.raises(GoldTableError):
        run_apply(REQUEST, store=store)  # type: ignore[arg-type]

    assert reads == {}
