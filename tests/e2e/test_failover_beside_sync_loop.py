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
import re
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
UPDATE_LINE = re.compile(r" update \d+: ")
"""The line the loop prints as each update ends (cli/pipeline.py update_line)."""


@dataclass
class Loop:
    """``pipeline run --every 1s`` in the background; its output lines as they come. Waits are bounded
    by the loop's own progress (updates ended, the loop ended), never by a time."""

    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    ended: bool = False
    arrived: threading.Condition = field(default_factory=threading.Condition)

    def add(self, line: str | None) -> None:
        """A line of output; None once the output ended."""
        with self.arrived:
            if line is None:
                self.ended = True
            else:
                self.lines.append(line)
            self.arrived.notify_all()

    def updates(self) -> int:
        with self.arrived:
            return sum(1 for line in self.lines if UPDATE_LINE.search(line))

    def wait_for(self, needle: str, *, within_updates: int) -> str:
        """The first line with ``needle``; fails once the loop ended, or ``within_updates`` more
        updates ended, without one."""
        with self.arrived:
            first = self.updates()
            while not (found := [line for line in self.lines if needle in line]):
                assert not self.ended, f"the loop ended: {''.join(self.lines)[-4000:]}"
                assert self.updates() - first < within_updates, (
                    f"no {needle!r} in {within_updates} updates: {''.join(self.lines)[-4000:]}"
                )
                self.arrived.wait()
            return found[0]


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
            running.add(line)
        running.add(None)

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
    loop.wait_for(": completed", within_updates=3)  # gold built, both clusters up
    expected = {
        (row["consumer_group"], row["partition"]): row["downstream_offset"]
        for row in pair.rows("latest_offsets")
        if row["topic"] == pair.remote_topic and row["consumer_group"] in GROUPS
    }
    assert set(expected) == {(group, p) for group in GROUPS for p in range(PARTITIONS)}
    with paused(pair.clusters.source):
        first = loop.updates()
        while not LocalHome(pair.home).run_lock.read_text().strip():  # the loop's next update is running
            assert loop.updates() - first < 2 and not loop.ended, "".join(loop.lines)[-4000:]
            time.sleep(0.1)
        run = subprocess.run(
            [sys.executable, "-m", "offsetlake.cli", "failover", *pair.flags(), "--probe-timeout", "5"],
            env=pair.env(),
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            check=False,
        )
    report = run.stdout + run.stderr
    print(f"\nfailover beside the sync loop, source dead:\n{run.stdout}")  # with -s: time by phase
    assert run.returncode == 0, report[-4000:] + "".join(loop.lines)[-4000:]
    assert f"the local sync loop (process {loop.process.pid}) stood aside in" in run.stdout
    assert f"{len(expected)} partitions: applied {len(expected)}" in run.stdout, report[-4000:]
    for group in GROUPS:
        assert pair.committed(group) == {p: expected[(group, p)] for p in range(PARTITIONS)}, group
    loop.wait_for("is done; resuming updates", within_updates=2)
    aside = loop.wait_for("standing aside for process", within_updates=1)
    assert "(a failover)" in aside
    assert loop.process.poll() is None, "the loop goes on after the failover"
