"""The wheel's entry point, called as a Databricks python_wheel_task calls it.

The task runner looks the entry point up in the installed package's metadata, puts the task
parameters in ``sys.argv`` and calls the function; what the function returns is ignored. So a
non-zero status must leave as SystemExit, or a failed ``apply`` would be a green task.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from offsetlake.cli import main as cli_main


def wheel_task_entry_point() -> Callable[[], object]:
    (entry,) = entry_points(group="console_scripts", name="offsetlake")
    return entry.load()


def call_like_the_task_runner(monkeypatch: pytest.MonkeyPatch, *parameters: str) -> object:
    monkeypatch.setattr("sys.argv", ["offsetlake", *parameters])
    return wheel_task_entry_point()()


def test_a_failed_command_raises_system_exit_with_its_status(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The handler refuses the unreadable properties file (a UsageError, returned by main() as 2)
    # before any Spark or Kafka work: the status is a return value, not argparse's own exit.
    monkeypatch.setenv("OFFSETLAKE_HOME", str(tmp_path))
    assert cli_main.main(["apply", "--kafka-properties", str(tmp_path / "missing.properties")]) == 2
    with pytest.raises(SystemExit) as raised:
        call_like_the_task_runner(monkeypatch, "apply", "--kafka-properties", str(tmp_path / "missing"))
    assert raised.value.code == 2


@pytest.mark.parametrize("status", [1, 3])
def test_apply_failed_or_refused_is_not_a_return_value(monkeypatch: pytest.MonkeyPatch, status: int) -> None:
    monkeypatch.setattr(cli_main, "main", lambda argv=None: status)
    with pytest.raises(SystemExit) as raised:
        call_like_the_task_runner(monkeypatch, "apply")
    assert raised.value.code == status


def test_success_returns_normally(monkeypatch: pytest.MonkeyPatch) -> None:
    """SystemExit(0) is not raised: a clean return is what every task runner reads as success."""
    monkeypatch.setattr(cli_main, "main", lambda argv=None: 0)
    assert call_like_the_task_runner(monkeypatch, "apply") is None
