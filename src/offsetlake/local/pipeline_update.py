"""Run one pipeline update locally with ``spark-pipelines``, and tell a real failure from a known false one.

``run_pipeline`` writes the home's spec (local/pipeline_spec.py), runs the ``spark-pipelines run``
CLI, streams its output, and returns per-flow outcomes, timings and restarts judged from the
progress events (local/update_log.py). The CLI starts its own local Spark Connect server, or uses a
WarmServer kept running between updates (local/connect_server.py, ``pipeline run --every``).
Around it: one run at a time on a home (its run lock), gold no worse than before the update (the
gold guard), and no process left behind whatever ends it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from offsetlake.contract.settings import PipelineSettings
from offsetlake.errors import InvalidValueError
from offsetlake.kafka.secrets import kafka_options_from_properties, target_client_config
from offsetlake.local.backlog import target_backlog
from offsetlake.local.connect_server import ConnectServerError, WarmServer
from offsetlake.local.gold_guard import GUARDED_TABLES, GoldGuard
from offsetlake.local.home import LocalHome
from offsetlake.local.jit import JitChoice, choose_jit
from offsetlake.local.locks import HomeInUseError, check_home_free, pipeline_run_lock
from offsetlake.local.pipeline_spec import (
    LOCAL_MASTER,
    remote_init_env,
    spark_env,
    spark_pipelines_command,
    write_spec,
)
from offsetlake.local.processes import interruptible, run_group
from offsetlake.local.spark import jvm_start_conf
from offsetlake.local.update_log import FlowOutcome, UpdateLog, is_event, judge
from offsetlake.local.update_progress import UpdateProgress

if TYPE_CHECKING:
    from collections.abc import Callable


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


def run_pipeline(
    settings: PipelineSettings,
    home: LocalHome,
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
    """Run one pipeline update; ``echo`` receives each progress event, and after each flow that
    ends a ``progress: ...`` line (local/update_progress.py); the full log goes to a file.

    ``refresh`` names the only datasets to update (``spark-pipelines run --refresh``); empty means
    every dataset. It cannot be combined with ``full_refresh``.

    ``kafka_properties`` (a Java properties file of client settings) reaches the readers through
    the environment, never through the spec on disk. Past ``timeout_s`` the update is stopped and
    counts as failed. Whatever ends it (failure, deadline, SIGINT/SIGTERM, which raise
    StopSignalError after cleanup), no process it started is left and gold holds at least what it
    held before (local/gold_guard.py): each table the update's log reports COMPLETED keeps the
    update's version, the others their previous one. A home another process is using is refused
    before anything is touched (local/locks.py).

    Without ``server`` the update starts its own Spark, with C2 as well as C1 when it is about to
    read a large backlog from the target (local/jit.py; ``echo`` gets the choice first). With
    ``server`` (a started WarmServer of the same home and Kafka properties) the update runs
    on it instead of starting its own Spark; ``spark_conf`` then only holds runtime settings. A
    failed update stops that server before gold is settled: its flows may still be running.

    Setting ``stop`` (a signal handler may) ends the update as a failure, gold settled as above; so
    does a flow failing on an error of the graph (``UpdateLog.graph_errors``).
    """
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


def existing_tables(home: LocalHome) -> frozenset[str]:
    """The tables of the local schema that exist on ``home`` (each is a directory of the warehouse,
    ``spark.sql.warehouse.dir``, from its creation on)."""
    schema = home.schema_dir
    if not schema.is_dir():
        return frozenset()
    return frozenset(path.name for path in schema.iterdir() if path.is_dir())


def _await_metastore_released(home: LocalHome, timeout_s: float = 20.0) -> None:
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


def _choose_jit(
    settings: PipelineSettings, home: LocalHome, kafka_properties: Path | None, *, full_refresh: bool
) -> JitChoice:
    """C2 as well for an update about to read a large backlog from the target (local/jit.py)."""

    def backlog() -> int | None:
        options = kafka_options_from_properties(kafka_properties) if kafka_properties is not None else {}
        config = target_client_config(settings.target_bootstrap_servers, options)
        return target_backlog(settings, home, config, full_refresh=full_refresh)

    return choose_jit(backlog)


def _check_server(server: WarmServer, home: LocalHome, kafka_properties: Path | None) -> None:
    if server.home != home:
        raise InvalidValueError(f"the warm Spark Connect server serves {server.home}, not {home}")
    wanted = kafka_properties.resolve() if kafka_properties is not None else None
    if server.kafka_properties != wanted:
        raise InvalidValueError("the warm Spark Connect server was started with other Kafka properties")
    if not server.alive():
        raise ConnectServerError("the warm local Spark Connect server is not running")


def _update_env(
    settings: PipelineSettings,
    home: LocalHome,
    kafka_properties: Path | None,
    server: WarmServer | None,
    echo: Callable[[str], None] | None,
    *,
    full_refresh: bool,
) -> dict[str, str]:
    """The environment spark-pipelines runs in: a local Spark Connect server it starts (the JIT
    chosen for the backlog), or the warm ``server``'s."""
    if server is None:
        jit = _choose_jit(settings, home, kafka_properties, full_refresh=full_refresh)
        if echo is not None:
            echo(jit.describe())
        static_conf = jvm_start_conf(home, "pipeline", jit.jit)
        env = {
            **spark_env(home, kafka_properties),
            **remote_init_env(static_conf),
            # The local Spark Connect server binds the fixed port 15002 and the client dials it, so
            # two pipelines (tests, demo, benchmark) would collide. Under SPARK_TESTING pyspark binds
            # an ephemeral port and its client asks the server which one (connect/client/core.py
            # DefaultChannelBuilder.default_port); the only way to choose the port in pyspark 4.2.
            "SPARK_TESTING": "1",
            # What spark-pipelines would pass: the client starts a local Spark Connect server.
            "SPARK_REMOTE": LOCAL_MASTER,
        }
    else:
        env = {**spark_env(home, kafka_properties), **server.client_env()}
    return env


def _run_update(
    settings: PipelineSettings,
    home: LocalHome,
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
    command = spark_pipelines_command(write_spec(home, settings, spark_conf), full_refresh, refresh)
    log_path = home.last_run_log
    env = _update_env(settings, home, kafka_properties, server, echo, full_refresh=full_refresh)
    log = UpdateLog()
    progress = UpdateProgress()

    def on_line(line: str) -> None:
        log_file.write(line)
        log.feed(line)
        if echo is not None and is_event(line):
            echo(line.rstrip("\n"))
            done = progress.feed(line)
            if done is not None:
                echo(done)
        if not stop.is_set() and log.graph_errors():
            stop.set()  # the engine would retry it with back-off for minutes

    guard.protect()
    succeeded = False
    try:
        with log_path.open("w", encoding="utf-8") as log_file, interruptible():
            child = run_group(
                command,
                cwd=home.pipeline_dir,
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
        if stop.is_set() and not succeeded and not log.graph_errors():
            explanation = f"stopped on request ({explanation})"
    finally:
        if server is not None and not succeeded:
            server.stop()  # its flows may outlive the client; none may write while gold is settled
        # What the log says completed is kept even when a signal ends the update: a SIGTERM after
        # "Run is COMPLETED" must not put back gold older than the update's.
        restored = guard.settle(GUARDED_TABLES if succeeded else log.completed_tables())
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
