"""The command line's contract for operator errors: one clear line and exit 2, no traceback."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from offsetlake.cli.main import EXIT_USAGE, run_command
from offsetlake.local.clusters import START_HINT
from offsetlake.local.home import HOME_ENV
from offsetlake.local.processes import descendants
from offsetlake_dev.local_cluster import LOOPBACK, running_clusters
from tests.process_helpers import alive, command_line, offsetlake_cli


def test_missing_local_clusters_is_a_clear_usage_error(
    offsetlake_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_command(["pipeline", "run"]) == EXIT_USAGE
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
        code = run_command(["pipeline", "run", "--set", "offsetlake.replication.policy=bogus"])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert err.startswith("offsetlake: ")
    assert "bogus" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["pipeline", "run", "--target", "{target}", "--source", "a=s:9092", "--set",
             "offsetlake.replication.seperator=_"],
            "unknown setting 'offsetlake.replication.seperator'; "
            "did you mean offsetlake.replication.separator?",
        ),
        (["apply", "--target", "{target}", "--groups", "("], "invalid regex '('"),
        (["apply", "--target", "{target}", "--exclude-groups", ""], "an empty pattern is not allowed"),
        (["apply", "--target", "{target}", "--timeout", "nan"], "positive, finite number of seconds"),
        (["apply", "--target", "{target}", "--timeout", "-1"], "positive, finite number of seconds"),
        (["pipeline", "run", "--target", "{target}"], "--target and --source go together"),
        (["failover", "--source", "nonsense"], "expected ALIAS=BOOTSTRAP"),
    ],
)  # fmt: skip
def test_operator_mistakes_are_one_line_before_spark_or_kafka(
    argv: list[str], message: str, offsetlake_home: Path, tmp_path: Path
) -> None:
    """Refused before any cluster is contacted (the target is a port that counts connections) and
    before Spark (no Java can be found: starting Spark would be another error)."""
    with _listener() as target:
        completed = subprocess.run(
            [sys.executable, "-m", "offsetlake.cli", *(arg.format(target=_address(target)) for arg in argv)],
            env=_without_java(tmp_path),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert _connections(target) == 0, "the target was contacted"
    assert completed.returncode == EXIT_USAGE, completed.stderr
    assert message in completed.stderr
    assert "Traceback" not in completed.stderr
    assert len(completed.stderr.strip().splitlines()) == 1


def test_a_bad_query_prints_the_spark_error_class_not_a_traceback(
    offsetlake_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_command(["sql", "SELEC 1"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("offsetlake: [PARSE_SYNTAX_ERROR] Syntax error at or near 'SELEC'")
    assert "Traceback" not in err
    assert run_command(["sql", "SELECT * FROM no_such_table"]) == EXIT_USAGE
    assert "[TABLE_OR_VIEW_NOT_FOUND]" in capsys.readouterr().err


# Writes one gold translation into the home's warehouse, then holds the home's local Spark (and
# so its Derby metastore) until stdin closes: a second process on the home, as an operator has.
GOLD_WRITER = """
import sys
from datetime import UTC, datetime
from offsetlake.local.spark import get_local_spark, stop_local_spark
from offsetlake.contract.tables import LATEST_OFFSETS
spark = get_local_spark()
now = datetime.now(UTC)
row = ("us-east", "billing", "us-east.orders", 0, 5, 105, "checkpoint", "", now, now, None, False, now)
gold = spark.createDataFrame([row], LATEST_OFFSETS.schema_ddl)
gold.write.mode("overwrite").saveAsTable(f"offsetlake.{LATEST_OFFSETS.name}")
print("ready", flush=True)
sys.stdin.read()
stop_local_spark()
"""


@contextlib.contextmanager
def _listener() -> Iterator[socket.socket]:
    """A loopback port that takes connections (the kernel completes them) and never answers."""
    with socket.socket() as listening:
        listening.bind((LOOPBACK, 0))
        listening.listen(16)
        yield listening


def _address(listening: socket.socket) -> str:
    return f"{LOOPBACK}:{listening.getsockname()[1]}"


def _connections(listening: socket.socket) -> int:
    """Connections made to ``listening`` so far (each accepted and closed here)."""
    listening.setblocking(False)
    count = 0
    while True:
        try:
            connection, _ = listening.accept()
        except BlockingIOError:
            return count
        connection.close()
        count += 1


def _without_java(tmp_path: Path) -> dict[str, str]:
    """This environment with no Java to find: a command that started Spark would fail otherwise."""
    empty = tmp_path / "no-java"
    empty.mkdir(exist_ok=True)
    return {**os.environ, "JAVA_HOME": str(empty), "PATH": str(empty)}


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


@pytest.mark.spark
def test_a_busy_home_names_its_holder_and_an_unreachable_target_is_one_line(tmp_path: Path) -> None:
    target = f"{LOOPBACK}:{_closed_port()}"
    holder = subprocess.Popen(
        [sys.executable, "-c", GOLD_WRITER],
        env={**os.environ, HOME_ENV: str(tmp_path)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline().strip() == "ready"
        with _listener() as untouched:
            busy = offsetlake_cli(tmp_path, "plan", "--target", _address(untouched), timeout_s=120)
            assert _connections(untouched) == 0, "refused only after contacting the target"
        assert busy.returncode == 1, busy.stderr
        assert busy.stderr.startswith(f"offsetlake plan: error: local home {tmp_path} is in use by process ")
        assert f"(process {holder.pid})" in busy.stderr or f"process {holder.pid} (" in busy.stderr
        assert len(busy.stderr.strip().splitlines()) == 1, busy.stderr
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)

    unreachable = offsetlake_cli(tmp_path, "plan", "--target", target, "--timeout", "3", timeout_s=120)
    assert unreachable.returncode == 1, unreachable.stderr
    lines = unreachable.stderr.strip().splitlines()
    assert lines[-1].startswith(f"offsetlake plan: error: target cluster {target}: "), lines
    assert "Traceback" not in unreachable.stderr
    ours = [line for line in lines if line.startswith("offsetlake")]  # the rest is the JVM's banner
    assert len(ours) == 2, lines  # the client's first line about the problem, then the error
    assert "Connect to" in ours[0]

    # --verbose lets every client line through: tests/unit/test_client_logging.py (one JVM less here).


@pytest.mark.spark
def test_sigterm_to_plan_ends_it_without_a_jvm_and_leaves_no_process(tmp_path: Path) -> None:
    """A local plan reads gold with pyarrow: no JVM starts, and SIGTERM while it waits for the target
    ends it at once (exit 143) with nothing left behind. The target takes the connection and never
    answers, so the plan is signalled once it is surely waiting on it, however slow the machine."""
    writer = subprocess.Popen(
        [sys.executable, "-c", GOLD_WRITER],
        env={**os.environ, HOME_ENV: str(tmp_path)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdin is not None and writer.stdout is not None
    assert writer.stdout.readline().strip() == "ready"
    writer.stdin.close()
    writer.wait(timeout=60)

    with _listener() as silent:
        plan = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "offsetlake.cli",
                "plan",
                "--target",
                _address(silent),
                "--timeout",
                "300",
            ],
            env={**os.environ, HOME_ENV: str(tmp_path)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        seen: set[int] = set()
        held: socket.socket | None = None
        silent.settimeout(0.1)
        # Until the plan connects (the event), or ends: it cannot wait past its own --timeout.
        while held is None and plan.poll() is None:
            seen.update(descendants(plan.pid))
            with contextlib.suppress(TimeoutError):
                held, _ = silent.accept()  # the plan now waits for the target's answer
        assert plan.poll() is None, f"plan ended before it reached the target: {plan.communicate()[1]}"
        assert held is not None, "the plan never reached the target"
        seen.update(descendants(plan.pid))
        assert not [pid for pid in seen if "java" in command_line(pid)]
        plan.send_signal(signal.SIGTERM)
        _, err = plan.communicate(timeout=60)
        held.close()
    assert plan.returncode == 128 + signal.SIGTERM, err
    assert "offsetlake plan: interrupted by SIGTERM" in err
    assert [pid for pid in seen if alive(pid)] == []
