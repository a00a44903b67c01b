"""A failover whose refresh fails or runs out of ``--refresh-timeout`` fails over from gold as it was.

The README promises both: the refresh is bounded, a failed refresh keeps gold as it was (the gold
guard, local/gold_guard.py), the report says so, and the apply still runs, from gold and the
target's checkpoint tail. The engine is a stand-in for ``spark-pipelines`` (as in
test_pipeline_runner.py) that empties ``latest_offsets`` the way the local engine does when an
update fails mid-rewrite, then fails or hangs; the apply is faked at ``run_apply``, so what it
receives (the request, and gold on disk when its store is opened) is recorded.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from offsetlake.apply.run import ApplyRequest, ApplyResult, ApplyStatus
from offsetlake.apply.store import GoldStore
from offsetlake.cli.render import failover_report
from offsetlake.contract.settings import PipelineSettings
from offsetlake.failover import run as failover_run
from offsetlake.failover.run import FailoverRequest, FailoverResult, RefreshMode, run_failover
from offsetlake.local import pipeline_update
from offsetlake.local.home import LocalHome
from offsetlake.mirror.clusters import ClusterEndpoint
from offsetlake.mirror.policy import ReplicationPolicy
from tests.unit.test_phase_times import ClosableEmptyGold

GOLD_BEFORE = b"latest_offsets as the last complete update left it"
FAILED_FLOW = "2026-11-28 02:10:00: Flow 'spark_catalog.offsetlake.latest_offsets' has FAILED."


@dataclass
class Recorded:
    """What the failover did after its refresh, in order: gold as the store found it, the apply."""

    events: list[str] = field(default_factory=list)
    gold_when_opened: bytes | None = None
    apply_request: ApplyRequest | None = None


def _gold_file(home: LocalHome) -> Path:
    return home.schema_dir / "latest_offsets" / "part-00000.parquet"


def _failover(
    home: LocalHome, engine: str, monkeypatch: pytest.MonkeyPatch, **request: Any
) -> tuple[FailoverResult, Recorded]:
    """A failover on ``home`` whose refresh (``--refresh always``) runs ``engine`` (Python source)
    instead of the pipelines CLI; no cluster is probed."""
    script = home.root / "engine.py"
    script.write_text(engine)
    monkeypatch.setattr(pipeline_update, "spark_pipelines_command", lambda *_: [sys.executable, str(script)])
    monkeypatch.setattr(pipeline_update, "target_backlog", lambda *_args, **_kwargs: None)  # no target here
    recorded = Recorded()

    def open_gold() -> GoldStore:
        recorded.events.append("gold opened")
        recorded.gold_when_opened = _gold_file(home).read_bytes()
        return ClosableEmptyGold()  # type: ignore[return-value]

    def fake_apply(apply: ApplyRequest, *, store: GoldStore, **_: object) -> ApplyResult:
        recorded.events.append("apply")
        recorded.apply_request = apply
        return ApplyResult(apply, "run", ApplyStatus.OK, "target", "audit", datetime.now(UTC))

    monkeypatch.setattr(failover_run, "run_apply", fake_apply)
    settings = PipelineSettings(
        target_bootstrap_servers="localhost:1", sources=(ClusterEndpoint("east", "localhost:2"),)
    )
    apply = ApplyRequest(
        dry_run=False, target_bootstrap_servers="localhost:1", checkpoint_tail=ReplicationPolicy()
    )
    failover = FailoverRequest(
        apply=apply, settings=settings, home=home, refresh=RefreshMode.ALWAYS, **request
    )
    return run_failover(failover, gold_store=open_gold), recorded


@pytest.fixture
def home(tmp_path: Path) -> LocalHome:
    """A home whose gold holds one complete table."""
    home = LocalHome(tmp_path / "home")
    _gold_file(home).parent.mkdir(parents=True)
    _gold_file(home).write_bytes(GOLD_BEFORE)
    return home


def _empties_gold_then(home: LocalHome, then: str) -> str:
    """The engine's part: rewrite latest_offsets (a failed update leaves it empty; Parquet files are
    replaced, never written in place), then ``then``."""
    return (
        "import pathlib, sys, time\n"
        f"gold = pathlib.Path({str(_gold_file(home))!r})\n"
        "gold.unlink()\n"
        "gold.write_bytes(b'')\n"
        f"print({FAILED_FLOW!r}, flush=True)\n"
        f"{then}\n"
    )


def test_a_refresh_that_fails_leaves_gold_as_it_was_says_so_and_the_apply_runs_from_gold_and_tail(
    home: LocalHome, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, recorded = _failover(home, _empties_gold_then(home, "sys.exit(1)"), monkeypatch)

    assert result.refresh is not None and not result.refresh.succeeded
    assert "latest_offsets" in result.refresh.restored_tables
    assert recorded.events == ["gold opened", "apply"]  # after the refresh, on gold put back
    assert recorded.gold_when_opened == GOLD_BEFORE
    assert recorded.apply_request is not None and recorded.apply_request.checkpoint_tail is not None
    out, _ = failover_report(result)
    refresh = [line for line in out if line.startswith("refresh:")]
    assert refresh[0].startswith("refresh: FAILED in "), refresh
    assert "flows failed: spark_catalog.offsetlake.latest_offsets" in refresh[0]
    assert refresh[1].startswith("refresh: gold kept as it was before: ") and "latest_offsets" in refresh[1]
    assert result.exit_code == ApplyStatus.OK  # the failover's verdict is the apply's


def test_a_refresh_past_its_timeout_is_stopped_gold_kept_and_the_apply_runs_from_gold_and_tail(
    home: LocalHome, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stand-in never ends on its own: only ``refresh_timeout_s`` can end the refresh."""
    result, recorded = _failover(
        home, _empties_gold_then(home, "time.sleep(3600)"), monkeypatch, refresh_timeout_s=2
    )

    assert result.refresh is not None and not result.refresh.succeeded
    assert result.refresh.explanation.startswith("stopped after the 2s time limit")
    assert "latest_offsets" in result.refresh.restored_tables
    assert recorded.events == ["gold opened", "apply"]
    assert recorded.gold_when_opened == GOLD_BEFORE
    assert recorded.apply_request is not None and recorded.apply_request.checkpoint_tail is not None
    out, _ = failover_report(result)
    refresh = [line for line in out if line.startswith("refresh:")]
    assert refresh[0].startswith("refresh: FAILED in ") and "2s time limit" in refresh[0], refresh
    assert refresh[1].startswith("refresh: gold kept as it was before: ") and "latest_offsets" in refresh[1]
