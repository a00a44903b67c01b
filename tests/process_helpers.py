"""Running the command and looking at its process tree from outside, as an operator would with ps."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from offsetlake.local.home import HOME_ENV
from offsetlake.local.processes import descendants


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def alive(pid: int) -> bool:
    """Running, not a zombie."""
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def descendants_once_java_runs(pid: int, *, timeout_s: float = 60, settle_s: float = 3) -> set[int]:
    """Every descendant of ``pid`` seen until one is a JVM (its local Spark), then ``settle_s`` more."""
    seen: set[int] = set()
    deadline = time.monotonic() + timeout_s
    while not any("java" in command_line(child) for child in seen):
        assert time.monotonic() < deadline and alive(pid), f"no JVM under {pid} after {timeout_s}s"
        seen.update(descendants(pid))
        time.sleep(0.2)
    time.sleep(settle_s)
    seen.update(descendants(pid))
    return seen


@contextmanager
def python_child(code: str, *args: str) -> Iterator[subprocess.Popen[str]]:
    """``python -c code args`` with text pipes, for a test to signal instead of its own process;
    killed and reaped if it still runs when the block ends."""
    child = subprocess.Popen(
        [sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        yield child
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()


def offsetlake_cli(home: Path, *args: str, timeout_s: float = 600) -> subprocess.CompletedProcess[str]:
    """``offsetlake ARGS`` in a child process on the home ``home``, as an operator runs it."""
    return subprocess.run(
        [sys.executable, "-m", "offsetlake.cli", *args],
        env={**os.environ, HOME_ENV: str(home)},
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
