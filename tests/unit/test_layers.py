"""tests/unit/conftest.py keeps the unit layer's promise: a unit test that asks for Spark or a broker,
directly or through another fixture, fails before either is started."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.unit.conftest import FORBIDDEN_IN_UNIT

REPO_ROOT = Path(__file__).resolve().parents[2]

# Stand-ins for tests/conftest.py's session fixtures, each saying when it starts.
PROBE = (
    "import pytest\n\n"
    + "".join(
        f"@pytest.fixture(scope='session')\ndef {name}():\n    print('STARTED {name}')\n\n\n"
        f"def test_asks_for_{name}({name}):\n    pass\n\n\n"
        for name in FORBIDDEN_IN_UNIT
    )
    + (
        "@pytest.fixture\ndef through_another(source_bootstrap):\n    return source_bootstrap\n\n\n"
        "def test_asks_through_another_fixture(through_another):\n    pass\n\n\n"
        "def test_asks_for_neither(tmp_path):\n    pass\n"
    )
)


def test_a_unit_test_asking_for_spark_or_a_broker_fails_before_either_starts(tmp_path: Path) -> None:
    (tmp_path / "test_probe.py").write_text(PROBE)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    isolated = ["-c", str(tmp_path / "pytest.ini"), "--rootdir", str(tmp_path), "-p", "no:cacheprovider"]
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-s", "-p", "tests.unit.conftest", *isolated, str(tmp_path)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 1, output
    assert "STARTED" not in output
    assert f"1 passed, {len(FORBIDDEN_IN_UNIT) + 1} errors" in output
    for name in FORBIDDEN_IN_UNIT:
        assert f"test_asks_for_{name} asks for {name}" in output
    assert "test_asks_through_another_fixture asks for source_bootstrap" in output
