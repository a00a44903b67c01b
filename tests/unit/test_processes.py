"""run_group: a child's whole process tree ends with the run, on exit, on a deadline and on SIGTERM."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from offsetlake.errors import StopSignalError
from offsetlake.processes import interruptible, run_group

# A parent that starts a grandchild (like spark-pipelines starting the Spark Connect JVM) and
# prints both PIDs, then waits.
TREE = (
    "import subprocess, sys, time\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
    "print(child.pid, flush=True)\n"
    "time.sleep(float(sys.argv[1]))\n"
)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "zombie" not in state


def _run(seconds: float, timeout_s: float | None) -> tuple[list[int], object]:
    pids: list[int] = []
    result = run_group(
        [sys.executable, "-c", TREE, str(seconds)],
        cwd=Path.cwd(),
        env=os.environ,
        on_line=lambda line: pids.append(int(line)),
        timeout_s=timeout_s,
        grace_s=2,
    )
    return pids, result


def test_a_normal_exit_leaves_no_grandchild() -> None:
    pids, result = _run(0.2, timeout_s=None)
    assert result.exit_code == 0 and not result.timed_out
    assert not _alive(pids[0])


def test_the_deadline_stops_the_whole_tree() -> None:
    started = time.monotonic()
    pids, result = _run(600, timeout_s=1.0)
    assert result.timed_out
    assert time.monotonic() - started < 10
    assert not _alive(pids[0])


def test_sigterm_raises_after_the_tree_is_stopped() -> None:
    pids: list[int] = []

    def on_line(line: str) -> None:
        pids.append(int(line))
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM)).start()

    with pytest.raises(StopSignalError) as raised, interruptible():
        run_group(
            [sys.executable, "-c", TREE, "600"], cwd=Path.cwd(), env=os.environ, on_line=on_line, grace_s=2
        )
    assert raised.value.exit_code == 128 + signal.SIGTERM
    assert not _alive(pids[0])
    assert signal.getsignal(signal.SIGTERM) is not None  # the previous handler is back
