"""The cyclic collector is paused for a plan, apply or failover run (offsetlake.cyclic_gc) and is as
it was afterwards, whether the run returned or raised."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from offsetlake import cyclic_gc
from offsetlake.apply.run import ApplyRequest, ApplyResult, run_apply
from offsetlake.errors import InvalidValueError
from tests.unit.test_failover_probe_beside import Story, _failover


@pytest.fixture(autouse=True)
def _collector_restored() -> Iterator[None]:
    was_enabled = gc.isenabled()
    yield
    if was_enabled:
        gc.enable()
    else:
        gc.disable()


class WatchedGold:
    """An empty GoldStore that notes whether the collector ran while gold was read, or raises there."""

    schema = "offsetlake"
    catalog = None
    _EMPTY: ClassVar[dict[str, Any]] = {
        "count_translations": 0, "cluster_health": [], "failover_data_loss": [], "last_applied": {},
        "append_audit": 0, "checkpoint_positions": {},
    }  # fmt: skip

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.collector_enabled: list[bool] = []

    def latest_offsets(self, selection: Any = None) -> list[Any]:
        self.collector_enabled.append(gc.isenabled())
        if self.error is not None:
            raise self.error
        return []

    def __getattr__(self, name: str) -> Any:
        answer = self._EMPTY[name]
        return lambda *args, **kwargs: answer


def test_a_run_reads_gold_with_the_collector_paused_and_restores_it() -> None:
    gc.enable()
    store = WatchedGold()

    result = run_apply(ApplyRequest(dry_run=True, target_bootstrap_servers="localhost:1"), store=store)  # type: ignore[arg-type]

    assert result.gold_rows == 0
    assert store.collector_enabled == [False]
    assert gc.isenabled()


def test_a_run_that_raises_restores_the_collector() -> None:
    gc.enable()
    store = WatchedGold(InvalidValueError("gold refused"))

    with pytest.raises(InvalidValueError, match="gold refused"):
        run_apply(ApplyRequest(dry_run=True, target_bootstrap_servers="localhost:1"), store=store)  # type: ignore[arg-type]

    assert store.collector_enabled == [False]
    assert gc.isenabled()


def test_a_failover_applies_with_the_collector_paused_and_restores_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gc.enable()
    story, collector_enabled = Story(), []
    held_apply = story.apply

    def apply(*args: Any, **kwargs: Any) -> ApplyResult:
        collector_enabled.append(gc.isenabled())
        return held_apply(*args, **kwargs)

    story.apply = apply  # type: ignore[method-assign]

    _failover(tmp_path, monkeypatch, story, source_answers=False)

    assert collector_enabled == [False]
    assert story.events[-1] == "apply writes"
    assert gc.isenabled()


def test_a_collector_disabled_before_stays_disabled() -> None:
    gc.disable()
    with cyclic_gc.paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_nested_pauses_leave_the_collector_to_the_outermost() -> None:
    gc.enable()
    with cyclic_gc.paused():
        with cyclic_gc.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
