"""Run one pipeline update locally with ``spark-pipelines``, and tell a real failure from a known false one.

``run_pipeline`` writes $OFFSETLAKE_HOME/pipeline/spark-pipeline.yml (libraries -> the packaged
transformations directory, schema ``offsetlake``, storage under the home, the offsetlake.* keys
in ``configuration``), starts ``spark-pipelines run`` with the shared warehouse/metastore in a
SPARK_CONF_DIR spark-defaults.conf (static settings must reach the Spark Connect server at start,
see write_spark_defaults), streams its output, and returns per-flow outcomes and timings parsed
from the progress events.

Why parse instead of trusting the exit code: with pyspark 4.2, a run that read a Python data
source ends with ``PySparkValueError: [UNKNOWN_RESPONSE] ... __python_accumulator__`` and exit 1
even though every flow completed (the client does not understand a response the server sends
after the run). A run counts as succeeded only if the process exited 0, or if ALL of these hold:
the run reported ``Run is COMPLETED``, every flow's last state is COMPLETED, no flow FAILED
without being restarted after (a retried stream resumes from its checkpoint: under load a Python
data source's worker can miss Spark's 10 s connect-back window, and the retry succeeds), and the
process printed exactly one Python traceback whose error is that UNKNOWN_RESPONSE. Any
other error, a failed flow, or a missing run-completed event is a failure.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Final

import yaml

from offsetlake.kafka.secrets import PROPERTIES_ENV
from offsetlake.local.gold_guard import GUARDED_TABLES, GoldGuard
from offsetlake.local.home import local_home
from offsetlake.local.locks import check_home_free, pipeline_run_lock
from offsetlake.local.processes import interruptible, run_group
from offsetlake.local.spark import LOCAL_SCHEMA, local_spark_conf
from offsetlake.pipeline.settings import PipelineSettings

if TYPE_CHECKING:
    from collections.abc import Callable

TRANSFORMATIONS_DIR: Final = Path(__file__).resolve().parents[1] / "pipeline" / "transformations"
SDP_LAUNCHER: Final = Path(__file__).resolve().parent / "sdp_launcher.py"
SDP_MAIN_CLASS: Final = "org.apache.spark.deploy.SparkPipelines"
PIPELINE_NAME: Final = "offsetlake"
SPEC_FILE: Final = "spark-pipeline.yml"
MAX_FLOW_RETRIES_CONF: Final = "spark.sql.pipelines.maxFlowRetryAttempts"

_EVENT = re.compile(r"^(?P<at>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d): (?P<message>.*)$")
# "Flow x is RUNNING.", "Flow 'x' has FAILED.", "Flow 'x' has FAILED more than 0 times and will not
# be restarted.", "Flow 'x' SKIPPED due to upstream failure(s)."
_FLOW_STATE = re.compile(r"^Flow '?(?P<flow>[^' ]+)'? (?:(?:is|has) )?(?P<state>[A-Z_]{4,})\b")
_RUN_STATE = re.compile(r"^Run (?:is|has) (?P<state>[A-Z_]+)\.")
_PYTHON_ERROR = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception)): (?P<message>.*)")
_KNOWN_FALSE_FAILURE: Final = ("[UNKNOWN_RESPONSE]", "__python_accumulator__")


@dataclass(frozen=True)
class FlowOutcome:
    """One flow's final state and how long it took from its first to its last event."""

    name: str
    state: str
    started_at: datetime
    finished_at: datetime

    @property
    def seconds(self) -> float:
        return (self.finished_at - self.started_at).total_seconds()


@dataclass
class RunLog:
    """What a spark-pipelines run printed, reduced to the facts that decide success."""

    flows: dict[str, list[tuple[datetime, str]]] = field(default_factory=dict)
    run_state: str | None = None
    tracebacks: int = 0
    python_errors: list[str] = field(default_factory=list)
    _in_traceback: bool = False

    def feed(self, line: str) -> None:
        line = line.rstrip("\n")
        event = _EVENT.match(line)
        if event:
            at = datetime.strptime(event["at"], "%Y-%m-%d %H:%M:%S")
            flow = _FLOW_STATE.match(event["message"])
            if flow:
                self.flows.setdefault(flow["flow"], []).append((at, flow["state"]))
            run = _RUN_STATE.match(event["message"])
            if run:
                self.run_state = run["state"]
            return
        if line.startswith("Traceback (most recent call last)"):
            self.tracebacks += 1
            self._in_traceback = True
            return
        if self._in_traceback and not line.startswith((" ", "\t")):
            # The first unindented line after the frames is the Python error that ended the client.
            self._in_traceback = False
            if _PYTHON_ERROR.match(line):
                self.python_errors.append(line)

    def outcomes(self) -> tuple[FlowOutcome, ...]:
        return tuple(
            FlowOutcome(name, events[-1][1], events[0][0], events[-1][0])
            for name, events in sorted(self.flows.items())
        )

    def failed_unrecovered(self) -> list[str]:
        """Flows that FAILED and were not started again afterwards. A flow the engine restarted
        (``spark.sql.pipelines.maxFlowRetryAttempts``) resumes from its checkpoint, so its final
        COMPLETED is real; a COMPLETED that follows a FAILED without a restart is not (a stream
        whose batch was lost is reported so), and counts as failed."""
        failed = []
        for name, events in self.flows.items():
            states = [state for _, state in events]
            if "FAILED" in states:
                last_failure = len(states) - 1 - states[::-1].index("FAILED")
                if "STARTING" not in states[last_failure:]:
                    failed.append(name)
        return sorted(failed)


def judge(exit_code: int, log: RunLog) -> tuple[bool, str]:
    """(succeeded, why). See the module docstring for the rule."""
    outcomes = log.outcomes()
    failed = log.failed_unrecovered()
    unfinished = [o.name for o in outcomes if o.state != "COMPLETED"]
    if failed:
        return False, f"flows failed: {', '.join(failed)}"
    skipped = [o.name for o in outcomes if o.state == "SKIPPED"]
    if skipped:
        # Seen with pyspark 4.2: a stream failing on its first attempt may be reported as COMPLETED
        # and only its downstream flows as SKIPPED.
        return False, f"flows skipped after an upstream failure: {', '.join(skipped)}"
    if exit_code == 0:
        if unfinished:
            return False, f"flows did not complete: {', '.join(unfinished)}"
        return True, "exit code 0"
    if log.run_state != "COMPLETED":
        return (
            False,
            f"exit code {exit_code} and the run did not report COMPLETED (last state {log.run_state})",
        )
    if not outcomes or unfinished:
        return (
            False,
            f"exit code {exit_code} and flows did not complete: {', '.join(unfinished) or 'none ran'}",
        )
    known = [e for e in log.python_errors if all(marker in e for marker in _KNOWN_FALSE_FAILURE)]
    if log.tracebacks == 1 and len(log.python_errors) == 1 and known:
        return True, "every flow COMPLETED; exit 1 is the known UNKNOWN_RESPONSE __python_accumulator__ error"
    return False, f"exit code {exit_code} with unexpected errors: {log.python_errors or 'none printed'}"


@dataclass(frozen=True)
class PipelineRunResult:
    succeeded: bool
    explanation: str
    exit_code: int
    run_state: str | None
    flows: tuple[FlowOutcome, ...]
    seconds: float
    log_path: Path
    restored_tables: tuple[str, ...] = ()
    """Gold tables put back as they were before the update (it did not complete them)."""

    def flow(self, name: str) -> FlowOutcome:
        for outcome in self.flows:
            if outcome.name == name or outcome.name.endswith(f".{name}"):
                return outcome
        raise KeyError(name)


def write_spec(home: Path, settings: PipelineSettings, spark_conf: Mapping[str, str] | None = None) -> Path:
    """The spec: libraries, schema, storage and the runtime configuration (offsetlake.* keys)."""
    pipeline_dir = home / "pipeline"
    pipeline_dir.mkdir(parents=True, exist_ok=True)
    libraries = os.path.relpath(TRANSFORMATIONS_DIR, pipeline_dir)
    spec = {
        "name": PIPELINE_NAME,
        "storage": (pipeline_dir / "storage").resolve().as_uri(),
        "catalog": "spark_catalog",
        "database": LOCAL_SCHEMA,
        "configuration": {MAX_FLOW_RETRIES_CONF: "1", **(spark_conf or {}), **settings.to_conf()},
        "libraries": [{"glob": {"include": f"{libraries}/**"}}],
    }
    spec_path = pipeline_dir / SPEC_FILE
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return spec_path


def write_spark_defaults(home: Path) -> Path:
    """A SPARK_CONF_DIR whose spark-defaults.conf holds the static settings (metastore, warehouse).

    ``spark-pipelines --conf`` would not do: with ``--remote local`` the pipeline client starts the
    Spark Connect server in a second JVM (pyspark.sql.connect.session._start_connect_server), which
    only sees spark-defaults.conf and the spec's ``configuration``; and the spec's configuration is
    also applied per flow as runtime SQL conf, where static settings fail with CANNOT_MODIFY_CONFIG.
    """
    conf_dir = home / "pipeline" / "spark-conf"
    conf_dir.mkdir(parents=True, exist_ok=True)
    lines = [f"{key} {value}" for key, value in local_spark_conf(home).items()]
    (conf_dir / "spark-defaults.conf").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return conf_dir


def spark_pipelines_command(spec_path: Path, full_refresh: bool) -> list[str]:
    """What the `spark-pipelines` script runs, with our launcher (creates the schema) as the CLI."""
    spark_class = Path(sys.executable).with_name("spark-class")
    command = [str(spark_class), SDP_MAIN_CLASS, str(SDP_LAUNCHER), "run", "--spec", str(spec_path)]
    if full_refresh:
        command.append("--full-refresh-all")
    return command


def run_pipeline(
    settings: PipelineSettings,
    home: Path | None = None,
    *,
    full_refresh: bool = False,
    echo: Callable[[str], None] | None = None,
    spark_conf: Mapping[str, str] | None = None,
    timeout_s: float | None = None,
    kafka_properties: Path | None = None,
) -> PipelineRunResult:
    """Run one pipeline update; ``echo`` receives each progress line (the full log goes to a file).

    ``kafka_properties`` (a Java properties file of client settings) reaches the readers through
    the environment, never through the spec on disk. Past ``timeout_s`` the update is stopped and
    counts as failed. Whatever ends it (failure,
    deadline, SIGINT/SIGTERM, which raise StopSignalError after cleanup), no process it started is
    left and gold holds at least what it held before (pipeline/gold_guard.py). A home another
    process is using is refused before anything is touched (pipeline/home_lock.py).
    """
    home = (home or local_home()).resolve()
    with pipeline_run_lock(home):
        check_home_free(home)
        return _run_update(
            settings,
            home,
            full_refresh=full_refresh,
            echo=echo,
            spark_conf=spark_conf,
            timeout_s=timeout_s,
            kafka_properties=kafka_properties,
        )


def _run_update(
    settings: PipelineSettings,
    home: Path,
    *,
    full_refresh: bool,
    echo: Callable[[str], None] | None,
    spark_conf: Mapping[str, str] | None,
    timeout_s: float | None,
    kafka_properties: Path | None,
) -> PipelineRunResult:
    guard = GoldGuard(home)
    recovered = guard.recover()
    spec_path = write_spec(home, settings, spark_conf)
    log_path = home / "pipeline" / "last-run.log"
    env = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        # The local Spark Connect server binds the fixed port 15002 and the client dials it, so two
        # pipelines (tests, demo, benchmark) would collide. Under SPARK_TESTING pyspark binds an
        # ephemeral port and its client asks the server which one (connect/client/core.py
        # DefaultChannelBuilder.default_port); it is the only way to choose the port in pyspark 4.2.
        "SPARK_TESTING": "1",
        "SPARK_CONF_DIR": str(write_spark_defaults(home)),
    }
    if kafka_properties is not None:
        env[PROPERTIES_ENV] = str(kafka_properties.resolve())
    log = RunLog()

    def on_line(line: str) -> None:
        log_file.write(line)
        log.feed(line)
        if echo is not None and _EVENT.match(line):
            echo(line.rstrip("\n"))

    guard.protect()
    completed: set[str] = set()
    try:
        with log_path.open("w", encoding="utf-8") as log_file, interruptible():
            child = run_group(
                spark_pipelines_command(spec_path, full_refresh),
                cwd=home / "pipeline",
                env=env,
                on_line=on_line,
                timeout_s=timeout_s,
            )
        succeeded, explanation = judge(child.exit_code, log)
        if child.timed_out:
            succeeded, explanation = False, f"stopped after the {timeout_s:g}s time limit ({explanation})"
        completed = {
            outcome.name.rsplit(".", 1)[-1] for outcome in log.outcomes() if outcome.state == "COMPLETED"
        }
        if succeeded:
            completed.update(GUARDED_TABLES)
    finally:
        restored = guard.settle(completed)
    return PipelineRunResult(
        succeeded=succeeded,
        explanation=explanation,
        exit_code=child.exit_code,
        run_state=log.run_state,
        flows=log.outcomes(),
        seconds=child.seconds,
        log_path=log_path,
        restored_tables=tuple(sorted(set(restored) | set(recovered))),
    )
