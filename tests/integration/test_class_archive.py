"""The JVM decides whether a written class-data archive may be used: a real JDK, real archives."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from offsetlake.local.class_archive import _accepted, _java_binary

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
