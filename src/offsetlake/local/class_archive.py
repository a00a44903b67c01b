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
file) writes one at exit (``-XX:ArchiveClassesAtExit``, ~180 MB) into a file of its own; a later
JVM adopts that file once it has settled and ``java -version`` maps it, because a file cut short
by a kill crashes every JVM that maps it (measured: SIGABRT, even under ``-Xshare:auto``). An
archive of another JDK or other options is simply not used.

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
        _prune(directory, keep=archive)
        if archive.exists() or _adopt_written(archive):
            os.utime(archive)  # in use: pruning goes by when an archive was last mapped
            return f"-XX:SharedArchiveFile={archive} {_QUIET}"
        writing = _claim(archive) if write else None
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


def _prune(directory: Path, *, keep: Path) -> None:
    """Delete the files of other archives not mapped for PRUNE_AFTER_S (never ``keep``'s)."""
    now = time.time()
    for path in directory.iterdir():
        if path.name.startswith(f"{keep.stem}."):
            continue
        with contextlib.suppress(OSError):
            if now - path.stat().st_mtime > PRUNE_AFTER_S:
                path.unlink()


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


def _adopt_written(archive: Path) -> bool:
    """Promote a finished archive a JVM wrote at exit (settled for SETTLED_S and accepted by the
    JVM: a file cut short by a kill crashes every JVM that maps it, so it must never be used);
    delete written files that stayed unusable. True when ``archive`` exists afterwards."""
    now = time.time()
    for written in sorted(archive.parent.glob(f"{archive.stem}.*{WRITING_SUFFIX}")):
        age = now - written.stat().st_mtime
        if age < SETTLED_S:
            continue
        if _accepted(written):
            with contextlib.suppress(FileExistsError):
                os.link(written, archive)
            archive.with_suffix(".claim").unlink(missing_ok=True)
            written.unlink(missing_ok=True)
            return True
        if age > CLAIM_TTL_S:
            written.unlink(missing_ok=True)
    return archive.exists()


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
