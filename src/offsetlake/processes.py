"""Child processes that never outlive the command that started them.

``spark-pipelines`` starts a tree: the pipelines JVM, a Spark Connect server JVM, Python workers.
Each child runs in its own session (process group), and whatever ends the run (its exit, a
deadline, an exception, SIGINT/SIGTERM) the whole group is terminated and waited for: SIGTERM
first, SIGKILL after a grace period.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from offsetlake.errors import StopSignalError

DEFAULT_GRACE_S = 10.0


@contextmanager
def interruptible() -> Iterator[None]:
    """SIGINT and SIGTERM raise StopSignalError (in the main thread), so ``finally`` blocks run."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: object) -> None:
        raise StopSignalError(signum)

    previous = {signum: signal.signal(signum, handler) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


@dataclass(frozen=True)
class ChildExit:
    exit_code: int
    timed_out: bool
    seconds: float


def run_group(
    command: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    on_line: Callable[[str], None],
    timeout_s: float | None = None,
    grace_s: float = DEFAULT_GRACE_S,
) -> ChildExit:
    """Run ``command`` in a new process group, feeding each output line to ``on_line``.

    Past ``timeout_s`` the group is terminated (``timed_out``); on any exception, StopSignalError
    included, it is terminated before the exception propagates. Either way, and after a normal
    exit too, no process of the group is left.
    """
    started = time.monotonic()
    process = subprocess.Popen(
        list(command),
        cwd=cwd,
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    stdout = process.stdout
    assert stdout is not None

    def pump() -> None:
        # A grandchild may hold the pipe open after the leader exited: read until the group is gone.
        for line in stdout:
            on_line(line)

    reader = threading.Thread(target=pump, name="child-output", daemon=True)
    reader.start()
    timed_out = False
    try:
        try:
            exit_code = process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            terminate_group(process, grace_s=grace_s)
            exit_code = process.wait()
    finally:
        terminate_group(process, grace_s=grace_s)
        reader.join(timeout=grace_s)
        stdout.close()
    return ChildExit(exit_code, timed_out, time.monotonic() - started)


def terminate_group(process: subprocess.Popen[str], *, grace_s: float = DEFAULT_GRACE_S) -> None:
    """SIGTERM the process group, SIGKILL what is left after ``grace_s``, and reap the leader."""
    pgid = process.pid
    if _group_alive(pgid):
        _signal_group(pgid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while _group_alive(pgid) and time.monotonic() < deadline:
            _reap(process)
            time.sleep(0.1)
        if _group_alive(pgid):
            _signal_group(pgid, signal.SIGKILL)
    process.wait()


def _reap(process: subprocess.Popen[str]) -> None:
    # A leader that exited stays a zombie (and the group "alive") until waited for.
    process.poll()


def _group_alive(pgid: int) -> bool:
    """Whether a process of the group still runs. Zombies do not count: in a container whose init
    does not reap orphans they linger, although they hold nothing."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # /proc/<pid>/stat: "pid (comm) state ppid pgrp ..."; comm may contain spaces.
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signum)
