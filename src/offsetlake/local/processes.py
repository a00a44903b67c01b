"""Child processes that never outlive the command that started them.

A pipeline update starts a tree: the pipelines CLI, a Spark Connect server JVM, Python workers.
Each child runs in its own session (process group), and whatever ends the run (its exit, a
deadline, an exception, SIGINT/SIGTERM) the whole group is terminated and waited for: SIGTERM
first, SIGKILL after a grace period. A command interrupted by a signal also ends every other
process it started (the local Spark JVM of ``plan``/``apply``, the demo's brokers) the same way,
found by walking ``/proc`` from its own PID.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from offsetlake.errors import StopSignalError

DEFAULT_GRACE_S = 10.0
_T = TypeVar("_T")


@dataclass
class ReceivedSignal:
    """The stop signal received inside :func:`interruptible`, if any.

    Code that catches every exception (py4j turns one raised inside a Spark call into its own
    Py4JError) can hide the StopSignalError; callers check this to know the run was interrupted.
    """

    signum: int | None = None


@dataclass
class _ForcedExit:
    """The bound on a stop: past ``after_s`` (or at a second signal) the process ends anyway."""

    label: str = ""
    after_s: float = 0.0
    timer: threading.Timer | None = None


@contextmanager
def forced_exit_after(seconds: float, label: str) -> Iterator[None]:
    """Within this block, a stop signal whose cleanup has not ended the process ``seconds`` later
    (or a second signal) ends it: children terminated, one ``<label>: ...`` line, exit 128 + signal.

    Raising StopSignalError is not always enough: the main thread may sit in a C call that holds
    signals until it returns (librdkafka), or inside a library that catches the exception and goes
    on (py4j retries a command, pyspark stops a half-started SparkContext through the JVM). So the
    signal is also seen outside the main thread: CPython writes its number to a wakeup socket at
    once, and a watcher thread starts the clock. For the command-line process only (``os._exit``).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    forced = _ForcedExit(label, seconds)
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    watcher = threading.Thread(target=_watch, args=(reader, forced), name="stop-bound", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(previous)
        if forced.timer is not None:
            forced.timer.cancel()
        writer.close()
        reader.close()


def _watch(reader: socket.socket, forced: _ForcedExit) -> None:
    while True:
        try:
            received = reader.recv(1)
        except OSError:
            return
        if not received:
            return
        signum = received[0]
        if signum not in (signal.SIGINT, signal.SIGTERM):
            continue
        if forced.timer is not None:  # a second signal: the operator does not want to wait
            _exit_now(forced, signum, "a second signal")
        why = f"cleanup still running after {forced.after_s:g}s"
        forced.timer = threading.Timer(forced.after_s, _exit_now, (forced, signum, why))
        forced.timer.daemon = True
        forced.timer.start()


def _exit_now(forced: _ForcedExit, signum: int, why: str) -> None:
    name = signal.Signals(signum).name
    print(f"{forced.label}: interrupted by {name}; {why}, stopping now", file=sys.stderr, flush=True)
    terminate_descendants(grace_s=2)
    os._exit(128 + signum)


@contextmanager
def interruptible() -> Iterator[ReceivedSignal]:
    """SIGINT and SIGTERM raise StopSignalError (in the main thread), so ``finally`` blocks run."""
    received = ReceivedSignal()
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def handler(signum: int, _frame: object) -> None:
        received.signum = signum
        raise StopSignalError(signum)

    previous = {signum: signal.signal(signum, handler) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def call_interruptibly(work: Callable[[], _T]) -> _T:
    """``work()`` inside :func:`interruptible`; a StopSignalError that a library turned into an
    error of its own (py4j does) is raised as the StopSignalError it was."""
    with interruptible() as received:
        try:
            return work()
        except Exception as error:
            if received.signum is not None and not isinstance(error, StopSignalError):
                raise StopSignalError(received.signum) from error
            raise


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
    stop: threading.Event | None = None,
) -> ChildExit:
    """Run ``command`` in a new process group, feeding each output line to ``on_line``.

    Past ``timeout_s`` the group is terminated (``timed_out``); once ``stop`` is set (by
    ``on_line``, say) it is terminated too; on any exception, StopSignalError included, it is
    terminated before the exception propagates. Either way, and after a normal exit too, no
    process of the group is left.
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
            exit_code = _wait(process, timeout_s, stop)
        except subprocess.TimeoutExpired:
            timed_out = True
            terminate_group(process, grace_s=grace_s)
            exit_code = process.wait()
    finally:
        terminate_group(process, grace_s=grace_s)
        reader.join(timeout=grace_s)
        stdout.close()
    return ChildExit(exit_code, timed_out, time.monotonic() - started)


def _wait(process: subprocess.Popen[str], timeout_s: float | None, stop: threading.Event | None) -> int:
    """``process.wait(timeout_s)``, ending the group early once ``stop`` is set."""
    if stop is None:
        return process.wait(timeout=timeout_s)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        try:
            return process.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            if stop.is_set():
                terminate_group(process)
                return process.wait()
            if deadline is not None and time.monotonic() > deadline:
                raise


def spawn_group(
    command: Sequence[str], *, cwd: Path, env: Mapping[str, str], log_path: Path
) -> subprocess.Popen[str]:
    """Start a long-lived ``command`` in a new process group, its output appended to ``log_path``;
    the caller ends it with :func:`terminate_group` (a kept-warm server outlives single calls)."""
    with log_path.open("a", encoding="utf-8") as log:
        return subprocess.Popen(
            list(command),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )


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


def terminate_descendants(*, grace_s: float = DEFAULT_GRACE_S) -> list[int]:
    """SIGTERM every live descendant of this process, SIGKILL what is left after ``grace_s``, and
    reap the direct children; returns the PIDs that were signalled."""
    pids = descendants(os.getpid())
    for pid in pids:
        _signal_pid(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(_pid_alive(pid) for pid in pids):
        _reap_children()
        time.sleep(0.1)
    for pid in pids:
        if _pid_alive(pid):
            _signal_pid(pid, signal.SIGKILL)
    _reap_children()
    return pids


def descendants(root: int) -> list[int]:
    """Live (non-zombie) descendants of ``root``, from /proc; parents before their children."""
    children: dict[int, list[int]] = {}
    for pid, entry in _process_table().items():
        if entry.state != "Z":
            children.setdefault(entry.ppid, []).append(pid)
    found: list[int] = []
    frontier = [root]
    while frontier:
        pid = frontier.pop()
        for child in children.get(pid, []):
            found.append(child)
            frontier.append(child)
    return found


@dataclass(frozen=True)
class _ProcEntry:
    state: str
    ppid: int
    pgrp: int


def _process_table() -> dict[int, _ProcEntry]:
    """Every process /proc shows (empty where there is no /proc)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return {}
    table = {}
    for entry in proc.iterdir():
        if entry.name.isdigit() and (read := _read_entry(entry)) is not None:
            table[int(entry.name)] = read
    return table


def parent_of(pid: int) -> int | None:
    """The parent PID of a live process, from /proc (None if it is gone or there is no /proc)."""
    entry = _read_entry(Path(f"/proc/{pid}"))
    return entry.ppid if entry is not None else None


def _read_entry(directory: Path) -> _ProcEntry | None:
    try:
        # /proc/<pid>/stat: "pid (comm) state ppid pgrp ..."; comm may contain spaces.
        fields = (directory / "stat").read_text().rsplit(")", 1)[1].split()
        return _ProcEntry(fields[0], int(fields[1]), int(fields[2]))
    except (OSError, IndexError, ValueError):
        return None


def _pid_alive(pid: int) -> bool:
    entry = _process_table().get(pid)
    return entry is not None and entry.state != "Z"


def _signal_pid(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)


def _reap_children() -> None:
    """Collect exited direct children (other code may already have waited for them)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


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
    if not Path("/proc").is_dir():
        return True
    return any(entry.pgrp == pgid and entry.state != "Z" for entry in _process_table().values())


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signum)
