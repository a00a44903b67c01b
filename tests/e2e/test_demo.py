"""`python -m offsetlake_dev demo` (make demo) end to end: exit status and the lines a reader relies on.

Runs in a subprocess, as `make demo` does: the demo starts its own local clusters and its own
Spark session on a private warehouse, which must not collide with this session's `spark` fixture.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.process_helpers import alive, descendants_once_java_runs

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

DEMO_TIMEOUT_S = 600


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    home = tmp_path_factory.mktemp("demo_home")
    environment = {**os.environ, "OFFSETLAKE_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "offsetlake_dev", "demo"],
        capture_output=True,
        text=True,
        env=environment,
        timeout=DEMO_TIMEOUT_S,
        check=False,
    )


def _lines(run: subprocess.CompletedProcess[str]) -> list[str]:
    return run.stdout.splitlines()


def _verification_rows(run: subprocess.CompletedProcess[str]) -> list[list[str]]:
    """The verification table: the block under the "verifying:" step, without header and rule."""
    lines = _lines(run)
    start = next(index for index, line in enumerate(lines) if "] verifying:" in line)
    block = []
    for line in lines[start + 1 :]:
        if line.startswith("["):
            break
        block.append(line.split())
    return block[2:]


def test_demo_passes(demo_run: subprocess.CompletedProcess[str]) -> None:
    assert demo_run.returncode == 0, demo_run.stdout[-4000:] + demo_run.stderr[-4000:]
    assert "RESULT: PASS" in _lines(demo_run)[-2]
    assert "stopping the clusters" in _lines(demo_run)[-1]


def test_every_applied_partition_resumed_without_skipping(demo_run: subprocess.CompletedProcess[str]) -> None:
    rows = _verification_rows(demo_run)
    # two applied groups, 3 orders + 2 payments partitions each; columns end: re-read, skipped, verdict
    assert sorted({row[0] for row in rows}) == ["analytics-caught-up", "billing-far-behind"]
    assert len(rows) == 2 * 5
    assert all(row[-2:] == ["0", "ok"] for row in rows), rows
    assert any("] no record skipped" in line for line in _lines(demo_run))


def test_active_group_is_refused_and_excluded_group_untouched(
    demo_run: subprocess.CompletedProcess[str],
) -> None:
    output = demo_run.stdout
    # the apply job itself refused the live group (its own summary line), and the target confirms it
    assert any(
        "fulfillment-active" in line and "skip_active_group" in line and "applied" not in line
        for line in _lines(demo_run)
    )
    assert "fulfillment-active: refused: active on the target; its target offsets are untouched" in output
    assert "console-consumer-1234: excluded by the group filter; its target offsets are untouched" in output


def test_the_demo_shows_replication_lag_and_what_a_failover_would_lose(
    demo_run: subprocess.CompletedProcess[str],
) -> None:
    lines = _lines(demo_run)
    assert any("replication lag (MM2 has no consumer group" in line for line in lines)
    # One row per source partition the simulator replicated: 3 orders + 2 payments, MM2's position known.
    rows = [line.split() for line in lines]
    lag = [row for row in rows if row[:1] == ["primary"] and "replicating" in row]
    assert sorted((row[1], row[2]) for row in lag) == [
        ("orders", "0"), ("orders", "1"), ("orders", "2"), ("payments", "0"), ("payments", "1")
    ]  # fmt: skip
    assert all(int(row[6]) >= 0 for row in lag), lag  # lag_records: known, never negative
    assert any("data loss if failing over now" in line for line in lines)


def test_progress_lines_show_elapsed_seconds(demo_run: subprocess.CompletedProcess[str]) -> None:
    steps = [line for line in _lines(demo_run) if line.startswith("[")]
    assert len(steps) >= 10
    assert all(line[1:8].strip().endswith("s") for line in steps)


def test_sigterm_during_the_demo_ends_every_process_it_started(tmp_path: Path) -> None:
    demo = subprocess.Popen(
        [sys.executable, "-m", "offsetlake_dev", "demo"],
        env={**os.environ, "OFFSETLAKE_HOME": str(tmp_path)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert demo.stdout is not None
    lines = []
    for line in demo.stdout:  # until the pipeline starts: brokers, spark-pipelines and its JVMs
        lines.append(line)
        if "running the pipeline" in line:
            break
    seen = descendants_once_java_runs(demo.pid, settle_s=5)
    demo.send_signal(signal.SIGTERM)
    out, err = demo.communicate(timeout=120)
    assert demo.returncode == 128 + signal.SIGTERM, "".join(lines) + out + err
    assert "offsetlake_dev demo: interrupted by SIGTERM" in err
    assert len(seen) >= 4, seen  # two brokers, spark-pipelines and its JVM at least
    assert [pid for pid in seen if alive(pid)] == []
