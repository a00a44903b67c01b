"""The class-data archive (AppCDS) local Spark JVMs map instead of loading Spark's classes.

A cold local JVM spends a large part of its CPU loading classes: a minute into a demo-sized
pipeline update, 30,665 classes loaded and 19 s spent loading and verifying them (HotSpot's
``sun.cls.time``), beside 13.6 s of JIT. A dynamic CDS archive (JDK 13+) holds those classes
parsed and verified; mapping one cut a short local session (start, a small write, two streaming
queries, a query) from 15.9 s to 9.7 s on the 2-core machine (its start 6.6 -> 3.7 s).

One archive per ``purpose`` (``pipeline``: the Spark Connect server a cold update starts;
``server``: the kept-warm one; ``session``: a classic local session), in the user's cache
directory, named by what the JVM checks it against (pyspark's jars, the java binary, the JVM
options). While none exists, one JVM at a time (a claim
file) writes one at exit (``-XX:ArchiveClassesAtExit``, 200-250 MB) into a file of its own, a
temporary name (``.writing``); a later JVM start adopts that file once its writer is gone and
``java -version`` maps it, because a file cut short by a kill crashes every JVM that maps it
(measured: SIGABRT, even under ``-Xshare:auto``). A file whose writer is gone and that the JVM
refuses (a writer killed mid-write once left 108 MB) is deleted at the next start, whatever its
key. An archive of another JDK or other options is simply not used.

The cache holds at most ``MAX_ARCHIVES`` archives and ``MAX_BYTES`` (one per purpose fits): at
each start the least recently mapped ones beyond that are deleted (a test run once left four,
~1 GB). A JVM that still maps a deleted archive keeps it until it exits (Linux unlinks, the
mapping stays).

The JVM compares its classpath with the archive's, and Spark puts ``SPARK_CONF_DIR`` first on
it, so local JVMs get their static settings as ``--conf`` (pipeline_spec.py), never from a
per-home configuration directory.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import shutil
import subprocess
import time
from pathlib import Path
from typing import Final, Literal

from offsetlake.local.processes import DEFAULT_GRACE_S

Purpose = Literal["pipeline", "server", "session"]
"""Each its own archive: their classpaths differ (``SPARK_TESTING`` adds directories to a cold
update's), and the JVM maps an archive only under the classpath it was written with."""

CACHE_DIR_ENV: Final = "OFFSETLAKE_CACHE_DIR"
DISABLE_ENV: Final = "OFFSETLAKE_CLASS_ARCHIVE"
"""``off`` starts every local JVM without an archive (to compare, or to rule it out)."""
_QUIET: Final = "-Xlog:cds=off -Xlog:cds+dynamic=off"
WRITING_SUFFIX: Final = ".writing"
WRITE_GRACE_S: Final = 120.0
"""How long a JVM that writes the archive at exit may take to exit (measured: 11-19 s under load)."""
SETTLED_S: Final = 5.0
"""A written archive untouched this long has been written whole (the JVM writes it in seconds)."""
CLAIM_TTL_S: Final = 900.0
"""A claim older than this is abandoned (its JVM was killed before writing, or still runs)."""
PRUNE_AFTER_S: Final = 7 * 24 * 3600.0
"""Files of other keys (another checkout's pyspark, an older JDK) unused this long are deleted:
each archive is 200 MB, and every checkout path makes its own."""
MAX_ARCHIVES: Final = 3
"""Archives kept in the cache, the one a JVM maps or writes now included: one per ``Purpose``."""
MAX_BYTES: Final = 768 * 2**20
"""Bytes of archives kept: three of 200-250 MB (measured, pyspark 4.2: 208, 250, 250 MB)."""


def class_archive_options(purpose: Purpose, jvm_options: str, *, write: bool = True) -> str:
    """The archive options for a local JVM of ``purpose`` started with ``jvm_options``: map the
    archive if there is one; else write one at exit if ``write`` and no other JVM is writing it
    (a JVM that lives for long, a test session's, should not: it would hold the claim); else
    nothing."""
    if os.environ.get(DISABLE_ENV, "").lower() == "off":
        return ""
    directory = cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        archive = directory / f"{purpose}-{_archive_key(jvm_options)}.jsa"
        _settle_written(directory)
        if archive.exists():
            os.utime(archive)  # in use: pruning goes by when an archive was last mapped
            _prune(directory, keep=archive, reserve=True)
            return f"-XX:SharedArchiveFile={archive} {_QUIET}"
        writing = _claim(archive) if write else None
        _prune(directory, keep=archive, reserve=writing is not None)
    except OSError:
        return ""
    return f"-XX:ArchiveClassesAtExit={writing} {_QUIET}" if writing is not None else ""


def exit_grace_s(java_options: str) -> float:
    """How long a JVM started with ``java_options`` may take to exit before it is killed: longer
    when it writes the archive then."""
    return WRITE_GRACE_S if "-XX:ArchiveClassesAtExit=" in java_options else DEFAULT_GRACE_S


def cache_dir() -> Path:
    """``$OFFSETLAKE_CACHE_DIR``, else ``$XDG_CACHE_HOME/offsetlake/jvm``, else ``~/.cache/...``."""
    if os.environ.get(CACHE_DIR_ENV):
        return Path(os.environ[CACHE_DIR_ENV])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "offsetlake" / "jvm"


def _prune(directory: Path, *, keep: Path, reserve: bool) -> None:
    """Delete the files of other archives not mapped for PRUNE_AFTER_S, then the least recently
    mapped archives beyond MAX_ARCHIVES and MAX_BYTES (never ``keep``'s files; its place is counted
    when ``reserve``: it is mapped now, or written at this JVM's exit)."""
    now = time.time()
    archives: list[tuple[float, int, Path]] = []
    for path in directory.iterdir():
        if path.name.startswith(f"{keep.stem}."):
            continue
        with contextlib.suppress(OSError):
            stat = path.stat()
            if now - stat.st_mtime > PRUNE_AFTER_S:
                path.unlink()
            elif path.suffix == ".jsa":
                archives.append((stat.st_mtime, stat.st_size, path))
    count = 1 if reserve else 0
    size = keep.stat().st_size if keep.exists() else 0
    evicting = False
    for _, bytes_, path in sorted(archives, reverse=True):  # the most recently mapped first
        evicting = evicting or count + 1 > MAX_ARCHIVES or size + bytes_ > MAX_BYTES
        if evicting:
            path.unlink(missing_ok=True)
        else:
            count, size = count + 1, size + bytes_


def _claim(archive: Path) -> Path | None:
    """The file this JVM writes its archive to, or None while another JVM holds the claim (one
    writer at a time: every JVM started without an archive would otherwise write ~200 MB)."""
    claim = archive.with_suffix(".claim")
    with contextlib.suppress(FileNotFoundError):
        if time.time() - claim.stat().st_mtime < CLAIM_TTL_S:
            return None
        claim.unlink()
    try:
        descriptor = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return None
    os.close(descriptor)
    return archive.with_name(f"{archive.stem}.{secrets.token_hex(4)}{WRITING_SUFFIX}")


def _settle_written(directory: Path) -> None:
    """Every file a JVM wrote its archive to, of any key, once its writer is gone: promoted to its
    archive when the JVM accepts it (a file cut short by a kill crashes every JVM that maps it, so
    it must never be used), else deleted with its claim, so the next JVM writes again. A file
    whose archive exists already (a second writer's) is deleted."""
    written_files = sorted(directory.glob(f"*{WRITING_SUFFIX}"))
    if not written_files:
        return
    now, commands = time.time(), _command_lines()
    for written in written_files:
        with contextlib.suppress(OSError):
            age = now - written.stat().st_mtime
            if age < SETTLED_S or (
                commands is not None and any(os.fsencode(written) in line for line in commands)
            ):
                continue  # being written: the JVM that writes it has the path on its command line
            archive = directory / f"{written.name.split('.', 1)[0]}.jsa"
            if not archive.exists() and _accepted(written):
                with contextlib.suppress(FileExistsError):
                    os.link(written, archive)
                archive.with_suffix(".claim").unlink(missing_ok=True)
                written.unlink()
            elif archive.exists() or commands is not None or age > CLAIM_TTL_S:
                # Without /proc, a refused file may still be a live writer's until CLAIM_TTL_S.
                written.unlink()
                if not archive.exists():
                    archive.with_suffix(".claim").unlink(missing_ok=True)


def _command_lines() -> list[bytes] | None:
    """Every process's command line, from /proc (None where there is no /proc)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    lines = []
    for entry in proc.iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                lines.append((entry / "cmdline").read_bytes())
    return lines


def _accepted(written: Path) -> bool:
    """Whether a JVM maps ``written`` without crashing (0.2 s: ``java -version`` with it)."""
    java = _java_binary()
    if java is None:
        return False
    command = [
        str(java),
        f"-XX:SharedArchiveFile={written}",
        *_QUIET.split(),
        "-XX:-CreateCoredumpOnCrash",
        "-XX:ErrorFile=/dev/null",
        "-version",
    ]
    try:
        return subprocess.run(command, capture_output=True, timeout=60, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _archive_key(jvm_options: str) -> str:
    """What the JVM checks an archive against: the classpath (pyspark's jars), the JDK, the options."""
    import pyspark

    jars = Path(pyspark.__file__).resolve().parent / "jars"
    java = _java_binary()
    stamp = java.stat().st_mtime_ns if java is not None and java.exists() else 0
    text = "|".join([pyspark.__version__, str(jars), str(java), str(stamp), jvm_options])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _java_binary() -> Path | None:
    """The java spark-class runs: ``$JAVA_HOME/bin/java``, else the one on PATH."""
    if os.environ.get("JAVA_HOME"):
        return Path(os.environ["JAVA_HOME"], "bin", "java").resolve()
    found = shutil.which("java")
    return Path(found).resolve() if found else None
