"""Looking at a command's process tree from outside, as an operator would with ps."""

from __future__ import annotations

import time
from pathlib import Path

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
