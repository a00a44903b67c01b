"""The JVM decides whether a written class-data archive may be used: a real JDK, real archives."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from offsetlake.local.class_archive import (
    CACHE_DIR_ENV,
    DISABLE_ENV,
    _accepted,
    _java_binary,
    class_archive_options,
)
from offsetlake.local.processes import descendants

pytestmark = pytest.mark.skipif(_java_binary() is None, reason="no java on PATH")


@pytest.fixture(scope="module")
def written_archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    archive = tmp_path_factory.mktemp("cds") / "small.jsa"
    java = _java_binary()
    assert java is not None
    subprocess.run(
        [str(java), f"-XX:ArchiveClassesAtExit={archive}", "-Xlog:cds=off", "-version"],
        check=True,
        capture_output=True,
    )
    assert archive.stat().st_size > 0
    return archive


def test_an_archive_written_whole_is_accepted(written_archive: Path) -> None:
    assert _accepted(written_archive)


def test_an_archive_cut_short_is_refused_without_leaving_a_crash_report(
    written_archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    cut = tmp_path / "cut.jsa"
    with written_archive.open("rb") as whole, cut.open("wb") as part:
        part.write(whole.read(written_archive.stat().st_size // 2))
    assert not _accepted(cut)
    assert not list(tmp_path.glob("hs_err*"))


WAIT_FOR_STDIN = "class Wait { public static void main(String[] a) throws Exception { System.in.read(); } }"


def test_a_jvm_records_its_classes_and_a_detached_writer_dumps_them_once_it_has_exited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The JVM's exit writes nothing (nobody waits for a dump); the writer, nobody's child, dumps
    after it, and the next start maps the archive."""
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(DISABLE_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "Wait.java").write_text(WAIT_FOR_STDIN)
    options = class_archive_options("session", "-XX:TieredStopAtLevel=1")
    assert "-XX:DumpLoadedClassList=" in options and "ArchiveClassesAtExit" not in options
    assert not [pid for pid in descendants(os.getpid()) if "class_archive" in _command(pid)]
    java = _java_binary()
    assert java is not None
    jvm = subprocess.Popen(
        [str(java), "-cp", str(tmp_path), "-XX:TieredStopAtLevel=1", *options.split(), "Wait.java"],
        stdin=subprocess.PIPE,
    )
    jvm.communicate(b"\n", timeout=120)
    assert jvm.returncode == 0
    mapping = ""
    deadline = time.monotonic() + 600  # a hang bound, not a measurement: the dump is niced
    while "-XX:SharedArchiveFile=" not in mapping:
        assert time.monotonic() < deadline, list((tmp_path / "cache").iterdir())
        time.sleep(1)
        mapping = class_archive_options("session", "-XX:TieredStopAtLevel=1", write=False)
    (archive,) = (tmp_path / "cache").glob("*.jsa")
    assert not list((tmp_path / "cache").glob("*.classlist")) and not list(
        (tmp_path / "cache").glob("*.writing")
    )
    mapped = subprocess.run(
        [str(java), "-Xshare:on", f"-XX:SharedArchiveFile={archive}", "-cp", str(tmp_path), "-version"],
        capture_output=True,
        check=False,
    )
    assert mapped.returncode == 0, mapped.stderr


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""
