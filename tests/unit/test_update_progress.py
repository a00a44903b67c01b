"""Progress while a pipeline update runs (issue 36 item 5): pure, on recorded spark-pipelines output."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest

from offsetlake.cli.failover import shown_during_refresh
from offsetlake.contract.settings import PipelineSettings
from offsetlake.local import pipeline_update
from offsetlake.local.home import LocalHome
from offsetlake.local.pipeline_update import run_pipeline
from offsetlake.local.update_progress import FLOW_LAYERS, UpdateProgress, is_progress
from offsetlake.mirror.clusters import ClusterEndpoint

RECORDED = Path(__file__).parent / "recorded"
RESTARTED = RECORDED / "update_with_a_restarted_flow.log"


def _progress(path: Path) -> list[tuple[str, str]]:
    """(the event that made a progress line, that line) for each progress line of a recorded run."""
    tracker = UpdateProgress()
    made = []
    for line in path.read_text(encoding="utf-8").splitlines():
        progress = tracker.feed(line + "\n")
        if progress is not None:
            made.append((line, progress))
    return made


def test_each_flow_that_completes_or_fails_says_how_far_the_update_is() -> None:
    made = _progress(RESTARTED)
    assert all(" has COMPLETED." in event or " has FAILED." in event for event, _ in made)
    assert len(made) == 24  # 22 flows COMPLETED, bronze_checkpoints FAILED and COMPLETED again
    assert made[0][1] == "progress: 1/22 flows done (bronze 1/6, silver 0/8, gold 0/8), 46 s"
    assert made[-1][1] == "progress: 22/22 flows done (bronze 6/6, silver 8/8, gold 8/8), 83 s"


def test_a_flow_that_failed_after_completing_is_not_done_until_it_completes_again() -> None:
    made = [line for _, line in _progress(RESTARTED)]
    assert made[1] == "progress: 0/22 flows done, 1 failed (bronze 0/6, silver 0/8, gold 0/8), 46 s"
    assert made[7] == "progress: 6/22 flows done (bronze 2/6, silver 4/8, gold 0/8), 53 s"


def test_flows_outside_the_selection_are_not_counted() -> None:
    """The failover's refresh: 13 flows QUEUED, 9 EXCLUDED; quarantine FAILED on a graph error."""
    made = [line for _, line in _progress(RECORDED / "selection_on_a_fresh_home.log")]
    assert made[0] == "progress: 1/13 flows done (bronze 1/4, silver 0/6, gold 0/3), 106 s"
    assert made[-1] == "progress: 8/13 flows done, 1 failed (bronze 4/4, silver 4/6, gold 0/3), 115 s"


def test_an_event_printed_twice_makes_one_progress_line() -> None:
    tracker = UpdateProgress()
    queued = "2026-11-21 07:40:02: Flow spark_catalog.offsetlake.bronze_checkpoints is QUEUED."
    completed = "2026-11-21 07:40:08: Flow spark_catalog.offsetlake.bronze_checkpoints has COMPLETED."
    assert tracker.feed(queued) is None
    assert tracker.feed(completed) == "progress: 1/1 flows done (bronze 1/1), 6 s"
    assert tracker.feed(completed) is None


def test_layers_follow_the_lineage() -> None:
    assert FLOW_LAYERS["bronze_checkpoints"] == FLOW_LAYERS["k2k_tracing_lookups"] == "bronze"
    assert FLOW_LAYERS["decoded_checkpoints"] == FLOW_LAYERS["silver_checkpoints"] == "silver"
    assert FLOW_LAYERS["translation_observations"] == FLOW_LAYERS["latest_group_offsets"] == "gold"


def test_the_update_echoes_progress_lines_as_flows_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stand-in for the pipelines CLI prints the recorded run; echo gets each progress line
    right after the event that made it."""
    script = tmp_path / "engine.py"
    script.write_text(f"print(open({str(RESTARTED)!r}).read(), flush=True)\n")
    monkeypatch.setattr(pipeline_update, "spark_pipelines_command", lambda *_: [sys.executable, str(script)])
    settings = PipelineSettings(
        target_bootstrap_servers="localhost:1", sources=(ClusterEndpoint("a", "localhost:2"),)
    )
    echoed: list[str] = []
    result = run_pipeline(settings, LocalHome.resolve(tmp_path / "home"), echo=echoed.append, timeout_s=120)
    assert result.succeeded
    progress = [(before, line) for before, line in itertools.pairwise(echoed) if is_progress(line)]
    assert [line for _, line in progress] == [line for _, line in _progress(RESTARTED)]
    assert all(" has COMPLETED." in event or " has FAILED." in event for event, _ in progress)


def test_the_failovers_refresh_shows_progress_lines_but_not_every_event() -> None:
    assert shown_during_refresh("progress: 7/21 flows done (bronze 5/5, silver 2/8, gold 0/8), 41 s")
    assert shown_during_refresh("2026-11-25 22:44:43: Run is COMPLETED.")
    running = "2026-11-25 22:43:53: Flow spark_catalog.offsetlake.quarantine is RUNNING."
    assert not shown_during_refresh(running)
