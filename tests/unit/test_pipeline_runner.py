"""How the runner judges a spark-pipelines run from its output (pure: no Spark, no Kafka).

The excerpts follow the shape of real runs with pyspark 4.2 (event lines, a JVM log line, a
client traceback); the integration tests run the real thing.
"""

from __future__ import annotations

from offsetlake.cli.render import sql_table
from offsetlake.local.pipeline_run import RunLog, judge

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


def _log(lines: list[str]) -> RunLog:
    log = RunLog()
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


def test_a_flow_left_unfinished_is_a_failure() -> None:
    lines = [*GOOD_FLOWS, "2026-11-21 07:40:09: Flow spark_catalog.offsetlake.latest_offsets is RUNNING."]
    assert judge(0, _log(lines)) == (False, "flows did not complete: spark_catalog.offsetlake.latest_offsets")


def test_sql_table_aligns_columns_and_shows_nulls() -> None:
    assert sql_table(["a", "long_name"], [(1, None), ("xyz", 2)]).splitlines() == [
        " a   | long_name",
        "-----+-------------",
        " 1   | NULL",
        " xyz | 2",
        "(2 rows)",
    ]
