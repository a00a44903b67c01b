"""Where a run's time went: phases timed by the code running them, kept in the failover's order,
skipped ones printed ``-``; the report line, and what ``run_failover`` records without a refresh."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from offsetlake.apply.phases import PHASES, PhaseClock, PhaseTimes
from offsetlake.apply.run import ApplyRequest, ApplyResult, ApplyStatus
from offsetlake.cli.render import apply_report, failover_report, phase_line
from offsetlake.failover.run import FailoverRequest, FailoverResult, RefreshMode, run_failover
from offsetlake.local.home import LocalHome
from tests.unit.test_apply_store import EmptyGold


class ClosableEmptyGold(EmptyGold):
    def close(self) -> None:
        self.calls.append("close")


def fake_clock(ticks: list[float]) -> Iterator[float]:
    yield from ticks


def test_phases_are_kept_in_the_failovers_order_and_a_phase_timed_twice_adds_up() -> None:
    ticks = fake_clock([0.0, 1.0, 1.0, 3.0, 3.0, 3.5, 10.0, 10.25])
    clock = PhaseClock(lambda: next(ticks))
    with clock.phase("gold"):
        pass
    with clock.phase("tail"):
        pass
    with clock.phase("plan"):
        pass
    with clock.phase("gold"):  # the data loss, read after the tail
        pass

    times = clock.times(expected=("target", "plan", "audit"))

    assert times.phases == (("gold", 1.25), ("tail", 2.0), ("target", None), ("plan", 0.5), ("audit", None))
    assert times.total == 3.75


def test_an_unknown_phase_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown phase 'wait'"), PhaseClock().phase("wait"):
        pass


def test_the_failovers_phases_come_before_the_applys_and_gold_adds_up() -> None:
    failover = PhaseTimes((("probe", 5.0), ("refresh", None), ("gold", 0.1)))
    applied = PhaseTimes((("gold", 0.1), ("tail", 0.4), ("apply+verify", None)))

    merged = failover + applied

    assert [name for name, _ in merged.phases] == ["probe", "refresh", "gold", "tail", "apply+verify"]
    assert dict(merged.phases)["gold"] == pytest.approx(0.2)
    assert [name for name in PHASES if name in dict(merged.phases)] == [name for name, _ in merged.phases]


def test_the_line_prints_skipped_phases_as_a_dash_and_the_total() -> None:
    times = PhaseTimes((("probe", 5.0), ("refresh", None), ("gold", 0.2), ("apply+verify", 1.1)))

    assert (
        phase_line(times) == "time by phase: probe 5.0s, refresh -, gold 0.2s, apply+verify 1.1s; total 6.3s"
    )


def applied(phases: PhaseTimes, *, dry_run: bool) -> ApplyResult:
    request = ApplyRequest(dry_run=dry_run)
    return ApplyResult(request, "run", ApplyStatus.OK, "target", "audit", datetime.now(UTC), phases=phases)


def test_the_plan_apply_and_failover_reports_print_the_line() -> None:
    apply_phases = PhaseTimes((("gold", 0.2), ("target", None)))
    line = phase_line(apply_phases)
    for dry_run in (True, False):
        out, _ = apply_report(applied(apply_phases, dry_run=dry_run))
        assert out[-1] == line

    failover = FailoverResult(
        (), None, "--refresh never", applied(apply_phases, dry_run=False), phases=apply_phases
    )
    out, _ = failover_report(failover)
    assert out[-2] == line, "just before the verdict"
    assert out[-1].startswith("FAILOVER")


def test_a_failover_without_a_refresh_records_every_phase_it_has(tmp_path: Path) -> None:
    request = FailoverRequest(
        apply=ApplyRequest(dry_run=False, target_bootstrap_servers="localhost:1"),
        settings=None,
        home=LocalHome(tmp_path),
        refresh=RefreshMode.NEVER,
    )

    store = ClosableEmptyGold()

    result = run_failover(request, gold_store=lambda: store)  # type: ignore[arg-type,return-value]

    names = [name for name, _ in result.phases.phases]
    assert names == ["probe", "refresh", "gold", "target", "plan", "apply+verify", "audit"]
    seconds = dict(result.phases.phases)
    assert seconds["refresh"] is None, "no refresh ran"
    assert seconds["probe"] is not None and seconds["gold"] is not None
    assert all(seconds[name] is None for name in names[3:]), "gold is empty: nothing after it ran"
    assert result.apply.phases.phases[0][0] == "gold"
    assert store.calls[-1] == "close"
