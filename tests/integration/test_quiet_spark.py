"""A local command starts Spark without the JVM's banner on the terminal; ``--verbose`` shows it.

The banner ("Using incubator modules", "Setting default log level", "To adjust logging level")
is printed by the JVM itself, so only a real process shows whether it reaches the terminal.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from offsetlake.local.home import HOME_ENV, LocalHome

pytestmark = pytest.mark.spark

BANNER = ("Using incubator modules", "Setting default log level", "To adjust logging level")


def _sql(home: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "offsetlake.cli", *flags, "sql", "SELECT 1 AS one"],
        env={**os.environ, HOME_ENV: str(home)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_jvm_banner_goes_to_the_log_file_not_the_terminal(tmp_path: Path) -> None:
    completed = _sql(tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert "one" in completed.stdout
    for line in BANNER:
        assert line not in completed.stderr
        assert line not in completed.stdout
    logged = LocalHome(tmp_path).spark_log.read_text(encoding="utf-8")
    assert "Setting default log level" in logged


def test_verbose_shows_the_jvm_banner(tmp_path: Path) -> None:
    completed = _sql(tmp_path, "--verbose")
    assert completed.returncode == 0, completed.stderr
    assert "Setting default log level" in completed.stderr
