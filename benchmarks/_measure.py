"""Peak memory of a process tree, sampled from /proc in a background thread (Linux only).

``resource.getrusage`` only sees this process and its *waited-for* children, one at a time; a
pipeline run is this Python process plus a spark-pipelines client, its Spark Connect JVM and the
JVM's Python workers, all alive at once. Summing their memory at each sample and keeping the
maximum gives the memory the machine actually had to hold. Processes that should not count (the
local brokers, which hold the benchmark's records) are excluded with their descendants.

Plain RSS double-counts shared pages, so:

- Spark's Python workers are forked from one daemon and share its pages copy-on-write: every
  process counts its PSS (shared pages divided among their sharers) from smaps_rollup;
- except ``java`` processes: their memory is private (RSS 617,456 kB vs PSS 614,908 kB measured)
  and smaps_rollup costs ~10 ms per read for a JVM, too much CPU every 0.2 s on 2 cores, so they
  count their RSS from statm;
- a JVM spawning a process (posix_spawn, vfork semantics) briefly has a child that shares the
  JVM's whole address space until it execs, seen as a 1 GiB "process" named after the spawning
  JVM thread: a child of a ``java`` process still running the same executable is skipped.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
_MIB = 1024 * 1024


@dataclass(frozen=True)
class ProcessMemory:
    pid: int
    name: str
    memory_bytes: int


@dataclass(frozen=True)
class TreeSample:
    """One moment: the memory of every process in the tree."""

    processes: tuple[ProcessMemory, ...] = ()

    @property
    def total_bytes(self) -> int:
        return sum(process.memory_bytes for process in self.processes)

    def by_name_mib(self) -> dict[str, float]:
        """Memory per command name (``java``, ``python``...), largest first, for a readable breakdown."""
        totals: dict[str, int] = {}
        for process in self.processes:
            totals[process.name] = totals.get(process.name, 0) + process.memory_bytes
        return {name: size / _MIB for name, size in sorted(totals.items(), key=lambda item: -item[1])}


def _parent_and_name(pid: int) -> tuple[int, str] | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None  # exited between listing and reading
    # The command name is in parentheses and may hold spaces or parentheses itself.
    name = stat[stat.index("(") + 1 : stat.rindex(")")]
    parent = int(stat[stat.rindex(")") + 2 :].split(" ", 2)[1])
    return parent, name


def _rss_bytes(pid: int) -> int:
    try:
        resident_pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 0
    return resident_pages * _PAGE_BYTES


def _pss_bytes(pid: int) -> int:
    try:
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return _rss_bytes(pid)
    for line in rollup.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) * 1024
    return _rss_bytes(pid)


def _executable(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None


def _memory_bytes(pid: int, name: str) -> int:
    return _rss_bytes(pid) if name == "java" else _pss_bytes(pid)


def sample_tree(root: int, excluded: Iterable[int] = ()) -> TreeSample:
    """Memory of ``root`` and all its descendants, minus ``excluded`` PIDs and their descendants."""
    children: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        found = _parent_and_name(int(entry.name))
        if found is not None:
            children.setdefault(found[0], []).append(int(entry.name))
            names[int(entry.name)] = found[1]
    skipped = set(excluded)
    processes: list[ProcessMemory] = []
    pending = [root]
    while pending:
        pid = pending.pop()
        if pid in skipped:
            continue
        name = names.get(pid, "?")
        processes.append(ProcessMemory(pid, name, _memory_bytes(pid, name)))
        for child in children.get(pid, ()):
            if name == "java" and _executable(child) == _executable(pid):
                continue  # spawned by the JVM and not yet exec'd: it shares the JVM's memory
            pending.append(child)
    return TreeSample(tuple(processes))


@dataclass
class PeakTreeMemory:
    """``with PeakTreeMemory(excluded=broker_pids) as peak: ...``; then ``peak.peak_mib``."""

    excluded: tuple[int, ...] = ()
    interval_s: float = 0.2
    root: int = field(default_factory=os.getpid)
    peak: TreeSample = field(default_factory=TreeSample)
    samples: int = 0
    sampler_cpu_s: float = 0.0
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)

    @property
    def peak_mib(self) -> float:
        return self.peak.total_bytes / _MIB

    def describe(self) -> str:
        parts = ", ".join(f"{name} {mib:.0f}" for name, mib in self.peak.by_name_mib().items())
        return (
            f"{self.peak_mib:.0f} MiB over {len(self.peak.processes)} processes ({parts}); "
            f"{self.samples} samples every {self.interval_s:g} s, sampler CPU {self.sampler_cpu_s:.1f} s"
        )

    def _sample_once(self) -> None:
        sample = sample_tree(self.root, self.excluded)
        self.samples += 1
        if sample.total_bytes > self.peak.total_bytes:
            self.peak = sample

    def _loop(self) -> None:
        started = time.thread_time()
        while not self._stop.wait(self.interval_s):
            self._sample_once()
        self.sampler_cpu_s = time.thread_time() - started

    def __enter__(self) -> PeakTreeMemory:
        self._sample_once()
        self._thread = threading.Thread(target=self._loop, name="peak-tree-memory", daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample_once()
