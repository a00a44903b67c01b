"""Who holds a local home: one local Spark (one Derby metastore) per home at a time.

Two processes on the same home used to fail deep inside Spark with hundreds of lines of Derby
lock traces. Before a local Spark or a pipeline run starts, this finds the process holding the
home and says so in one line:

- Derby holds a POSIX lock on ``metastore_db/dbex.lck`` while a JVM has the metastore open; Linux
  lists it, with the holder's PID, in ``/proc/locks``. The JVM is named together with the command
  that started it.
- A pipeline run also holds ``pipeline/run.lock`` (``flock``) for its whole length, so a second
  run is refused even before the first one's JVM has opened the metastore.

A failover goes first (stand-aside protocol): the local sync loop (``pipeline run --every``) holds
``pipeline/sync-loop.lock`` (``flock``, its PID inside) for its life. A failover writes its request
to ``pipeline/stand-aside`` and sends the loop SIGUSR1 (:func:`stand_aside_request`). A request names
its owner by PID and the process's start time (``/proc/<pid>/stat``), so a PID the system gave to
another process since does not pass for it, and a token; it expires unless its owner renews it,
which it does while it lives. The loop stops an update in progress (the gold guard puts gold back)
and its Spark, or a Spark it is starting, writes the request's token to ``pipeline/stand-aside.ack``,
starts nothing while the request is live, and resumes once it is withdrawn, its owner gone, or it
expired (:func:`sync_loop`). A request that is not live is ignored, and removed by whoever finds it.
Requests are written and removed under ``pipeline/stand-aside.lock``. The failover waits a bounded
time for the acknowledgement.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Final

from offsetlake.errors import ExternalError
from offsetlake.local.home import LocalHome
from offsetlake.local.processes import parent_of

STAND_ASIDE_SIGNAL: Final = signal.SIGUSR1
DEFAULT_STAND_ASIDE_WAIT_S: Final = 45.0
"""A few seconds to be seen, plus an update's stop: its Spark's grace period (10 s) and gold put back."""
REQUEST_TTL_S: Final = 60.0
"""A stand-aside request its owner has not renewed for this long has expired (the owner hangs)."""
_POLL_S: Final = 0.2
_COMMAND_CHARS: Final = 120


class HomeInUseError(ExternalError):
    """Another process has the local home's metastore or a pipeline run open."""


def check_home_free(home: LocalHome) -> None:
    """Raise HomeInUseError naming the holder when another process has ``home``'s metastore open
    (this process's own Spark JVM does not count)."""
    holder = _lock_holder(home.derby_lock, "POSIX")
    if holder is not None and holder not in (os.getpid(), _own_jvm()):
        raise HomeInUseError(_in_use(home, _holder(holder)))


@contextmanager
def pipeline_run_lock(home: LocalHome) -> Iterator[None]:
    """Held for a whole pipeline run; a second run on the same home is refused at once."""
    path = home.run_lock
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+", encoding="utf-8") as lock_file:
        try:
            fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock_file.seek(0)
            holder = lock_file.read().strip()
            pid = int(holder) if holder.isdigit() else None
            raise HomeInUseError(
                _in_use(home, _holder(pid)) if pid else f"a pipeline run already uses local home {home}"
            ) from None
        lock_file.truncate(0)
        lock_file.write(f"{os.getpid()}\n")
        lock_file.flush()
        try:
            yield
        finally:
            lock_file.truncate(0)


class LoopDidNotStandAsideError(ExternalError):
    """The local sync loop was asked to stand aside and did not within the bound."""


@dataclass(frozen=True)
class StandAsideRequest:
    """A failover's request: its owner (PID and that process's start time, in clock ticks since
    boot), the token the loop's acknowledgement names, and when it expires (``time.time()``)."""

    pid: int
    started: int
    token: str
    expires: float

    def line(self) -> str:
        return f"pid={self.pid} started={self.started} token={self.token} expires={self.expires:.3f}\n"

    @classmethod
    def parse(cls, text: str) -> StandAsideRequest | None:
        """The request ``text`` holds; None for anything else (an older offsetlake's bare PID)."""
        fields = dict(field.partition("=")[::2] for field in text.split())
        try:
            return cls(int(fields["pid"]), int(fields["started"]), fields["token"], float(fields["expires"]))
        except (KeyError, ValueError):
            return None

    def live(self, now: float) -> bool:
        """Its owner still runs (the same process, not one given its PID since) and it has not expired."""
        return now < self.expires and _process_start(self.pid) == self.started


@dataclass
class SyncLoop:
    """The loop's side of the stand-aside protocol (see the module docstring), from :func:`sync_loop`.

    The stand-aside signal sets ``asked`` (the loop clears it before each look for a request, so
    a request made while it starts its Spark or between its look and an update is not lost), and
    runs ``on_request`` (set by the loop around an update, to stop the update's Spark at once)."""

    home: LocalHome
    on_request: Callable[[], None] | None = None
    asked: bool = False
    """A flag, not a threading.Event: set in a signal handler, which must take no lock."""

    def requester(self) -> StandAsideRequest | None:
        """The live request asking the loop to stand aside, else None; a request that is not live
        (its owner gone, its PID reused, expired, or unreadable) is removed. A request written
        before the loop started counts too."""
        path = self.home.stand_aside
        if not path.exists():
            return None
        with _request_lock(self.home):
            request = _read_request(path)
            if request is not None and request.live(time.time()):
                return request
            path.unlink(missing_ok=True)
        return None

    def stand_aside(self, request: StandAsideRequest, *, poll_s: float = _POLL_S) -> None:
        """Acknowledge ``request`` (call with no update running and no Spark of the loop's own),
        then block while it is live: until it is withdrawn, its owner gone, or it expired."""
        ack = self.home.stand_aside_ack
        _write_atomically(ack, f"{request.token}\n")
        try:
            while (current := self.requester()) is not None and current.token == request.token:
                time.sleep(poll_s)
        finally:
            ack.unlink(missing_ok=True)


@contextmanager
def sync_loop(home: LocalHome) -> Iterator[SyncLoop]:
    """Register the local sync loop of ``home`` for its life; a second loop on the same home is
    refused. STAND_ASIDE_SIGNAL is handled (not fatal) from before the loop can be found."""
    path = home.sync_loop_lock
    path.parent.mkdir(parents=True, exist_ok=True)
    loop = SyncLoop(home)

    def handler(_signum: int, _frame: FrameType | None) -> None:
        loop.asked = True
        if loop.on_request is not None:
            loop.on_request()

    previous = signal.signal(STAND_ASIDE_SIGNAL, handler)  # before the lock names this process
    try:
        with path.open("a+", encoding="utf-8") as lock_file:
            try:
                fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pid = _read_pid(path)
                raise HomeInUseError(
                    f"a local sync loop already runs on {home}"
                    + (f": {_describe(pid)}" if pid is not None else "")
                ) from None
            lock_file.truncate(0)
            lock_file.write(f"{os.getpid()}\n")
            lock_file.flush()
            try:
                yield loop
            finally:
                lock_file.truncate(0)
                home.stand_aside_ack.unlink(missing_ok=True)
    finally:
        signal.signal(STAND_ASIDE_SIGNAL, previous)


@dataclass(frozen=True)
class StandAside:
    """The failover's side of the protocol, from :func:`stand_aside_request`."""

    home: LocalHome
    loop: int | None
    """The sync loop asked to stand aside (None: no loop runs on the home)."""
    token: str
    """The request's: the loop's acknowledgement names it."""

    def wait(self, timeout_s: float = DEFAULT_STAND_ASIDE_WAIT_S, *, poll_s: float = _POLL_S) -> float:
        """Block until the loop acknowledged the request or is gone; the seconds it took. Past
        ``timeout_s``, LoopDidNotStandAsideError (the request is withdrawn by the context's exit)."""
        started = time.monotonic()
        if self.loop is None:
            return 0.0
        while (
            _read_text(self.home.stand_aside_ack) != self.token and _sync_loop_holder(self.home) == self.loop
        ):
            if time.monotonic() - started > timeout_s:
                raise LoopDidNotStandAsideError(
                    f"the local sync loop on {self.home} ({_describe(self.loop)}) did not stand aside "
                    f"within {timeout_s:g}s; stop it (Ctrl-C) and run the failover again"
                )
            time.sleep(poll_s)
        return time.monotonic() - started


@contextmanager
def stand_aside_request(home: LocalHome, *, ttl_s: float = REQUEST_TTL_S) -> Iterator[StandAside]:
    """Ask the local sync loop of ``home``, if one runs, to stand aside until the block ends (then
    it resumes); :meth:`StandAside.wait` waits for it. The request is renewed every quarter of
    ``ttl_s`` while the block runs. A live request of another process is refused; one that is not
    live is replaced."""
    path = home.stand_aside
    path.parent.mkdir(parents=True, exist_ok=True)
    me = os.getpid()
    request = StandAsideRequest(me, _process_start(me) or 0, secrets.token_hex(16), time.time() + ttl_s)
    with _request_lock(home):
        other = _read_request(path)
        if other is not None and other.pid != me and other.live(time.time()):
            raise HomeInUseError(
                f"{_describe(other.pid)} already asked the local sync loop on {home} to stand aside"
            )
        _write_atomically(path, request.line())
    done = threading.Event()
    renewal = threading.Thread(
        target=_renew, args=(home, request, ttl_s, done), name="stand-aside-renewal", daemon=True
    )
    renewal.start()
    try:
        loop = _sync_loop_holder(home)
        if loop is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(loop, STAND_ASIDE_SIGNAL)
        yield StandAside(home, loop, request.token)
    finally:
        done.set()
        renewal.join()
        with _request_lock(home):
            current = _read_request(path)
            if current is not None and current.token == request.token:
                path.unlink(missing_ok=True)


def _renew(home: LocalHome, request: StandAsideRequest, ttl_s: float, done: threading.Event) -> None:
    """Push ``request``'s expiry on while its owner runs, as long as it is still the request."""
    path = home.stand_aside
    while not done.wait(ttl_s / 4):
        with _request_lock(home):
            current = _read_request(path)
            if current is None or current.token != request.token:
                return  # expired and removed, or replaced: the owner hung for longer than ttl_s
            renewed = StandAsideRequest(request.pid, request.started, request.token, time.time() + ttl_s)
            _write_atomically(path, renewed.line())


@contextmanager
def _request_lock(home: LocalHome) -> Iterator[None]:
    """Held (briefly) to write, renew or remove a stand-aside request: no one removes a request
    another has just written."""
    path = home.stand_aside.with_name("stand-aside.lock")
    with path.open("a", encoding="utf-8") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)
        yield


def _read_request(path: Path) -> StandAsideRequest | None:
    text = _read_text(path)
    return None if text is None else StandAsideRequest.parse(text)


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return None


def _process_start(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot, ``/proc/<pid>/stat`` field 22); None
    when no such process runs (a zombie does not: it holds nothing and asks nothing)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if len(fields) < 20 or fields[0] == "Z" or not fields[19].isdigit():
        return None
    return int(fields[19])


def _sync_loop_holder(home: LocalHome) -> int | None:
    """The PID of the sync loop holding ``home``'s loop lock, from /proc/locks (so asking takes no
    lock a starting loop could trip on, and a PID a killed loop left in the file is not read)."""
    return _lock_holder(home.sync_loop_lock, "FLOCK")


def _lock_holder(lock_path: Path, kind: str) -> int | None:
    """PID holding a lock of ``kind`` (POSIX, FLOCK) on ``lock_path`` according to /proc/locks."""
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
        if fields[1] == kind and fields[5] == device and fields[4].isdigit():
            return int(fields[4])
    return None


def _read_pid(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _write_atomically(path: Path, text: str) -> None:
    """Readers see the old content or the new, never a half-written PID."""
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)


def _own_jvm() -> int | None:
    """The JVM of this process's Spark session, if one runs (pyspark execs java in its launcher)."""
    if "pyspark" not in sys.modules:
        return None
    from pyspark import SparkContext

    process = getattr(SparkContext._gateway, "proc", None)
    return None if process is None else process.pid


def _in_use(home: LocalHome, holder: str, why: str = ": one local Spark runs per home") -> str:
    """The one sentence every refusal of a busy home says: who holds it, why that excludes us."""
    return (
        f"local home {home} is in use by {holder}{why}; wait for it to finish, stop it, or set "
        "OFFSETLAKE_HOME to another directory"
    )


def _holder(pid: int) -> str:
    """A holding process in words; a Spark JVM named with the command that started it."""
    holder = _describe(pid)
    parent = parent_of(pid)
    if parent is not None and "java" in _command(pid).split(" ", 1)[0]:
        holder = f"{_describe(parent)}, through its Spark JVM (process {pid})"
    return holder


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

    def __init__(self, home: LocalHome) -> None:
        self.home = home
        path = home.run_lock
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

    def refusal(self) -> str:
        """Why :meth:`take` found the lock held: the pipeline update holding it, in the words of
        every refusal of a busy home."""
        holder = self.holder()
        who = f"process {holder}" if holder else "another process"
        return _in_use(self.home, f"a pipeline update ({who})", ", which rewrites gold while it runs")

    def close(self) -> None:
        """Let go of the lock (closing the file releases it)."""
        if self._descriptor is not None:
            os.close(self._descriptor)
            self._descriptor = None
