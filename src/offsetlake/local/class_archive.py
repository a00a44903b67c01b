"""The class-data archive (AppCDS) local Spark JVMs map instead of loading Spark's classes.

A cold local JVM spends a large part of its CPU loading classes: a minute into a demo-sized
pipeline update, 30,665 classes loaded and 19 s spent loading and verifying them (HotSpot's
``sun.cls.time``), beside 13.6 s of JIT. A dynamic CDS archive (JDK 13+) holds those classes
parsed and verified; mapping one cut a short local session (start, a small write, two streaming
queries, a query) from 15.9 s to 9.7 s on the 2-core machine (its start 6.6 -> 3.7 s).

One archive per ``purpose`` (``pipeline``: the Spark Connect server a cold update starts;
``server``: the kept-warm one; ``session``: a classic local session), in the user's cache
directory, named by what the JVM checks it against (pyspark's jars, the java binary, the JVM
options). While none exists, one JVM at a time (a claim file) records the classes it loads
(``-XX:DumpLoadedClassList``: a line per class, nothing to do at exit), and a detached writer,
started with it, waits for that JVM to exit and then dumps those classes into a static archive
(``java -Xshare:dump`` with the JVM's own classpath and options; 50 s of CPU, niced, 200-250 MB),
into a temporary file (``.writing``). Writing at the JVM's exit instead (``-XX:ArchiveClassesAtExit``)
kept the home's metastore locked for the 19-38 s of the dump, and every caller waited for it (the
first ``make demo``: "Run is COMPLETED" at 67 s, "succeeded" at 86 s). A later JVM start adopts the
file once its writer is gone and ``java -version`` maps it, because a file cut short by a kill
crashes every JVM that maps it (measured: SIGABRT, SIGBUS, even under ``-Xshare:auto``). A file whose
writer is gone and that the JVM refuses (a writer killed mid-write once left 108 MB) is deleted at
the next start, whatever its key, and so is a class list whose writer is gone. An archive of another
JDK or other options is simply not used.

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
import sys
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
CLASS_LIST_SUFFIX: Final = ".classlist"
SETTLED_S: Final = 5.0
"""A written archive untouched this long has been written whole (the JVM writes it in seconds)."""
CLAIM_TTL_S: Final = 900.0
"""A claim older than this is abandoned (its writer was killed; a live writer renews it)."""
JVM_APPEARS_S: Final = 300.0
"""How long the writer waits for its JVM to start (a failed launch never does)."""
_POLL_S: Final = 1.0
WRITER_NICE: Final = 10
"""The writer's CPU goes to whatever the user waits for first."""
PRUNE_AFTER_S: Final = 7 * 24 * 3600.0
"""Files of other keys (another checkout's pyspark, an older JDK) unused this long are deleted:
each archive is 200 MB, and every checkout path makes its own."""
MAX_ARCHIVES: Final = 3
"""Archives kept in the cache, the one a JVM maps or writes now included: one per ``Purpose``."""
MAX_BYTES: Final = 768 * 2**20
"""Bytes of archives kept: three of 200-250 MB (measured, pyspark 4.2: 208, 250, 250 MB)."""


def class_archive_options(purpose: Purpose, jvm_options: str, *, write: bool = True) -> str:
    """The archive options for a local JVM of ``purpose`` started with ``jvm_options``: map the
    archive if there is one; else, if ``write`` and no other JVM records one, record the classes it
    loads, with a detached writer started to dump them once it has exited (a JVM that lives for
    long, a test session's, should not: its writer would hold the claim); else nothing."""
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
        if writing is None:
            return ""
        class_list = writing.with_suffix(CLASS_LIST_SUFFIX)
    except OSError:
        return ""
    try:
        _start_writer(class_list, writing)
    except (OSError, subprocess.SubprocessError):
        archive.with_suffix(".claim").unlink(missing_ok=True)  # no writer: the next JVM records
        return ""
    return f"{_RECORD}{class_list} {_QUIET}"


_RECORD: Final = "-XX:DumpLoadedClassList="


def _start_writer(class_list: Path, written: Path) -> None:
    """``python -m offsetlake.local.class_archive`` in the background, detached (``sh`` starts it
    and exits at once, so it is nobody's child and nobody waits for it: it outlives the command)."""
    launcher = 'nohup "$0" "$@" >/dev/null 2>&1 </dev/null &'
    command = ["sh", "-c", launcher, sys.executable, "-m", __name__, str(class_list), str(written)]
    subprocess.run(command, check=True, start_new_session=True, timeout=DEFAULT_GRACE_S)


def write_when_exited(class_list: Path, written: Path) -> bool:
    """Wait for the JVM recording ``class_list`` to start and exit, then dump its classes into
    ``written`` with its classpath and options, niced, renewing the claim all along: True if
    written. The next JVM start adopts the file (``_settle_written``); the class list is deleted."""
    claim = _archive_of(written).with_suffix(".claim")
    argv: list[str] | None = None
    appears_by = time.monotonic() + JVM_APPEARS_S
    try:
        while (recording := _recording_jvm(class_list)) is not None or (
            argv is None and time.monotonic() < appears_by
        ):
            argv = recording or argv
            _renew(claim)
        if argv is None or not class_list.exists():  # never started, or recorded nothing
            claim.unlink(missing_ok=True)
            return False
        with contextlib.suppress(OSError):
            os.nice(WRITER_NICE)
        dump = subprocess.Popen(
            dump_command(argv, class_list, written), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        while dump.poll() is None:
            _renew(claim)
        if dump.returncode != 0:
            written.unlink(missing_ok=True)
            claim.unlink(missing_ok=True)
        return dump.returncode == 0
    finally:
        class_list.unlink(missing_ok=True)


def _renew(claim: Path) -> None:
    """Keep a live writer's claim from being taken for abandoned (CLAIM_TTL_S), then wait a poll."""
    with contextlib.suppress(OSError):
        os.utime(claim)
    time.sleep(_POLL_S)


def dump_command(argv: list[str], class_list: Path, written: Path) -> list[str]:
    """``java -Xshare:dump`` of ``class_list`` into ``written``, with the classpath and options of
    the JVM that recorded it (``argv``: its command line); the JVM maps a static archive only under
    the classpath it was dumped with."""
    java, options, arguments = argv[0], [], iter(argv[1:])
    for argument in arguments:
        if not argument.startswith("-"):
            break  # the main class: the JVM's own options end here
        if argument in ("-cp", "-classpath", "--class-path"):
            options += [argument, next(arguments, "")]
        elif not argument.startswith(_RECORD):
            options.append(argument)
    return [
        java,
        "-Xshare:dump",
        f"-XX:SharedClassListFile={class_list}",
        f"-XX:SharedArchiveFile={written}",
        *options,
    ]


def _recording_jvm(class_list: Path) -> list[str] | None:
    """The command line of the JVM recording ``class_list`` (the option as an argument of its own:
    the launchers before it carry it inside a ``--conf`` value), or None."""
    option = f"{_RECORD}{class_list}"
    for line in _command_lines() or []:
        argv = [os.fsdecode(part) for part in line.split(b"\0") if part]
        if option in argv:
            return argv
    return None


def _archive_of(written: Path) -> Path:
    """The archive a ``.writing`` (or class list) file of ``<purpose>-<key>.<token>`` becomes."""
    return written.with_name(f"{written.name.split('.', 1)[0]}.jsa")


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
    """Every file a writer dumped an archive to, of any key, once its writer is gone: promoted to
    its archive when the JVM accepts it (a file cut short by a kill crashes every JVM that maps it,
    so it must never be used), else deleted with its claim, so the next JVM writes again. A file
    whose archive exists already (a second writer's) is deleted, and so is a class list whose
    writer is gone."""
    written_files = sorted(directory.glob(f"*{WRITING_SUFFIX}"))
    class_lists = sorted(directory.glob(f"*{CLASS_LIST_SUFFIX}"))
    if not written_files and not class_lists:
        return
    now, commands = time.time(), _command_lines()
    for class_list in class_lists:
        with contextlib.suppress(OSError):
            if commands is not None and not any(os.fsencode(class_list) in line for line in commands):
                class_list.unlink()
    for written in written_files:
        with contextlib.suppress(OSError):
            age = now - written.stat().st_mtime
            if age < SETTLED_S or (
                commands is not None and any(os.fsencode(written) in line for line in commands)
            ):
                continue  # being written: its writer has the path on its command line
            archive = _archive_of(written)
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


if __name__ == "__main__":
    write_when_exited(Path(sys.argv[1]), Path(sys.argv[2]))
