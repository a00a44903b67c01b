"""The class-data archive's life: one writer at a time, adopted only once a JVM maps it."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offsetlake.local import class_archive
from offsetlake.local.class_archive import (
    CACHE_DIR_ENV,
    CLAIM_TTL_S,
    DISABLE_ENV,
    PRUNE_AFTER_S,
    class_archive_options,
    dump_command,
)

OPTIONS = "-XX:TieredStopAtLevel=1"


RECORDS = "-XX:DumpLoadedClassList="


@pytest.fixture
def writers(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Path, Path]]:
    """The writers started, (class list, file written), none started for real."""
    started: list[tuple[Path, Path]] = []
    monkeypatch.setattr(class_archive, "_start_writer", lambda *paths: started.append(paths))
    return started


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writers: list[tuple[Path, Path]]) -> Path:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path))
    monkeypatch.delenv(DISABLE_ENV, raising=False)
    return tmp_path


def _written_path(options: str) -> Path:
    """The file the writer of the JVM started with ``options`` dumps the archive to."""
    (flag,) = [word for word in options.split() if word.startswith(RECORDS)]
    return Path(flag.split("=", 1)[1]).with_suffix(".writing")


def _age(path: Path, seconds: float) -> None:
    past = time.time() - seconds
    os.utime(path, (past, past))


def test_one_jvm_at_a_time_writes_the_archive(cache: Path, writers: list[tuple[Path, Path]]) -> None:
    first = class_archive_options("pipeline", OPTIONS)
    assert RECORDS in first
    assert _written_path(first).parent == cache
    assert writers == [(_written_path(first).with_suffix(".classlist"), _written_path(first))]
    assert class_archive_options("pipeline", OPTIONS) == ""  # the claim is held
    assert RECORDS in class_archive_options("session", OPTIONS)  # its own claim


def test_an_abandoned_claim_is_taken_over(cache: Path) -> None:
    class_archive_options("pipeline", OPTIONS)
    (claim,) = cache.glob("*.claim")
    _age(claim, CLAIM_TTL_S + 1)
    assert RECORDS in class_archive_options("pipeline", OPTIONS)


def _write_one_the_jvm_maps(monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str, str]:
    """A JVM claimed, wrote its archive whole and exited; the next start adopts it: (the file, the
    writer's options, the next JVM's options)."""
    writing = class_archive_options("pipeline", OPTIONS)
    written = _written_path(writing)
    written.write_bytes(b"archive")
    _age(written, 10)
    monkeypatch.setattr(class_archive, "_accepted", lambda path: path == written)
    return written, writing, class_archive_options("pipeline", OPTIONS)


def test_a_written_archive_the_jvm_maps_is_adopted_and_used(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written, _, options = _write_one_the_jvm_maps(monkeypatch)
    (archive,) = cache.glob("*.jsa")
    assert f"-XX:SharedArchiveFile={archive}" in options
    assert archive.read_bytes() == b"archive"
    assert not written.exists() and not list(cache.glob("*.claim"))
    assert class_archive_options("pipeline", OPTIONS) == options


def test_a_file_cut_short_by_a_writer_that_is_gone_is_removed_at_the_next_start_and_never_used(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A JVM killed while writing left 108 MB behind: the next start deletes it and its claim."""
    written = _written_path(class_archive_options("pipeline", OPTIONS))
    written.write_bytes(b"cut")
    monkeypatch.setattr(class_archive, "_accepted", lambda path: False)
    _age(written, 10)
    assert RECORDS in class_archive_options("pipeline", OPTIONS)  # claimed anew
    assert not written.exists()
    assert not list(cache.glob("*.jsa"))


def test_a_stale_file_of_another_purpose_is_removed_at_any_start(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written = _written_path(class_archive_options("server", OPTIONS))
    written.write_bytes(b"cut")
    _age(written, 10)
    monkeypatch.setattr(class_archive, "_accepted", lambda path: False)
    class_archive_options("session", OPTIONS)
    assert not written.exists()
    assert not list(cache.glob("server-*"))  # its claim too: the next server JVM writes again


def test_a_whole_file_of_another_purpose_is_adopted_at_any_start(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written = _written_path(class_archive_options("server", OPTIONS))
    written.write_bytes(b"archive")
    _age(written, 10)
    monkeypatch.setattr(class_archive, "_accepted", lambda path: path == written)
    class_archive_options("session", OPTIONS)
    (archive,) = cache.glob("server-*.jsa")
    assert archive.read_bytes() == b"archive" and not written.exists()
    assert f"-XX:SharedArchiveFile={archive}" in class_archive_options("server", OPTIONS)


def test_a_file_whose_writer_still_runs_is_left_alone(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer's dump has the file on its command line; here a stand-in process has it."""
    written = _written_path(class_archive_options("pipeline", OPTIONS))
    written.write_bytes(b"half")
    _age(written, 10)  # even untouched for a while (a busy machine)
    monkeypatch.setattr(class_archive, "_accepted", lambda path: pytest.fail("checked while written"))
    script = "import sys; print('up', flush=True); sys.stdin.read()"
    with subprocess.Popen(
        [sys.executable, "-c", script, f"-XX:SharedArchiveFile={written}"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as writer:
        assert writer.stdout is not None and writer.stdout.readline() == "up\n"
        assert class_archive_options("pipeline", OPTIONS) == ""
        assert written.exists()
        writer.communicate("")  # the writer exits without finishing the file
    monkeypatch.setattr(class_archive, "_accepted", lambda path: False)
    assert RECORDS in class_archive_options("pipeline", OPTIONS)
    assert not written.exists()


def test_without_proc_a_refused_file_is_removed_only_once_abandoned(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where no /proc says whether its writer runs, a refused file waits CLAIM_TTL_S."""
    monkeypatch.setattr(class_archive, "_command_lines", lambda: None)
    written = _written_path(class_archive_options("pipeline", OPTIONS))
    written.write_bytes(b"cut")
    monkeypatch.setattr(class_archive, "_accepted", lambda path: False)
    _age(written, 10)
    assert class_archive_options("pipeline", OPTIONS) == ""  # still claimed, not adopted
    assert written.exists()
    _age(written, CLAIM_TTL_S + 1)
    assert RECORDS in class_archive_options("pipeline", OPTIONS)
    assert not written.exists()
    assert not list(cache.glob("*.jsa"))


def _archive(cache: Path, name: str, size: int, age_s: float) -> Path:
    path = cache / f"{name}.jsa"
    path.write_bytes(b"a" * size)
    _age(path, age_s)
    return path


def test_the_least_recently_mapped_archives_beyond_the_count_are_evicted(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(class_archive, "MAX_ARCHIVES", 3)
    newer = _archive(cache, "server-1111111111111111", 10, 60)
    older = _archive(cache, "session-2222222222222222", 10, 120)
    oldest = _archive(cache, "pipeline-3333333333333333", 10, 180)
    assert RECORDS in class_archive_options("pipeline", OPTIONS)  # the third place
    assert newer.exists() and older.exists()
    assert not oldest.exists()


def test_the_least_recently_mapped_archives_beyond_the_bytes_are_evicted_never_the_one_in_use(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, _, mapping = _write_one_the_jvm_maps(monkeypatch)
    (in_use,) = cache.glob("*.jsa")
    _age(in_use, 3600)  # mapped long ago, mapped again now
    monkeypatch.setattr(class_archive, "MAX_BYTES", in_use.stat().st_size + 25)
    newer = _archive(cache, "server-1111111111111111", 20, 60)
    older = _archive(cache, "session-2222222222222222", 20, 120)
    assert class_archive_options("pipeline", OPTIONS) == mapping
    assert in_use.exists() and newer.exists()
    assert not older.exists()


def test_a_jvm_that_maps_no_archive_and_writes_none_takes_no_place(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An update with C2 (write=False) maps an archive only if one exists: it evicts nothing."""
    monkeypatch.setattr(class_archive, "MAX_ARCHIVES", 2)
    kept = [_archive(cache, f"server-{n}111111111111111", 10, 60 * n) for n in (1, 2)]
    assert class_archive_options("pipeline", "-XX:+UseSerialGC", write=False) == ""
    assert all(path.exists() for path in kept)


def test_a_file_still_being_written_is_not_checked(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    written = _written_path(class_archive_options("pipeline", OPTIONS))
    written.write_bytes(b"half")
    monkeypatch.setattr(class_archive, "_accepted", lambda path: pytest.fail("checked while written"))
    assert class_archive_options("pipeline", OPTIONS) == ""


def test_other_jvm_options_get_another_archive(cache: Path) -> None:
    class_archive_options("pipeline", OPTIONS)
    assert RECORDS in class_archive_options("pipeline", "-XX:+UseSerialGC")


def test_off_starts_jvms_without_an_archive(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DISABLE_ENV, "off")
    assert class_archive_options("pipeline", OPTIONS) == ""
    assert not list(cache.iterdir())


def test_an_unwritable_cache_costs_nothing_but_the_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv(CACHE_DIR_ENV, str(blocker / "jvm"))
    assert class_archive_options("pipeline", OPTIONS) == ""


def test_a_long_lived_jvm_maps_the_archive_but_never_claims_its_writing(cache: Path) -> None:
    assert class_archive_options("session", OPTIONS, write=False) == ""
    assert not list(cache.glob("*.claim"))
    assert RECORDS in class_archive_options("session", OPTIONS)


def test_archives_of_other_keys_unused_for_a_week_are_deleted_and_the_one_in_use_stays(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_one_the_jvm_maps(monkeypatch)
    (archive,) = cache.glob("*.jsa")
    _age(archive, PRUNE_AFTER_S + 1)
    aged = archive.stat().st_mtime
    old_checkout = cache / "pipeline-0123456789abcdef.jsa"
    old_checkout.write_bytes(b"another pyspark's")
    _age(old_checkout, PRUNE_AFTER_S + 1)
    recent = cache / "session-0123456789abcdef.jsa"
    recent.write_bytes(b"used yesterday")
    _age(recent, 24 * 3600)
    assert "-XX:SharedArchiveFile=" in class_archive_options("pipeline", OPTIONS)
    assert archive.exists() and archive.stat().st_mtime > aged + PRUNE_AFTER_S  # mapped: marked as used now
    assert not old_checkout.exists()
    assert recent.exists()


def test_no_jvm_writes_at_its_exit_and_nothing_waits_for_the_writer(cache: Path) -> None:
    """The exit that kept the home locked 19-38 s (the first make demo waited for it) writes nothing:
    the JVM only records the classes it loads; the detached writer dumps them after it."""
    options = class_archive_options("pipeline", OPTIONS)
    assert "ArchiveClassesAtExit" not in options and RECORDS in options


def test_a_class_list_whose_writer_is_gone_is_removed_at_the_next_start_not_one_being_written(
    cache: Path,
) -> None:
    orphan = cache / "pipeline-0123456789abcdef.0badc0de.classlist"
    orphan.write_text("java/lang/Object\n")
    live = cache / "session-0123456789abcdef.c0ffee00.classlist"
    live.write_text("java/lang/Object\n")
    script = "import sys; print('up', flush=True); sys.stdin.read()"
    with subprocess.Popen(
        [sys.executable, "-c", script, str(live)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as writer:
        assert writer.stdout is not None and writer.stdout.readline() == "up\n"
        class_archive_options("server", OPTIONS)
        writer.communicate("")
    assert not orphan.exists()
    assert live.exists()


def test_the_dump_takes_the_recording_jvms_classpath_and_options_and_nothing_after_its_main_class(
    tmp_path: Path,
) -> None:
    class_list, written = tmp_path / "a.classlist", tmp_path / "a.writing"
    argv = [
        "/jdk/bin/java",
        "-cp",
        "/spark/conf:/spark/jars/*",
        "-Xmx1g",
        f"{RECORDS}{class_list}",
        "-XX:TieredStopAtLevel=1",
        "--add-opens=java.base/java.lang=ALL-UNNAMED",
        "org.apache.spark.deploy.SparkSubmit",
        "--conf",
        f"spark.driver.extraJavaOptions={RECORDS}{class_list}",
    ]
    assert dump_command(argv, class_list, written) == [
        "/jdk/bin/java",
        "-Xshare:dump",
        f"-XX:SharedClassListFile={class_list}",
        f"-XX:SharedArchiveFile={written}",
        "-cp",
        "/spark/conf:/spark/jars/*",
        "-Xmx1g",
        "-XX:TieredStopAtLevel=1",
        "--add-opens=java.base/java.lang=ALL-UNNAMED",
    ]


@settings(max_examples=50)
@given(
    archives=st.lists(
        st.tuples(st.integers(1, 400), st.integers(1, 10_000)),
        min_size=0,
        max_size=8,
        unique_by=lambda a: a[1],
    ),
    in_use=st.integers(1, 400),
)
def test_after_any_start_the_cache_is_within_its_bounds_and_only_the_oldest_went(
    archives: list[tuple[int, int]], in_use: int
) -> None:
    """Whatever the cache held (sizes, last mapped), a start that maps an archive leaves it, at most
    MAX_ARCHIVES archives and MAX_BYTES, and every archive deleted older than every one kept."""
    with tempfile.TemporaryDirectory() as directory:
        cache = Path(directory)
        keep = _archive(cache, "pipeline-ffffffffffffffff", in_use, 0)
        paths = {
            _archive(cache, f"server-{n:016x}", size, age): age for n, (size, age) in enumerate(archives, 1)
        }
        budget = 1000
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(class_archive, "MAX_BYTES", budget)
            class_archive._prune(cache, keep=keep, reserve=True)
        kept = sorted(cache.glob("*.jsa"))
        assert keep in kept
        assert len(kept) <= class_archive.MAX_ARCHIVES
        assert sum(path.stat().st_size for path in kept) <= budget
        gone = [age for path, age in paths.items() if not path.exists()]
        assert all(age > paths[path] for age in gone for path in kept if path != keep)


def _claimed(cache: Path) -> tuple[Path, Path, Path]:
    """A claim taken: (class list, file the writer dumps to, claim)."""
    written = _written_path(class_archive_options("pipeline", OPTIONS))
    (claim,) = cache.glob("*.claim")
    return written.with_suffix(".classlist"), written, claim


def test_a_writer_whose_jvm_never_starts_gives_the_claim_back(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class_list, written, claim = _claimed(cache)
    monkeypatch.setattr(class_archive, "JVM_APPEARS_S", 0.0)
    monkeypatch.setattr(class_archive, "_recording_jvm", lambda path: None)
    assert not class_archive.write_when_exited(class_list, written)
    assert not claim.exists() and not written.exists()
    assert RECORDS in class_archive_options("pipeline", OPTIONS)  # the next JVM records


def test_a_writer_dumps_only_after_its_jvm_exited_and_a_failed_dump_leaves_nothing(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class_list, written, claim = _claimed(cache)
    class_list.write_text("java/lang/Object\n")
    alive = iter([["/jdk/bin/java", f"{RECORDS}{class_list}", "Main"]] * 3 + [None])
    monkeypatch.setattr(class_archive, "_POLL_S", 0.0)
    monkeypatch.setattr(class_archive, "_recording_jvm", lambda path: next(alive))
    dumped_after: list[int] = []

    def failing_dump(argv: list[str], listed: Path, into: Path) -> list[str]:
        dumped_after.append(sum(1 for _ in alive))  # what was left of the JVM's life: nothing
        into.write_bytes(b"half")
        return [sys.executable, "-c", "raise SystemExit(1)"]

    monkeypatch.setattr(class_archive, "dump_command", failing_dump)
    monkeypatch.setattr(class_archive, "WRITER_NICE", 0)
    assert not class_archive.write_when_exited(class_list, written)
    assert dumped_after == [0]
    assert not written.exists() and not claim.exists() and not class_list.exists()


def test_a_writer_that_cannot_start_leaves_the_jvm_without_an_archive_and_the_claim_free(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def cannot_start(*paths: Path) -> None:
        raise subprocess.CalledProcessError(127, "sh")

    monkeypatch.setattr(class_archive, "_start_writer", cannot_start)
    assert class_archive_options("pipeline", OPTIONS) == ""
    assert not list(cache.glob("*.claim"))
