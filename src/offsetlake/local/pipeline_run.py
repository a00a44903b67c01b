"""Run one pipeline update locally with ``spark-pipelines``, and tell a real failure from a known false one.

``run_pipeline`` writes $OFFSETLAKE_HOME/pipeline/spark-pipeline.yml (libraries -> the packaged
transformations directory, schema ``offsetlake``, storage under the home, the offsetlake.* keys
in ``configuration``), runs the ``spark-pipelines run`` CLI (spark_pipelines_command) with the
shared warehouse/metastore in a SPARK_CONF_DIR spark-defaults.conf (static settings must reach the
Spark Connect server at start, see write_spark_defaults), streams its output, and returns per-flow
outcomes, timings and restarts parsed from the progress events. The CLI starts its own local Spark
Connect server, or uses a WarmServer kept running between updates (``pipeline run --every``).

Why parse instead of trusting the exit code: with pyspark 4.2, a run that read a Python data
source ends with ``PySparkValueError: [UNKNOWN_RESPONSE] ... __python_accumulator__`` and exit 1
even though every flow completed (the client does not understand a response the server sends
after the run). A run counts as succeeded only if the process exited 0, or if ALL of these hold:
the run reported ``Run is COMPLETED``, every flow's last state is COMPLETED, no flow FAILED
without being restarted after (a retried stream resumes from its checkpoint: under load a Python
data source's worker can miss Spark's 10 s connect-back window, and the retry succeeds), and the
pipelines client printed no error other than that UNKNOWN_RESPONSE. What Spark's Python workers
printed on the way (their tracebacks share the output of a locally started server, e.g. a worker's
``CANNOT_OPEN_SOCKET`` before the flow's restart) is counted in the explanation, not judged: the
engine's flow states already say whether their flows completed. A traceback is the client's when
one of its frames is the pipelines CLI. Any other client error, a failed flow, or a missing
run-completed event is a failure.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Final

import yaml

from offsetlake.errors import ExternalError, InvalidValueError
from offsetlake.kafka.secrets import PROPERTIES_ENV
from offsetlake.local.gold_guard import GUARDED_TABLES, GoldGuard
from offsetlake.local.home import local_home
from offsetlake.local.locks import HomeInUseError, check_home_free, pipeline_run_lock
from offsetlake.local.processes import interruptible, run_group, spawn_group, terminate_group
from offsetlake.local.spark import LOCAL_SCHEMA, local_spark_conf
from offsetlake.pipeline.settings import PipelineSettings

if TYPE_CHECKING:
    from collections.abc import Callable

TRANSFORMATIONS_DIR: Final = Path(__file__).resolve().parents[1] / "pipeline" / "transformations"
SDP_LAUNCHER: Final = Path(__file__).resolve().parent / "sdp_launcher.py"
CONNECT_SERVER_CLASS: Final = "org.apache.spark.sql.connect.service.SparkConnectServer"
LOCAL_MASTER: Final = "local[2]"
PIPELINE_NAME: Final = "offsetlake"
SPEC_FILE: Final = "spark-pipeline.yml"
MAX_FLOW_RETRIES_CONF: Final = "spark.sql.pipelines.maxFlowRetryAttempts"
# The engine's default is 2 retries of a failed flow (SQLConf, Spark 4.1+). Under load a Python
# data source's worker can miss Spark's connect-back window; a retried stream resumes from its
# checkpoint, so a few more retries turn a transient failure into a completed update.
MAX_FLOW_RETRIES: Final = 5

_EVENT = re.compile(r"^(?P<at>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d): (?P<message>.*)$")
# "Flow x is RUNNING.", "Flow 'x' has FAILED.", "Flow 'x' has FAILED more than 0 times and will not
# be restarted.", "Flow 'x' SKIPPED due to upstream failure(s)."
_FLOW_STATE = re.compile(r"^Flow '?(?P<flow>[^' ]+)'? (?:(?:is|has) )?(?P<state>[A-Z_]{4,})\b")
_RUN_STATE = re.compile(r"^Run (?:is|has) (?P<state>[A-Z_]+)\.")
_PYTHON_ERROR = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception)): (?P<message>.*)")
_KNOWN_FALSE_FAILURE: Final = ("[UNKNOWN_RESPONSE]", "__python_accumulator__")
# A frame of the pipelines client (pyspark's CLI, or our launcher of it); a Python worker's frames
# are Spark's worker modules (pyspark.zip/pyspark/worker_util.py, .../python_streaming_source_runner.py).
_CLIENT_FRAMES: Final = ("pyspark/pipelines/", "sdp_launcher.py")
_ERROR_CLASS = re.compile(r"\[(?P<name>[A-Z][A-Z0-9_]+)\]")
# A flow failure no retry can mend, an error of the graph or of analysis: the engine's lookup of a
# flow that did not resolve (a table it reads was never created) raises NoSuchElementException
# "key not found: `catalog`.`schema`.`flow`"; Spark's analysis errors carry a SQLSTATE of class 42.
# The engine retries every non-fatal flow failure with back-off (minutes in all), as if transient.
_GRAPH_ERROR = re.compile(r"^key not found: |\bSQLSTATE: 42[0-9A-Z]{3}\b")


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
    client_errors: list[str] = field(default_factory=list)
    """The error line of each traceback the pipelines client printed."""
    worker_errors: list[str] = field(default_factory=list)
    """The error line of each other traceback: Spark's Python workers, through the server's output."""
    flow_errors: dict[str, str] = field(default_factory=dict)
    """Each flow's latest failure, the ``Error:`` line printed after its FAILED event."""
    _in_traceback: bool = False
    _client_frames: bool = False
    _failed_flow: str | None = None

    def feed(self, line: str) -> None:
        line = line.rstrip("\n")
        failed_flow, self._failed_flow = self._failed_flow, None
        if failed_flow is not None and line.startswith("Error: "):
            self.flow_errors[failed_flow] = line.removeprefix("Error: ")
            return
        event = _EVENT.match(line)
        if event:
            at = datetime.strptime(event["at"], "%Y-%m-%d %H:%M:%S")
            flow = _FLOW_STATE.match(event["message"])
            if flow:
                self.flows.setdefault(flow["flow"], []).append((at, flow["state"]))
                if flow["state"] == "FAILED":
                    self._failed_flow = flow["flow"]
            run = _RUN_STATE.match(event["message"])
            if run:
                self.run_state = run["state"]
            return
        if line.startswith("Traceback (most recent call last)"):
            self._in_traceback = True
            self._client_frames = False
            return
        if not self._in_traceback:
            return
        if line.startswith((" ", "\t")):
            self._client_frames = self._client_frames or any(frame in line for frame in _CLIENT_FRAMES)
            return
        # The first unindented line after the frames is the Python error that ended the process.
        self._in_traceback = False
        if _PYTHON_ERROR.match(line):
            (self.client_errors if self._client_frames else self.worker_errors).append(line)

    def graph_errors(self) -> dict[str, str]:
        """Flows whose latest failure is an error of the graph or of analysis (``_GRAPH_ERROR``):
        retrying them cannot help, so the run is stopped instead of waiting out the retries."""
        return {flow: error for flow, error in self.flow_errors.items() if _GRAPH_ERROR.search(error)}

    def outcomes(self) -> tuple[FlowOutcome, ...]:
        return tuple(
            FlowOutcome(name, events[-1][1], events[0][0], events[-1][0])
            for name, events in sorted(self.flows.items())
        )

    def restarts(self) -> int:
        """Flow restarts: each time a flow FAILED and was then STARTING again (the engine's retry,
        ``spark.sql.pipelines.maxFlowRetryAttempts``)."""
        count = 0
        for events in self.flows.values():
            failed = False
            for _, state in events:
                if state == "FAILED":
                    failed = True
                elif state == "STARTING" and failed:
                    count += 1
                    failed = False
        return count

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
    # EXCLUDED: a flow outside the run's refresh selection (``--refresh``), not run by design.
    unfinished = [o.name for o in outcomes if o.state not in ("COMPLETED", "EXCLUDED")]
    if failed:
        graph = log.graph_errors()
        why = f"flows failed: {', '.join(failed)}"
        if graph:
            flow, error = sorted(graph.items())[0]
            why += f"; stopped, not retried: {flow} failed on an error of the graph ({error})"
        return False, why
    skipped = [o.name for o in outcomes if o.state == "SKIPPED"]
    if skipped:
        # Seen with pyspark 4.2: a stream failing on its first attempt may be reported as COMPLETED
        # and only its downstream flows as SKIPPED.
        return False, f"flows skipped after an upstream failure: {', '.join(skipped)}"
    if exit_code == 0:
        if unfinished:
            return False, f"flows did not complete: {', '.join(unfinished)}"
        return True, "exit code 0" + _worker_errors_note(log.worker_errors)
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
    unexpected = [e for e in log.client_errors if not all(marker in e for marker in _KNOWN_FALSE_FAILURE)]
    if unexpected:
        return False, f"exit code {exit_code} with unexpected errors: {unexpected}"
    why = (
        f"every flow run COMPLETED; exit {exit_code} is the known UNKNOWN_RESPONSE __python_accumulator__"
        if log.client_errors
        else f"every flow run COMPLETED; exit {exit_code} without a client error"
    )
    return True, why + _worker_errors_note(log.worker_errors)


def _worker_errors_note(errors: Sequence[str]) -> str:
    """``; 2 Python worker errors on the way (CANNOT_OPEN_SOCKET x2)``, or nothing."""
    if not errors:
        return ""
    names: dict[str, int] = {}
    for error in errors:
        found = _ERROR_CLASS.search(error)
        name = found["name"] if found else error.split(":", 1)[0].rsplit(".", 1)[-1]
        names[name] = names.get(name, 0) + 1
    listed = ", ".join(f"{name} x{count}" if count > 1 else name for name, count in names.items())
    return f"; {len(errors)} Python worker error{'s' if len(errors) > 1 else ''} on the way ({listed})"


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
    restarts: int = 0
    """Flow restarts the engine made (a flow FAILED, then STARTING again); judge() has already
    decided whether the restarted flows completed."""

    @property
    def status(self) -> str:
        """One word (and the restarts) for a report: a run whose restarted flows all completed is
        ``completed after N restarts``, never ``failed``."""
        if not self.succeeded:
            return "failed"
        if self.restarts:
            return f"completed after {self.restarts} restart{'s' if self.restarts > 1 else ''}"
        return "completed"

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
        "configuration": {
            MAX_FLOW_RETRIES_CONF: str(MAX_FLOW_RETRIES),
            **(spark_conf or {}),
            **settings.to_conf(),
        },
        "libraries": [{"glob": {"include": f"{libraries}/**"}}],
    }
    spec_path = pipeline_dir / SPEC_FILE
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return spec_path


def write_spark_defaults(home: Path) -> Path:
    """A SPARK_CONF_DIR whose spark-defaults.conf holds the static settings (metastore, warehouse).

    ``spark-pipelines --conf`` would not do: with ``SPARK_REMOTE=local…`` the pipeline client
    starts the Spark Connect server's JVM itself (pyspark.sql.connect.session._start_connect_server),
    which only sees spark-defaults.conf and the spec's ``configuration`` (a WarmServer reads the same
    file); and the spec's configuration is also applied per flow as runtime SQL conf, where static
    settings fail with CANNOT_MODIFY_CONFIG.
    """
    conf_dir = home / "pipeline" / "spark-conf"
    conf_dir.mkdir(parents=True, exist_ok=True)
    lines = [f"{key} {value}" for key, value in local_spark_conf(home).items()]
    (conf_dir / "spark-defaults.conf").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return conf_dir


def run_arguments(spec_path: Path, full_refresh: bool, refresh: Sequence[str]) -> list[str]:
    """The pipelines CLI's ``run`` arguments: everything, a full refresh, or only ``refresh``
    (``--refresh a,b``: the CLI splits on commas; the engine updates only those datasets)."""
    if full_refresh and refresh:
        raise InvalidValueError(
            "a full refresh resets every table; it cannot be limited to a refresh selection"
        )
    bad = [name for name in refresh if not name or "," in name]
    if bad:
        raise InvalidValueError(f"refresh selection: not a dataset name: {bad}")
    arguments = ["run", "--spec", str(spec_path)]
    if full_refresh:
        arguments.append("--full-refresh-all")
    if refresh:
        arguments += ["--refresh", ",".join(refresh)]
    return arguments


def spark_pipelines_command(spec_path: Path, full_refresh: bool, refresh: Sequence[str] = ()) -> list[str]:
    """The pipelines CLI (our launcher: it creates the schema first) in this Python.

    The ``spark-pipelines`` script starts a JVM (``SparkPipelines``, i.e. spark-submit) only to
    start this Python process with ``SPARK_REMOTE=local``, and then idles; the Python client starts
    the Spark Connect server's JVM itself. Started directly with that environment (see
    ``_run_update``) an update starts one JVM instead of two (measured: launch phase 6 s -> 1 s).
    """
    return [sys.executable, str(SDP_LAUNCHER), *run_arguments(spec_path, full_refresh, refresh)]


class WarmServer:
    """One local Spark Connect server kept running between updates of the same home.

    A cold update starts two JVMs (the ``spark-pipelines`` launcher, then the Spark Connect server
    with its SparkContext) before any flow runs. Against a warm server an update is only the
    pipelines CLI in Python (no JVM), talking to ``sc://localhost:<port>``. The server holds the
    home's metastore (static settings from write_spark_defaults) and the Kafka properties file for
    its Python workers, so both are fixed for its life. Its process group ends on ``stop`` (and
    on ``__exit__``); its output goes to pipeline/connect-server.log.
    """

    def __init__(
        self, home: Path, *, kafka_properties: Path | None = None, start_timeout_s: float = 180.0
    ) -> None:
        self.home = home.resolve()
        self.kafka_properties = kafka_properties.resolve() if kafka_properties is not None else None
        self._start_timeout_s = start_timeout_s
        self._token = secrets.token_urlsafe(24)
        self._process: subprocess.Popen[str] | None = None
        self._port = 0

    @property
    def url(self) -> str:
        return f"sc://localhost:{self._port}"

    def client_env(self) -> dict[str, str]:
        """What an update's pipelines CLI needs to use this server instead of starting one."""
        return {
            "SPARK_REMOTE": self.url,
            "SPARK_CONNECT_MODE_ENABLED": "1",
            "SPARK_CONNECT_AUTHENTICATE_TOKEN": self._token,
        }

    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> None:
        """Start the server and wait until it accepts connections (its SparkContext is up then)."""
        check_home_free(self.home)
        self._port = _free_port()
        env = {
            **_spark_env(self.home, self.kafka_properties),
            "SPARK_CONNECT_AUTHENTICATE_TOKEN": self._token,
        }
        command = [
            str(Path(sys.executable).with_name("spark-class")),
            "org.apache.spark.deploy.SparkSubmit",
            "--class", CONNECT_SERVER_CLASS,
            "--name", f"{PIPELINE_NAME}-connect",
            "--master", LOCAL_MASTER,
            "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
            "--conf", f"spark.connect.grpc.binding.port={self._port}",
            "spark-internal",
        ]  # fmt: skip
        log_path = self.home / "pipeline" / "connect-server.log"
        self._process = spawn_group(command, cwd=self.home / "pipeline", env=env, log_path=log_path)
        deadline = time.monotonic() + self._start_timeout_s
        while not _accepts(self._port):
            if not self.alive() or time.monotonic() > deadline:
                code = self._process.poll()
                self.stop()
                why = (
                    f"exited with {code}"
                    if code is not None
                    else f"not ready after {self._start_timeout_s:g}s"
                )
                raise ConnectServerError(f"the local Spark Connect server {why} (log: {log_path})")
            time.sleep(0.2)

    def stop(self) -> None:
        if self._process is not None:
            terminate_group(self._process)
            self._process = None

    def restart(self) -> None:
        """A fresh server: after a failed update its caches may not match the tables on disk
        (the gold guard may have put files back behind its back)."""
        self.stop()
        self.start()

    def __enter__(self) -> WarmServer:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()


class ConnectServerError(ExternalError):
    """The kept-warm local Spark Connect server did not start or is gone."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _accepts(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _spark_env(home: Path, kafka_properties: Path | None) -> dict[str, str]:
    """The environment every process that runs Spark for ``home`` starts with (Python workers
    included: they read the Kafka properties path from it)."""
    env = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_CONF_DIR": str(write_spark_defaults(home)),
        # Progress lines reach ``echo`` (and the log's reader) as they are printed, not in 8 KiB blocks.
        "PYTHONUNBUFFERED": "1",
    }
    if kafka_properties is not None:
        env[PROPERTIES_ENV] = str(kafka_properties.resolve())
    return env


def run_pipeline(
    settings: PipelineSettings,
    home: Path | None = None,
    *,
    full_refresh: bool = False,
    refresh: Sequence[str] = (),
    echo: Callable[[str], None] | None = None,
    spark_conf: Mapping[str, str] | None = None,
    timeout_s: float | None = None,
    kafka_properties: Path | None = None,
    server: WarmServer | None = None,
    stop: threading.Event | None = None,
) -> PipelineRunResult:
    """Run one pipeline update; ``echo`` receives each progress line (the full log goes to a file).

    ``refresh`` names the only datasets to update (``spark-pipelines run --refresh``); empty means
    every dataset. It cannot be combined with ``full_refresh``.

    ``kafka_properties`` (a Java properties file of client settings) reaches the readers through
    the environment, never through the spec on disk. Past ``timeout_s`` the update is stopped and
    counts as failed. Whatever ends it (failure,
    deadline, SIGINT/SIGTERM, which raise StopSignalError after cleanup), no process it started is
    left and gold holds at least what it held before (pipeline/gold_guard.py). A home another
    process is using is refused before anything is touched (pipeline/home_lock.py).

    With ``server`` (a started WarmServer of the same home and Kafka properties) the update runs
    on it instead of starting its own Spark; ``spark_conf`` then only holds runtime settings. A
    failed update stops that server before gold is settled: its flows may still be running.

    Setting ``stop`` (a signal handler may) ends the update as a failure, gold settled as above; so
    does a flow failing on an error of the graph (``RunLog.graph_errors``).
    """
    home = (home or local_home()).resolve()
    if server is not None:
        _check_server(server, home, kafka_properties)
    with pipeline_run_lock(home):
        if server is None:
            check_home_free(home)  # a warm server holds the metastore itself
        return _run_update(
            settings,
            home,
            full_refresh=full_refresh,
            refresh=refresh,
            echo=echo,
            spark_conf=spark_conf,
            timeout_s=timeout_s,
            kafka_properties=kafka_properties,
            server=server,
            stop=stop if stop is not None else threading.Event(),
        )


def existing_tables(home: Path) -> frozenset[str]:
    """The tables of the local schema that exist on ``home`` (each is a directory of the warehouse,
    ``spark.sql.warehouse.dir``, from its creation on)."""
    schema = home / "warehouse" / f"{LOCAL_SCHEMA}.db"
    if not schema.is_dir():
        return frozenset()
    return frozenset(path.name for path in schema.iterdir() if path.is_dir())


def _await_metastore_released(home: Path, timeout_s: float = 20.0) -> None:
    """Wait (bounded) until no process holds the home's metastore: measured back to back, the next
    update found the previous update's Spark JVM still holding Derby's lock just after the run's
    process group was gone, and was refused. Past the bound the next user gets the usual error."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            check_home_free(home)
            return
        except HomeInUseError:
            time.sleep(0.2)


def _check_server(server: WarmServer, home: Path, kafka_properties: Path | None) -> None:
    if server.home != home:
        raise InvalidValueError(f"the warm Spark Connect server serves {server.home}, not {home}")
    wanted = kafka_properties.resolve() if kafka_properties is not None else None
    if server.kafka_properties != wanted:
        raise InvalidValueError("the warm Spark Connect server was started with other Kafka properties")
    if not server.alive():
        raise ConnectServerError("the warm local Spark Connect server is not running")


def _run_update(
    settings: PipelineSettings,
    home: Path,
    *,
    full_refresh: bool,
    refresh: Sequence[str],
    echo: Callable[[str], None] | None,
    spark_conf: Mapping[str, str] | None,
    timeout_s: float | None,
    kafka_properties: Path | None,
    server: WarmServer | None,
    stop: threading.Event,
) -> PipelineRunResult:
    guard = GoldGuard(home)
    recovered = guard.recover()
    spec_path = write_spec(home, settings, spark_conf)
    log_path = home / "pipeline" / "last-run.log"
    if server is None:
        command = spark_pipelines_command(spec_path, full_refresh, refresh)
        env = {
            **_spark_env(home, kafka_properties),
            # The local Spark Connect server binds the fixed port 15002 and the client dials it, so
            # two pipelines (tests, demo, benchmark) would collide. Under SPARK_TESTING pyspark binds
            # an ephemeral port and its client asks the server which one (connect/client/core.py
            # DefaultChannelBuilder.default_port); the only way to choose the port in pyspark 4.2.
            "SPARK_TESTING": "1",
            # What spark-pipelines would pass: the client starts a local Spark Connect server.
            "SPARK_REMOTE": LOCAL_MASTER,
        }
    else:
        command = spark_pipelines_command(spec_path, full_refresh, refresh)
        env = {**_spark_env(home, kafka_properties), **server.client_env()}
    log = RunLog()

    def on_line(line: str) -> None:
        log_file.write(line)
        log.feed(line)
        if echo is not None and _EVENT.match(line):
            echo(line.rstrip("\n"))
        if not stop.is_set() and log.graph_errors():
            stop.set()  # the engine would retry it with back-off for minutes

    guard.protect()
    completed: set[str] = set()
    succeeded = False
    try:
        with log_path.open("w", encoding="utf-8") as log_file, interruptible():
            child = run_group(
                command,
                cwd=home / "pipeline",
                env=env,
                on_line=on_line,
                timeout_s=timeout_s,
                stop=stop,
            )
            if server is None:
                _await_metastore_released(home)
        succeeded, explanation = judge(child.exit_code, log)
        if child.timed_out:
            succeeded, explanation = False, f"stopped after the {timeout_s:g}s time limit ({explanation})"
        completed = {
            outcome.name.rsplit(".", 1)[-1] for outcome in log.outcomes() if outcome.state == "COMPLETED"
        }
        if stop.is_set() and not succeeded and not log.graph_errors():
            explanation = f"stopped on request ({explanation})"
        if succeeded:
            completed.update(GUARDED_TABLES)
    finally:
        if server is not None and not succeeded:
            server.stop()  # its flows may outlive the client; none may write while gold is settled
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
        restarts=log.restarts(),
    )
