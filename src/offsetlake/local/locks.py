"""Who holds a local home: one local Spark (one Derby metastore) per home at a time.

Two processes on the same home used to fail deep inside Spark with hundreds of lines of Derby
lock traces. Before a local Spark or a pipeline run starts, this finds the process holding the
home and says so in one line:

- Derby holds a POSIX lock on ``metastore_db/dbex.lck`` while a JVM has the metastore open; Linux
  lists it, with the holder's PID, in ``/proc/locks``. The JVM is named together with the command
  that started it.
- A pipeline run also holds ``pipeline/run.lock`` (``flock``) for its whole length, so a second
  run is refused even before the first one's JVM has opened the metastore.
"""

from __future__ import annotations

import fcntl
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from offsetlake.errors import ExternalError
from offsetlake.local.processes import parent_of

DERBY_LOCK: Final = Path("metastore_db") / "dbex.lck"
RUN_LOCK: Final = Path("pipeline") / "run.lock"
_COMMAND_CHARS: Final = 120


class HomeInUseError(ExternalError):
    """Another process has the local home's metastore or a pipeline run open."""


def check_home_free(home: Path) -> None:
    """Raise HomeInUseError naming the holder when another process has ``home``'s metastore open
    (this process's own Spark JVM does not count)."""
    holder = _derby_holder(home / DERBY_LOCK)
    if holder is not None and holder not in (os.getpid(), _own_jvm()):
        raise HomeInUseError(_in_use(home, holder))


@contextmanager
def pipeline_run_lock(home: Path) -> Iterator[None]:
    """Held for a whole pipeline run; a second run on the same home is refused at once."""
    path = home / RUN_LOCK
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+", encoding="utf-8") as lock_file:
        try:
            fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock_file.seek(0)
            holder = lock_file.read().strip()
            pid = int(holder) if holder.isdigit() else None
            raise HomeInUseError(
                _in_use(home, pid) if pid else f"a pipeline run already uses local home {home}"
            ) from None
        lock_file.truncate(0)
        lock_file.write(f"{os.getpid()}\n")
        lock_file.flush()
        try:
            yield
        finally:
            lock_file.truncate(0)


def _own_jvm() -> int | None:
    """The JVM of this process's Spark session, if one runs (pyspark execs java in its launcher)."""
    if "pyspark" not in sys.modules:
        return None
    from pyspark import SparkContext

    process = getattr(SparkContext._gateway, "proc", None)
    return None if process is None else process.pid


def _derby_holder(lock_path: Path) -> int | None:
    """PID holding a POSIX lock on ``lock_path`` according to /proc/locks, else None."""
    try:
        stat = lock_path.stat()
        table = Path("/proc/locks").read_text()
    except OSError:
        return None
    device = f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}:{stat.st_ino}"
    for line in table.splitlines():
        fields = line.split()
        # "1: POSIX  ADVISORY  WRITE 3656 fe:00:2146504 0 EOF"; waiters have "->" after the number.
        if "->" in fields or len(fields) < 6:
            continue
        if fields[1] == "POSIX" and fields[5] == device and fields[4].isdigit():
            return int(fields[4])
    return None


def _in_use(home: Path, pid: int) -> str:
    holder = _describe(pid)
    parent = parent_of(pid)
    if parent is not None and "java" in _command(pid).split(" ", 1)[0]:
        holder = f"{_describe(parent)}, through its Spark JVM (process {pid})"
    return (
        f"local home {home} is in use by {holder}: one local Spark runs per home; wait for it to "
        "finish, stop it, or set OFFSETLAKE_HOME to another directory"
    )


def _describe(pid: int) -> str:
    command = _command(pid)
    if len(command) > _COMMAND_CHARS:
        command = command[: _COMMAND_CHARS - 3] + "..."
    return f"process {pid} ({command})" if command else f"process {pid}"


def _command(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""
    return " ".join(raw.replace("\0", " ").split())  # one line, even for `python -c` scripts


class RunLockHold:
    """A reader's hold on the home's run lock (``pipeline/run.lock``), taken without waiting.

    Shared, readers do not exclude each other, and while any holds it :func:`pipeline_run_lock`
    refuses a run: what a run rewrites stays as the readers found it. Exclusive, briefly, to repair
    what a killed run left (offsetlake.local.gold_guard). flock converts a held lock in place; a
    conversion that fails leaves none held. The holder's process id goes in the file, for a refused
    run to name (a run writes its own when it takes the lock).
    """

    def __init__(self, home: Path) -> None:
        path = home / RUN_LOCK
        path.parent.mkdir(parents=True, exist_ok=True)
        self._descriptor: int | None = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)

    def take(self, *, exclusive: bool = False) -> bool:
        """Hold the lock shared (or exclusively); False, holding nothing, when another process's
        hold excludes it."""
        assert self._descriptor is not None, "closed"
        try:
            fcntl.flock(self._descriptor, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        os.ftruncate(self._descriptor, 0)
        os.pwrite(self._descriptor, f"{os.getpid()}\n".encode(), 0)
        return True

    def holder(self) -> int | None:
        """The process id the file names (a run's, while one holds the lock), if any."""
        assert self._descriptor is not None, "closed"
        content = os.pread(self._descriptor, 32, 0).decode(errors="replace").strip()
        return int(content) if content.isdigit() else None

    def close(self) -> None:
        """Let go of the lock (closing the file releases it)."""
        if self._descriptor is not None:
            os.close(self._descriptor)
            self._descriptor = None
