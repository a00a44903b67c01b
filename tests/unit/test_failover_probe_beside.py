"""A dead source costs a failover no waiting of its own: the apply reads and plans while the probes
are out, and writes nothing (no audit row, no alter) before they decided whether the sources are read.

The probes are stand-ins held on Events (no cluster, no clock): the source's answers only once the
apply asks to write, so the order of what happened says whether the reads waited for the probe and
whether the writes did. The apply's own seam (``run_apply``'s ``before_writes``, between the plan
and its audit) is held by the real ``run_apply`` with the target's reads and the alters faked.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from offsetlake.apply import run as apply_run
from offsetlake.apply.executor import Execution, Outcome, PartitionResult
from offsetlake.apply.planner import Action, PlanRow, TargetGroup, TargetState
from offsetlake.apply.run import ApplyRequest, ApplyResult, ApplyStatus, run_apply
from offsetlake.apply.store import GoldStore
from offsetlake.cli.render import failover_report
from offsetlake.contract.gold import GoldOffset
from offsetlake.contract.settings import PipelineSettings
from offsetlake.failover import run as failover_run
from offsetlake.failover.run import (
    ClusterToProbe,
    FailoverRequest,
    FailoverResult,
    RefreshMode,
    run_failover,
)
from offsetlake.kafka.admin import ClusterProbe
from offsetlake.local.home import LocalHome
from offsetlake.mirror.clusters import ClusterEndpoint
from offsetlake.mirror.positions import LogBounds
from tests.unit.test_phase_times import ClosableEmptyGold

HELD_S = 10.0
"""Only breaks a deadlock: a failover that waits for the probe before reading never lets it go."""


@dataclass
class Story:
    """What happened, in order, from every thread."""

    events: list[str] = field(default_factory=list)
    asking_to_write: threading.Event = field(default_factory=threading.Event)

    def probe(self, *, source_answers: bool) -> Callable[..., ClusterProbe]:
        """The target answers at once; the source answers (or gives up) once the apply asks to write."""

        def probe_cluster(config: dict[str, str], *, timeout_s: float) -> ClusterProbe:
            if config["bootstrap.servers"] == "target:9092":
                return ClusterProbe(True, None, 0.0)
            self.asking_to_write.wait(HELD_S)
            self.events.append("source probe answered")
            return ClusterProbe(source_answers, None if source_answers else "timed out", timeout_s)

        return probe_cluster

    def apply(
        self, apply: ApplyRequest, *, store: GoldStore, before_writes: Any = None, **_: object
    ) -> ApplyResult:
        """run_apply's order: read gold and the target, plan, then (after the hook) write."""
        self.events.append("apply reads and plans" + (" with the sources" if apply.live_sources else ""))
        if before_writes is not None:
            self.asking_to_write.set()
            before_writes()
        self.events.append("apply writes")
        return ApplyResult(apply, "run", ApplyStatus.OK, "target", "audit", datetime.now(UTC))


def _failover(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    story: Story,
    *,
    source_answers: bool,
    grace_s: float = 0.0,
) -> FailoverResult:
    """A failover whose source probe ``story`` holds; ``grace_s``: PROBE_GRACE_S (0: the apply
    starts beside any probe still out)."""
    monkeypatch.setattr(failover_run, "PROBE_GRACE_S", grace_s)
    monkeypatch.setattr(failover_run, "probe_cluster", story.probe(source_answers=source_answers))
    monkeypatch.setattr(failover_run, "run_apply", story.apply)
    monkeypatch.setattr(failover_run, "_refresh", lambda *_: story.events.append("refresh"))

    def open_gold() -> GoldStore:
        story.events.append("gold opened")
        return ClosableEmptyGold()  # type: ignore[return-value]

    settings = PipelineSettings(
        target_bootstrap_servers="target:9092", sources=(ClusterEndpoint("east", "east:9092"),)
    )
    request = FailoverRequest(
        apply=ApplyRequest(dry_run=False, target_bootstrap_servers="target:9092"),
        settings=settings,
        home=LocalHome(tmp_path),
        refresh=RefreshMode.AUTO,
        clusters=(
            ClusterToProbe("dr", "target", {"bootstrap.servers": "target:9092"}),
            ClusterToProbe("east", "source", {"bootstrap.servers": "east:9092"}),
        ),
        probe_timeout_s=10.0,
    )
    return run_failover(request, gold_store=open_gold)


def test_with_the_source_dead_the_apply_reads_and_plans_before_the_probe_answers_and_writes_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    story = Story()

    result = _failover(tmp_path, monkeypatch, story, source_answers=False)

    assert story.events == [
        "gold opened",
        "apply reads and plans",
        "source probe answered",
        "apply writes",
    ]
    assert result.refresh is None
    assert result.refresh_skipped is not None and result.refresh_skipped.startswith(
        "source east did not answer"
    )
    assert result.probe_beside is not None
    assert result.probe_beside.startswith("probe: 10.0s in all, beside the apply's reads and plan; ")
    out, _ = failover_report(result)
    assert (
        out.index(result.probe_beside)
        == out.index("cluster east (source): NOT ANSWERING now (10.0s): timed out") + 1
    )
    assert [name for name, _ in result.phases.phases][:2] == ["probe", "refresh"]


def test_when_every_cluster_answers_after_all_the_reads_are_dropped_and_the_apply_reads_the_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    story = Story()

    result = _failover(tmp_path, monkeypatch, story, source_answers=True)

    assert story.events == [
        "gold opened",
        "apply reads and plans",
        "source probe answered",  # every cluster answered: nothing written, the sources are read
        "gold opened",
        "apply reads and plans with the sources",
        "apply writes",
    ]
    live = result.apply.request.live_sources
    assert live is not None and [(s.alias, s.config) for s in live.sources] == [
        ("east", {"bootstrap.servers": "east:9092"})
    ]
    assert result.refresh is None
    assert result.refresh_skipped is not None and result.refresh_skipped.startswith("every cluster answered")
    assert result.probe_beside is not None and "(dropped: every cluster answered" in result.probe_beside


def test_when_the_probes_decide_at_once_the_failover_runs_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The source refuses at once: the decision is known before any read, so the apply writes freely."""
    story = Story()
    story.asking_to_write.set()  # the source's probe is not held

    result = _failover(tmp_path, monkeypatch, story, source_answers=False, grace_s=HELD_S)

    assert "refresh" not in story.events
    assert story.events[-2:] == ["apply reads and plans", "apply writes"]
    assert result.refresh is None


# The seam in run_apply: the hook runs after the target's reads and the plan, before any write.

NOW = datetime.now(UTC)


class OneTranslation:
    """A GoldStore with one fresh translation; records what the run asked and wrote."""

    schema = "offsetlake"
    catalog = None

    def __init__(self, events: list[str]) -> None:
        self.events = events

    def latest_offsets(self, *_: object) -> list[GoldOffset]:
        return [GoldOffset("east", "app", "orders", 0, 5, NOW, "checkpoint", NOW)]

    def append_audit(self, records: list[Any]) -> int:
        self.events.append("audit written")
        return len(records)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        answers: dict[str, Any] = {
            "cluster_health": [], "failover_data_loss": [], "last_applied": {}, "mapping_conflicts": {},
            "failover_holds": {}, "checkpoint_positions": {},
        }  # fmt: skip
        return lambda *_args, **_kwargs: answers[name]


@contextmanager
def no_admin(_config: object) -> Iterator[None]:
    yield None


@pytest.fixture
def seam(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The target's reads and the alters faked at run_apply's imports."""
    events: list[str] = []

    def read_target_state(*_: object, **__: object) -> TargetState:
        events.append("target read")
        return TargetState({"app": TargetGroup("Empty")}, {("orders", 0): LogBounds(0, 10)}, {"orders": 1})

    def execute_plan(_admin: object, plan: tuple[PlanRow, ...], **_: object) -> Execution:
        events.append("altered")
        return Execution(
            tuple(
                PartitionResult(row, Outcome.APPLIED, row.planned_offset, row.planned_offset, None, NOW)
                for row in plan
            )
        )

    monkeypatch.setattr(apply_run.clients, "admin", no_admin)
    monkeypatch.setattr(apply_run, "read_target_state", read_target_state)
    monkeypatch.setattr(apply_run, "execute_plan", execute_plan)
    return events


REQUEST = ApplyRequest(dry_run=False, target_bootstrap_servers="target:9092", keep_alive_fraction=None)


def test_run_apply_calls_its_hook_after_the_plan_and_before_any_write(seam: list[str]) -> None:
    result = run_apply(REQUEST, store=OneTranslation(seam), before_writes=lambda: seam.append("hook"))  # type: ignore[arg-type]

    assert [row.action for row in result.plan] == [Action.APPLY]
    assert seam == ["target read", "hook", "audit written", "altered", "audit written"]
    assert result.status is ApplyStatus.OK


def test_a_hook_that_raises_leaves_nothing_written(seam: list[str]) -> None:
    class DroppedError(Exception):
        pass

    def drop() -> None:
        raise DroppedError

    with pytest.raises(DroppedError):
        run_apply(REQUEST, store=OneTranslation(seam), before_writes=drop)  # type: ignore[arg-type]

    assert seam == ["target read"]
