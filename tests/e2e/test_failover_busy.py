"""Failover on a busy machine: a second pipeline update runs beside it the whole time.

Production failovers happen when everything else is also busy; on a 2-core machine a second
pipeline update (its own Spark JVM and Python workers) is enough to make a Python worker miss
Spark's 10 s connect-back window (local/spark.py). The scenario is test_failover.py's (a private
pair, five groups checkpointed by the MM2 simulator, the source paused with SIGSTOP); beside each
failover, another home runs ``offsetlake pipeline run`` against the same clusters in a loop, and
each failover starts only once that update's JVM runs (an event seen in /proc, not a share of
samples, which a slow or fast machine moves).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from offsetlake.local.home import HOME_ENV
from offsetlake.local.processes import descendants
from tests.e2e.test_failover import (  # noqa: F401  (outage: the shared module-scoped scenario)
    GROUPS,
    PARTITIONS,
    Outage,
    _placed_but_the_never_replicated_topic,
    _write_checkpoint,
    outage,
)
from tests.kafka_helpers import log_end_offset
from tests.process_helpers import command_line

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

POLL_S = 0.5
STEP = 4
"""How far the checkpoints written while the source is dead move each group."""


class SecondPipeline:
    """``offsetlake pipeline run`` on another home, again and again, until stopped; a test starts
    its body once one of its JVMs is alive, so the machine really is busy."""

    def __init__(self, home: Path, flags: list[str]) -> None:
        self._home = home
        self._flags = flags
        self._stop = threading.Event()
        self._current: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self.updates = 0
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        log = (self._home / "second-pipeline.out").open("ab")
        with log:
            while not self._stop.is_set():
                with self._lock:
                    self._current = subprocess.Popen(
                        [sys.executable, "-m", "offsetlake.cli", "pipeline", "run", *self._flags],
                        env={**os.environ, HOME_ENV: str(self._home)},
                        stdout=log,
                        stderr=subprocess.STDOUT,
                    )
                self._current.wait()
                self.updates += 1

    def jvm_running(self) -> bool:
        with self._lock:
            current = self._current
        if current is None or current.poll() is not None:
            return False
        # /proc cmdline separates arguments with NULs; the first is the executable.
        return any(Path(command_line(pid).split("\0")[0]).name == "java" for pid in descendants(current.pid))

    def wait_until_busy(self) -> None:
        """Until one of its JVMs runs; two updates ending without one seen fail, not a time bound."""
        first = self.updates
        while not self.jvm_running():
            assert self._thread.is_alive(), "the second pipeline's loop ended"
            assert self.updates < first + 2, "two updates of the second pipeline ended without a JVM seen"
            time.sleep(POLL_S)

    @contextmanager
    def busy(self) -> Iterator[None]:
        """The body starts while an update of the second pipeline has its JVM up."""
        self.wait_until_busy()
        yield

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """SIGTERM the running update (run_pipeline stops its process group and restores gold)."""
        self._stop.set()
        with self._lock:
            current = self._current
        if current is not None and current.poll() is None:
            current.terminate()
            try:
                current.wait(timeout=120)
            except subprocess.TimeoutExpired:
                current.kill()
                current.wait()
        self._thread.join(timeout=130)


@pytest.fixture
def second_pipeline(outage: Outage, tmp_path: Path) -> Iterator[SecondPipeline]:  # noqa: F811
    runner = SecondPipeline(tmp_path, outage.cluster_flags())
    runner.start()
    try:
        yield runner
    finally:
        runner.stop()


def _assert_every_checkpoint_applied(scenario: Outage) -> None:
    for group in GROUPS:
        assert scenario.committed(group) == {
            p: scenario.checkpoints[(group, scenario.remote_topic, p)].downstream_offset
            for p in range(PARTITIONS)
        }, group


def test_busy_source_dead_before_the_first_refresh_applies_every_checkpoint(
    outage: Outage,  # noqa: F811
    second_pipeline: SecondPipeline,
) -> None:
    with outage.source_paused(), second_pipeline.busy():
        run = outage.cli("failover", *outage.cluster_flags())
    report = run.stdout + run.stderr
    assert run.returncode == 0, report[-4000:]
    assert "FAILOVER DONE" in report
    _assert_every_checkpoint_applied(outage)


def test_busy_source_dead_between_refreshes_applies_every_checkpoint(
    outage: Outage,  # noqa: F811
    second_pipeline: SecondPipeline,
) -> None:
    with second_pipeline.busy():
        both_up = outage.cli("pipeline", "run", *outage.cluster_flags())
    assert both_up.returncode == 0, both_up.stdout[-4000:]
    # Checkpoints newer than the refresh, on every partition where the target has the records:
    # failover must apply them and keep the others where they are.
    log_ends = {p: log_end_offset(outage.target, outage.remote_topic, p) for p in range(PARTITIONS)}
    newer = {
        key: replace(
            old, upstream_offset=old.upstream_offset + STEP, downstream_offset=old.downstream_offset + STEP
        )
        for key, old in outage.checkpoints.items()
        if old.downstream_offset + STEP <= log_ends[old.partition]
    }
    assert len(newer) >= len(outage.checkpoints) // 2, (log_ends, outage.checkpoints)
    with outage.source_paused():
        for checkpoint in newer.values():
            _write_checkpoint(outage, checkpoint)
        with second_pipeline.busy():
            run = outage.cli("failover", *outage.cluster_flags())
    outage.checkpoints.update(newer)
    _placed_but_the_never_replicated_topic(run)  # since the refresh, app-0's snapshot names it
    _assert_every_checkpoint_applied(outage)
