"""The command line's contract for operator errors: one clear line and exit 2, no traceback."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from offsetlake.cli.main import EXIT_USAGE, main
from offsetlake.clusters import START_HINT
from offsetlake_dev.local_cluster import running_clusters


def test_missing_local_clusters_is_a_clear_usage_error(
    offsetlake_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["pipeline", "run"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("offsetlake: no local clusters recorded")
    assert START_HINT in err
    assert "Traceback" not in err


@pytest.mark.kafka
def test_a_bad_pipeline_setting_is_a_clear_usage_error(
    offsetlake_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Settings are checked before Spark starts; the local clusters only have to be recorded.
    with running_clusters(offsetlake_home, preferred_ports=None):
        code = main(["pipeline", "run", "--set", "offsetlake.replication.policy=bogus"])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert err.startswith("offsetlake: ")
    assert "bogus" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["pipeline", "run", "--target", "t:9092", "--source", "a=s:9092", "--set",
             "offsetlake.replication.seperator=_"],
            "unknown setting 'offsetlake.replication.seperator'; "
            "did you mean offsetlake.replication.separator?",
        ),
        (["apply", "--target", "t:9092", "--groups", "("], "invalid regex '('"),
        (["apply", "--target", "t:9092", "--exclude-groups", ""], "an empty pattern is not allowed"),
        (["apply", "--target", "t:9092", "--timeout", "nan"], "positive, finite number of seconds"),
        (["apply", "--target", "t:9092", "--timeout", "-1"], "positive, finite number of seconds"),
        (["pipeline", "run", "--target", "t:9092"], "--target and --source go together"),
        (["failover", "--source", "nonsense"], "expected ALIAS=BOOTSTRAP"),
    ],
)  # fmt: skip
def test_operator_mistakes_are_one_line_within_seconds(
    argv: list[str], message: str, offsetlake_home: Path
) -> None:
    started = time.monotonic()
    completed = subprocess.run(
        [sys.executable, "-m", "offsetlake.cli", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    seconds = time.monotonic() - started
    assert completed.returncode == EXIT_USAGE, completed.stderr
    assert message in completed.stderr
    assert "Traceback" not in completed.stderr
    assert len(completed.stderr.strip().splitlines()) == 1
    assert seconds < 5, f"{seconds:.1f}s: validated before Spark or Kafka"


def test_a_bad_query_prints_the_spark_error_class_not_a_traceback(
    offsetlake_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sql", "SELEC 1"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("offsetlake: [PARSE_SYNTAX_ERROR] Syntax error at or near 'SELEC'")
    assert "Traceback" not in err
    assert main(["sql", "SELECT * FROM no_such_table"]) == EXIT_USAGE
    assert "[TABLE_OR_VIEW_NOT_FOUND]" in capsys.readouterr().err
