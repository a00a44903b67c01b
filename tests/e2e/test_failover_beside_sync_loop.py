"""A failover goes first: ``offsetlake failover`` beside ``offsetlake pipeline run --every`` on the same home.

Issue 31: with the local sync loop running (the documented local continuous mode) and the source
then dead, the failover exited 1 in seconds, "local home ... is in use", and applied nothing. Here
a private pair, the MM2 simulator's checkpoints and offset syncs, a loop updating every second on
the failover's home; once it has built gold the source is paused (SIGSTOP), and while the loop's
next update runs the failover asks it to stand aside (local/locks.py), applies every partition,
and the loop resumes afterwards, saying so.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from offsetlake.local.home import LocalHome
from offsetlake_dev.local_cluster import paused
from tests.e2e.replicated_pair import GROUPS, PARTITIONS, Pair, replicated_pair

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

COMMAND_TIMEOUT_S = 600
FIRST_GOLD_TIMEOUT_S = 900
"""The loop's warm server start and first full updates, on a busy 2-core machine."""


@dataclass
class Loop:
    """``pipeline run --every 1s`` in the background; its output lines as they come."""

    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)

    def wait_for(self, needle: str, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = [line for line in self.lines if needle in line]
            if found:
                return found[0]
            assert self.process.poll() is None, "".join(self.lines)[-4000:]
            time.sleep(0.5)
        raise AssertionError(
            f"no {needle!r} from the loop after {timeout_s:g}s: {''.join(self.lines)[-4000:]}"
        )


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Pair]:
    if os.environ.get("OFFSETLAKE_TEST_SOURCE_BOOTSTRAP"):
        pytest.skip("pausing the source needs the local broker's process; a real pair cannot be paused here")
    with replicated_pair(tmp_path) as replicated:
        yield replicated


@pytest.fixture
def loop(pair: Pair) -> Iterator[Loop]:
    process = subprocess.Popen(
        [sys.executable, "-m", "offsetlake.cli", "pipeline", "run", "--every", "1s", *pair.flags()],
        env=pair.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    running = Loop(process)

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            running.lines.append(line)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        yield running
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(timeout=10)


def test_a_failover_beside_the_sync_loop_goes_first_and_applies_every_partition(
    pair: Pair, loop: Loop
) -> None:
    loop.wait_for(": completed", FIRST_GOLD_TIMEOUT_S)  # gold built, both clusters up
    expected = {
        (row["consumer_group"], row["partition"]): row["downstream_offset"]
        for row in pair.rows("latest_offsets")
        if row["topic"] == pair.remote_topic and row["consumer_group"] in GROUPS
    }
    assert set(expected) == {(group, p) for group in GROUPS for p in range(PARTITIONS)}
    with paused(pair.clusters.source):
        deadline = time.monotonic() + 120
        while not LocalHome(pair.home).run_lock.read_text().strip():  # the loop's next update is running
            assert time.monotonic() < deadline, "".join(loop.lines)[-4000:]
            time.sleep(0.1)
        started = time.monotonic()
        run = subprocess.run(
            [sys.executable, "-m", "offsetlake.cli", "failover", *pair.flags(), "--probe-timeout", "5"],
            env=pair.env(),
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            check=False,
        )
        seconds = time.monotonic() - started
    report = run.stdout + run.stderr
    print(f"\nfailover beside the sync loop, source dead: {seconds:.1f}s\n{run.stdout}")  # with -s
    assert run.returncode == 0, report[-4000:] + "".join(loop.lines)[-4000:]
    assert f"the local sync loop (process {loop.process.pid}) stood aside in" in run.stdout
    assert f"{len(expected)} partitions: applied {len(expected)}" in run.stdout, report[-4000:]
    for group in GROUPS:
        assert pair.committed(group) == {p: expected[(group, p)] for p in range(PARTITIONS)}, group
    loop.wait_for("is done; resuming updates", 120)
    aside = loop.wait_for("standing aside for process", 1)
    assert "(a failover)" in aside
    assert loop.process.poll() is None, "the loop goes on after the failover"
