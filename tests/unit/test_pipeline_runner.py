"""How the runner judges a spark-pipelines run from its output (pure: no Spark, no Kafka).

The excerpts follow the shape of real runs with pyspark 4.2 (event lines, a JVM log line, a
client traceback); the integration tests run the real thing.
"""

from __future__ import annotations

import argparse
import io
import os
import signal
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
import yaml

from offsetlake.cli import pipeline as pipeline_cli
from offsetlake.cli.context import Context
from offsetlake.cli.pipeline import handle_run, run_every, update_line
from offsetlake.cli.render import sql_table
from offsetlake.contract.settings import PipelineSettings
from offsetlake.errors import InvalidValueError, StopSignalError, UsageError
from offsetlake.local import pipeline_update
from offsetlake.local.connect_server import ConnectServerError, WarmServer
from offsetlake.local.gold_guard import GUARDED_TABLES
from offsetlake.local.home import LocalHome
from offsetlake.local.locks import HomeInUseError
from offsetlake.local.pipeline_spec import run_arguments, spark_pipelines_command, write_spec
from offsetlake.local.pipeline_update import PipelineRunResult, run_pipeline
from offsetlake.local.update_log import UpdateLog, judge
from offsetlake.mirror.clusters import ClusterEndpoint

KNOWN_ERROR = (
    "pyspark.errors.exceptions.base.PySparkValueError: [UNKNOWN_RESPONSE] Unknown response: "
    'Plan observed(__python_accumulator__=[binary: "\\200\\005"'
)
TRACEBACK = [
    "Traceback (most recent call last):",
    '  File ".../pyspark/pipelines/cli.py", line 450, in <module>',
    "    main()",
]
GOOD_FLOWS = [
    "2026-11-21 07:40:02: Flow spark_catalog.offsetlake.bronze_checkpoints is QUEUED.",
    "2026-11-21 07:40:02: Flow spark_catalog.offsetlake.bronze_checkpoints is STARTING.",
    "26/11/21 07:40:03 WARN MicroBatchExecution: source does not support Trigger.AvailableNow.",
    "2026-11-21 07:40:08: Flow spark_catalog.offsetlake.bronze_checkpoints has COMPLETED.",
    "2026-11-21 07:40:09: Flow spark_catalog.offsetlake.offset_history is PLANNING.",
    "2026-11-21 07:40:11: Flow spark_catalog.offsetlake.offset_history has COMPLETED.",
]
RUN_COMPLETED = ["2026-11-21 07:40:12: Run is COMPLETED."]
RECORDED = Path(__file__).parent / "recorded"


def _log(lines: list[str]) -> UpdateLog:
    log = UpdateLog()
    for line in lines:
        log.feed(line + "\n")
    return log


def test_a_clean_exit_with_completed_flows_succeeds() -> None:
    log = _log(GOOD_FLOWS + RUN_COMPLETED)
    assert judge(0, log) == (True, "exit code 0")
    assert [(o.name.rsplit(".", 1)[-1], o.state, o.seconds) for o in log.outcomes()] == [
        ("bronze_checkpoints", "COMPLETED", 6.0),
        ("offset_history", "COMPLETED", 2.0),
    ]


def test_the_known_accumulator_error_after_a_completed_run_is_not_a_failure() -> None:
    succeeded, why = judge(1, _log(GOOD_FLOWS + RUN_COMPLETED + TRACEBACK + [KNOWN_ERROR, '"]).']))
    assert succeeded, why
    assert "UNKNOWN_RESPONSE" in why


def test_a_failed_flow_fails_the_run_even_if_it_later_completed() -> None:
    lines = [
        *GOOD_FLOWS,
        "2026-11-21 07:55:15: Flow 'spark_catalog.offsetlake.bronze_offset_syncs' has FAILED.",
        "Error: [STREAM_FAILED] Query terminated with exception: Race while writing batch 0",
        "2026-11-21 07:55:23: Flow spark_catalog.offsetlake.bronze_offset_syncs has COMPLETED.",
        *RUN_COMPLETED,
    ]
    assert judge(0, _log(lines)) == (False, "flows failed: spark_catalog.offsetlake.bronze_offset_syncs")


def test_a_flow_the_engine_restarted_after_a_failure_and_that_then_completed_is_fine() -> None:
    flow = "spark_catalog.offsetlake.source_log_offsets"
    lines = [
        *GOOD_FLOWS,
        f"2026-11-22 23:41:39: Flow {flow} is STARTING.",
        f"2026-11-22 23:41:39: Flow {flow} is RUNNING.",
        f"2026-11-22 23:41:50: Flow {flow} has COMPLETED.",
        f"2026-11-22 23:41:50: Flow '{flow}' has FAILED.",
        "Error: [STREAM_FAILED] Query terminated with exception: Python worker failed to connect back.",
        f"2026-11-22 23:41:55: Flow {flow} is STARTING.",
        f"2026-11-22 23:41:55: Flow {flow} is RUNNING.",
        f"2026-11-22 23:42:19: Flow {flow} has COMPLETED.",
        *RUN_COMPLETED,
    ]
    assert judge(0, _log(lines)) == (True, "exit code 0")
    failed_again = [*lines[: -1 - len(RUN_COMPLETED)], f"2026-11-22 23:42:19: Flow '{flow}' has FAILED."]
    assert judge(1, _log(failed_again)) == (False, f"flows failed: {flow}")


def test_a_flow_that_failed_for_good_or_was_skipped_fails_the_run() -> None:
    lines = [
        *GOOD_FLOWS,
        "2026-11-21 08:25:12: Flow 'spark_catalog.offsetlake.bronze_group_offsets' has FAILED more than 0 "
        "times and will not be restarted.",
        "2026-11-21 08:25:12: Flow 'spark_catalog.offsetlake.latest_offsets' SKIPPED due to upstream "
        "failure(s).",
    ]
    log = _log(lines)
    assert judge(1, log) == (False, "flows failed: spark_catalog.offsetlake.bronze_group_offsets")
    assert {o.name.rsplit(".", 1)[-1]: o.state for o in log.outcomes()}["latest_offsets"] == "SKIPPED"


def test_skipped_flows_fail_the_run_even_when_no_flow_reported_failed() -> None:
    lines = [
        *GOOD_FLOWS,
        "2026-11-21 08:25:12: Flow 'spark_catalog.offsetlake.quarantine' SKIPPED due to upstream failure(s).",
    ]
    assert judge(0, _log(lines)) == (
        False,
        "flows skipped after an upstream failure: spark_catalog.offsetlake.quarantine",
    )


def test_exit_one_without_a_completed_run_is_a_failure() -> None:
    succeeded, why = judge(1, _log(GOOD_FLOWS + TRACEBACK + [KNOWN_ERROR]))
    assert not succeeded
    assert "did not report COMPLETED" in why


def test_any_other_client_error_is_a_failure_even_after_a_completed_run() -> None:
    other = "pyspark.errors.exceptions.connect.AnalysisException: [TABLE_OR_VIEW_NOT_FOUND] x"
    assert not judge(1, _log(GOOD_FLOWS + RUN_COMPLETED + TRACEBACK + [other]))[0]
    assert not judge(1, _log(GOOD_FLOWS + RUN_COMPLETED + TRACEBACK + [KNOWN_ERROR] + TRACEBACK + [other]))[0]


def _recorded(name: str) -> list[str]:
    return (RECORDED / name).read_text(encoding="utf-8").splitlines()


def test_a_run_whose_flows_all_completed_succeeds_whatever_its_python_workers_printed() -> None:
    """Issue 31, busy machine: workers missed the connect-back window (CANNOT_OPEN_SOCKET
    tracebacks in the shared output), the engine restarted the flow, every flow COMPLETED."""
    log = _log(_recorded("completed_after_worker_errors.log"))
    succeeded, why = judge(1, log)
    assert succeeded, why
    assert why.endswith("; 2 Python worker errors on the way (CANNOT_OPEN_SOCKET x2)")
    assert log.restarts() == 1
    assert [error.split(":")[0] for error in log.client_errors] == [
        "pyspark.errors.exceptions.base.PySparkValueError"
    ]
    assert judge(0, log) == (True, "exit code 0; 2 Python worker errors on the way (CANNOT_OPEN_SOCKET x2)")


def test_the_clients_own_error_still_fails_a_run_beside_worker_errors() -> None:
    lines = _recorded("completed_after_worker_errors.log")
    other = "pyspark.errors.exceptions.connect.AnalysisException: [TABLE_OR_VIEW_NOT_FOUND] x"
    succeeded, why = judge(1, _log([*lines[:-1], other]))
    assert not succeeded
    assert "TABLE_OR_VIEW_NOT_FOUND" in why and "CANNOT_OPEN_SOCKET" not in why


def test_a_flow_failing_on_an_error_of_the_graph_is_told_from_a_transient_failure() -> None:
    """The engine retries both with back-off; only the transient one can come right."""
    fresh = _log(_recorded("selection_on_a_fresh_home.log"))
    assert fresh.graph_errors() == {
        "spark_catalog.offsetlake.quarantine": "key not found: `spark_catalog`.`offsetlake`.`quarantine`"
    }
    succeeded, why = judge(143, fresh)
    assert not succeeded
    assert why.startswith("flows failed: spark_catalog.offsetlake.quarantine; stopped, not retried")
    transient = _log(_recorded("completed_after_worker_errors.log"))
    assert "STREAM_FAILED" in transient.flow_errors["spark_catalog.offsetlake.bronze_group_offsets"]
    assert transient.graph_errors() == {}
    analysis = _log(
        [
            "2026-11-21 07:40:09: Flow 'spark_catalog.offsetlake.latest_offsets' has FAILED.",
            "Error: [UNRESOLVED_COLUMN.WITH_SUGGESTION] A column `x` cannot be resolved. SQLSTATE: 42703",
        ]
    )
    assert list(analysis.graph_errors()) == ["spark_catalog.offsetlake.latest_offsets"]


def test_a_graph_error_stops_the_update_instead_of_waiting_out_the_retries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stand-in for the pipelines CLI prints the recorded failure, then would wait as the
    engine's back-off does (minutes); the update stops it and reports why."""
    script = tmp_path / "engine.py"
    script.write_text(
        "import sys, time\n"
        f"print(open({str(RECORDED / 'selection_on_a_fresh_home.log')!r}).read(), flush=True)\n"
        "time.sleep(600)\n"
    )
    monkeypatch.setattr(pipeline_update, "spark_pipelines_command", lambda *_: [sys.executable, str(script)])
    settings = PipelineSettings(
        target_bootstrap_servers="localhost:1", sources=(ClusterEndpoint("a", "localhost:2"),)
    )
    result = run_pipeline(
        settings, LocalHome.resolve(tmp_path / "home"), refresh=("quarantine",), timeout_s=120
    )
    assert not result.succeeded
    assert "stopped, not retried" in result.explanation
    assert "time limit" not in result.explanation


def test_a_flow_left_unfinished_is_a_failure() -> None:
    lines = [*GOOD_FLOWS, "2026-11-21 07:40:09: Flow spark_catalog.offsetlake.latest_offsets is RUNNING."]
    assert judge(0, _log(lines)) == (False, "flows did not complete: spark_catalog.offsetlake.latest_offsets")


def test_flows_outside_the_refresh_selection_are_excluded_not_unfinished() -> None:
    excluded = "2026-11-21 07:40:02: Flow 'spark_catalog.offsetlake.source_log_offsets' is EXCLUDED."
    assert judge(0, _log([excluded, *GOOD_FLOWS, *RUN_COMPLETED])) == (True, "exit code 0")
    assert judge(1, _log([excluded, *GOOD_FLOWS, *RUN_COMPLETED, *TRACEBACK, KNOWN_ERROR]))[0]


def test_sql_table_aligns_columns_and_shows_nulls() -> None:
    assert sql_table(["a", "long_name"], [(1, None), ("xyz", 2)]).splitlines() == [
        " a   | long_name",
        "-----+-------------",
        " 1   | NULL",
        " xyz | 2",
        "(2 rows)",
    ]


def _restarted(flow: str, failures: int) -> list[str]:
    """A flow that FAILED ``failures`` times, each time restarted by the engine, then COMPLETED."""
    lines = [
        f"2026-11-23 10:00:00: Flow {flow} is STARTING.",
        f"2026-11-23 10:00:01: Flow {flow} is RUNNING.",
    ]
    for attempt in range(failures):
        lines += [
            f"2026-11-23 10:00:0{2 + attempt}: Flow '{flow}' has FAILED.",
            "Error: [STREAM_FAILED] Query terminated with exception: Python worker failed to connect back.",
            f"2026-11-23 10:00:0{2 + attempt}: Flow {flow} is STARTING.",
            f"2026-11-23 10:00:0{2 + attempt}: Flow {flow} is RUNNING.",
        ]
    return [*lines, f"2026-11-23 10:00:09: Flow {flow} has COMPLETED."]


def _result(succeeded: bool, restarts: int) -> PipelineRunResult:
    return PipelineRunResult(succeeded, "why", 0, "COMPLETED", (), 1.0, Path("last-run.log"), (), restarts)


def test_restarts_count_every_failure_the_engine_started_again_in_every_flow() -> None:
    lines = [
        *_restarted("spark_catalog.offsetlake.bronze_checkpoints", 2),
        *_restarted("spark_catalog.offsetlake.source_log_offsets", 1),
        *_restarted("spark_catalog.offsetlake.offset_history", 0),
        *RUN_COMPLETED,
    ]
    log = _log(lines)
    assert log.restarts() == 3
    assert judge(0, log) == (True, "exit code 0")
    assert judge(1, _log([*lines, *TRACEBACK, KNOWN_ERROR]))[0]


def test_a_failure_that_was_not_restarted_is_no_restart_and_fails_the_run() -> None:
    flow = "spark_catalog.offsetlake.bronze_checkpoints"
    log = _log([*_restarted(flow, 1), f"2026-11-23 10:00:10: Flow '{flow}' has FAILED.", *RUN_COMPLETED])
    assert log.restarts() == 1
    assert judge(0, log) == (False, f"flows failed: {flow}")
    assert log.completed_tables() == set()  # its COMPLETED is not real: gold is put back


def test_status_says_completed_with_its_restarts_and_failed_only_for_a_failed_run() -> None:
    assert _result(True, 0).status == "completed"
    assert _result(True, 1).status == "completed after 1 restart"
    assert _result(True, 3).status == "completed after 3 restarts"
    assert _result(False, 3).status == "failed"


def test_a_refresh_selection_is_passed_as_one_comma_separated_list(tmp_path: Path) -> None:
    spec = tmp_path / "spark-pipeline.yml"
    command = spark_pipelines_command(spec, False, ("bronze_checkpoints", "latest_offsets"))
    assert command[-5:] == ["run", "--spec", str(spec), "--refresh", "bronze_checkpoints,latest_offsets"]
    assert run_arguments(spec, False, ()) == ["run", "--spec", str(spec)]
    assert run_arguments(spec, True, ()) == ["run", "--spec", str(spec), "--full-refresh-all"]


@pytest.mark.parametrize("names", [("a,b",), ("",)])
def test_a_name_the_cli_would_split_or_drop_is_refused(names: tuple[str, ...], tmp_path: Path) -> None:
    with pytest.raises(InvalidValueError, match="not a dataset name"):
        run_arguments(tmp_path / "spec.yml", False, names)


def test_a_full_refresh_cannot_be_limited_to_a_selection(tmp_path: Path) -> None:
    with pytest.raises(InvalidValueError, match="full refresh"):
        run_arguments(tmp_path / "spec.yml", True, ("latest_offsets",))


def test_the_spec_lets_the_engine_retry_a_failed_flow_five_times(tmp_path: Path) -> None:
    settings = PipelineSettings(
        target_bootstrap_servers="localhost:1", sources=(ClusterEndpoint("a", "localhost:2"),)
    )
    spec = yaml.safe_load(write_spec(LocalHome(tmp_path), settings).read_text())
    assert spec["configuration"]["spark.sql.pipelines.maxFlowRetryAttempts"] == "5"


def test_the_spec_runs_the_flows_without_artifact_isolation(tmp_path: Path) -> None:
    """With it, every update left about ten Python daemons on a kept-warm server (issue 50)."""
    settings = PipelineSettings(
        target_bootstrap_servers="localhost:1", sources=(ClusterEndpoint("a", "localhost:2"),)
    )
    spec = yaml.safe_load(write_spec(LocalHome(tmp_path), settings).read_text())
    assert spec["configuration"]["spark.sql.artifact.isolation.enabled"] == "false"


def test_an_update_on_a_warm_server_of_another_home_is_refused(tmp_path: Path) -> None:
    settings = PipelineSettings(
        target_bootstrap_servers="localhost:1", sources=(ClusterEndpoint("a", "localhost:2"),)
    )
    other = LocalHome.resolve(tmp_path / "other")
    server = WarmServer(other)
    with pytest.raises(InvalidValueError, match="serves"):
        run_pipeline(settings, LocalHome.resolve(tmp_path / "home"), server=server)
    with pytest.raises(InvalidValueError, match="Kafka properties"):
        run_pipeline(settings, other, server=server, kafka_properties=tmp_path / "client.properties")
    with pytest.raises(ConnectServerError, match="not running"):
        run_pipeline(settings, other, server=server)


def test_an_update_line_of_the_sync_loop_shows_restarts_and_why_it_failed() -> None:
    assert update_line(2, _result(True, 1)).endswith(" update 2: completed after 1 restart in 1.0s")
    assert update_line(3, _result(False, 0)).endswith(" update 3: failed in 1.0s: why (log: last-run.log)")


def test_the_sync_loop_refuses_a_repeated_full_refresh_and_a_zero_interval() -> None:
    context = Context(out=io.StringIO(), err=io.StringIO())
    with pytest.raises(UsageError, match="--full-refresh"):
        handle_run(argparse.Namespace(every=timedelta(seconds=60), full_refresh=True), context)
    with pytest.raises(UsageError, match="above zero"):
        handle_run(argparse.Namespace(every=timedelta(0), full_refresh=False), context)


class _IdleServer:
    """A WarmServer stand-in: up once started, starts no JVM."""

    url = "sc://localhost:0"

    def __init__(self, *_: object, **__: object) -> None:
        self.up = False

    def __enter__(self) -> _IdleServer:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def alive(self) -> bool:
        return self.up

    def stop(self) -> None:
        self.up = False

    def start(self, interrupted: Callable[[], bool] | None = None) -> bool:
        self.up = True
        return True


def test_the_sync_loop_skips_an_update_whose_run_lock_a_reader_holds_and_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failover's gold reads hold the run lock shared: that round is skipped, not a failure."""
    outcomes: list[object] = [HomeInUseError("local home is in use by process 42 (offsetlake failover)")]
    outcomes += [_result(True, 0), StopSignalError(15)]

    def update(*_: object, **__: object) -> PipelineRunResult:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        assert isinstance(outcome, PipelineRunResult)
        return outcome

    monkeypatch.setattr(pipeline_cli, "WarmServer", _IdleServer)
    monkeypatch.setattr(pipeline_cli, "run_pipeline", update)
    context = Context(out=io.StringIO(), err=io.StringIO())
    settings = PipelineSettings(
        target_bootstrap_servers="localhost:1", sources=(ClusterEndpoint("a", "localhost:2"),)
    )
    with pytest.raises(StopSignalError):
        run_every(settings, LocalHome(tmp_path), timedelta(milliseconds=1), None, context)
    lines = context.out.getvalue().splitlines()
    assert lines[1].endswith("update 1: skipped: local home is in use by process 42 (offsetlake failover)")
    assert lines[2].endswith("update 2: completed in 1.0s")


def test_a_sigterm_after_the_run_completed_keeps_the_updates_gold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 46: SIGTERM after "Run is COMPLETED" threw the completed update's gold away (every
    table put back), so a failover could apply an older translation past the true position. A
    stand-in for the pipelines CLI rewrites gold, reports every flow and the run COMPLETED, then
    lingers (as the client does on its way out); the signal comes when the run's event is read."""
    home = LocalHome(tmp_path / "home")
    for table in GUARDED_TABLES:
        (home.schema_dir / table).mkdir(parents=True)
        (home.schema_dir / table / "old.parquet").write_bytes(b"v1")
    events = [
        f"2026-11-28 02:00:00: Flow spark_catalog.offsetlake.{table} has COMPLETED."
        for table in GUARDED_TABLES
    ]
    script = tmp_path / "engine.py"
    script.write_text(
        "import sys, time\n"
        "from pathlib import Path\n"
        f"for table in {list(GUARDED_TABLES)!r}:\n"
        f"    (Path({str(home.schema_dir)!r}) / table / 'old.parquet').unlink()\n"
        f"    (Path({str(home.schema_dir)!r}) / table / 'new.parquet').write_bytes(b'v2')\n"
        f"print({chr(10).join([*events, *RUN_COMPLETED])!r}, flush=True)\n"
        "time.sleep(600)\n"
    )
    monkeypatch.setattr(pipeline_update, "spark_pipelines_command", lambda *_: [sys.executable, str(script)])

    def echo(line: str) -> None:
        if line == RUN_COMPLETED[0]:
            os.kill(os.getpid(), signal.SIGTERM)  # handled in the main thread: StopSignalError

    settings = PipelineSettings(
        target_bootstrap_servers="localhost:1", sources=(ClusterEndpoint("a", "localhost:2"),)
    )
    with pytest.raises(StopSignalError):
        run_pipeline(settings, home, echo=echo)
    for table in GUARDED_TABLES:
        assert [path.name for path in (home.schema_dir / table).iterdir()] == ["new.parquet"], table
    assert not home.gold_backup.exists()
