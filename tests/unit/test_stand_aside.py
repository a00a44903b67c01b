"""A failover goes first: the stand-aside protocol between it and the local sync loop (local/locks.py).

The loop here is a small Python process using the loop's side of the protocol the way
``pipeline run --every`` does (no Spark): it polls for a request between "updates", and an update
in progress is a wait that the stand-aside signal ends.
"""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest

from offsetlake.cli import pipeline as pipeline_cli
from offsetlake.cli.context import Context
from offsetlake.contract.settings import PipelineSettings
from offsetlake.errors import StopSignalError
from offsetlake.local import connect_server
from offsetlake.local.home import LocalHome
from offsetlake.local.locks import (
    HomeInUseError,
    LoopDidNotStandAsideError,
    StandAsideRequest,
    stand_aside_request,
    sync_loop,
)
from offsetlake.local.processes import spawn_group
from offsetlake.mirror.clusters import ClusterEndpoint
from tests.process_helpers import alive

HANG_GUARD_S = 120.0
"""Only so that a loop that never answers fails the test instead of hanging it; never reached."""

# A loop: "updates" are waits the stand-aside signal ends (on_request), then a look for a request.
LOOP = (
    "import sys, threading, time\n"
    "from pathlib import Path\n"
    "from offsetlake.local.home import LocalHome\n"
    "from offsetlake.local.locks import sync_loop\n"
    "with sync_loop(LocalHome(Path(sys.argv[1]))) as loop:\n"
    "    print('ready', flush=True)\n"
    "    while True:\n"
    "        update = threading.Event()\n"
    "        loop.on_request = update.set\n"
    "        stopped = update.wait(float(sys.argv[2]))\n"
    "        loop.on_request = None\n"
    "        requester = loop.requester()\n"
    "        if requester is not None:\n"
    "            print('update stopped' if stopped else 'between updates', flush=True)\n"
    "            loop.stand_aside(requester)\n"
    "            print('resumed', flush=True)\n"
)
# Registered, but deaf: it never looks for a request.
DEAF_LOOP = (
    "import sys, time\n"
    "from pathlib import Path\n"
    "from offsetlake.local.home import LocalHome\n"
    "from offsetlake.local.locks import sync_loop\n"
    "with sync_loop(LocalHome(Path(sys.argv[1]))):\n"
    "    print('ready', flush=True)\n"
    "    while True:\n"
    "        time.sleep(0.1)\n"
)

# A failover holding its request.
REQUESTER = (
    "import sys, time\n"
    "from pathlib import Path\n"
    "from offsetlake.local.home import LocalHome\n"
    "from offsetlake.local.locks import stand_aside_request\n"
    "with stand_aside_request(LocalHome(Path(sys.argv[1]))):\n"
    "    print('ready', flush=True)\n"
    "    time.sleep(600)\n"
)


@contextmanager
def running(script: str, *args: str) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        [sys.executable, "-c", script, *args], stdout=subprocess.PIPE, text=True, env=os.environ
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == "ready\n"
        yield process
    finally:
        process.kill()
        process.wait()


def test_with_no_loop_the_request_waits_for_nothing_and_is_withdrawn(tmp_path: Path) -> None:
    with stand_aside_request(LocalHome(tmp_path)) as aside:
        assert aside.loop is None
        assert aside.wait(timeout_s=0) == 0.0
        request = StandAsideRequest.parse(LocalHome(tmp_path).stand_aside.read_text())
        assert request is not None and request.pid == os.getpid() and request.token == aside.token
    assert not LocalHome(tmp_path).stand_aside.exists()


def test_an_update_in_progress_is_stopped_and_the_loop_resumes_after_the_failover(tmp_path: Path) -> None:
    with running(LOOP, str(tmp_path), "600") as loop:
        assert loop.stdout is not None
        with stand_aside_request(LocalHome(tmp_path)) as aside:
            assert aside.loop == loop.pid
            aside.wait(timeout_s=60)
            assert loop.stdout.readline() == "update stopped\n"  # the signal ended the 600 s update
            assert LocalHome(tmp_path).stand_aside_ack.read_text() == f"{aside.token}\n"
        assert loop.stdout.readline() == "resumed\n"
        assert not LocalHome(tmp_path).stand_aside_ack.exists()


def test_a_loop_between_updates_stands_aside_at_its_next_look(tmp_path: Path) -> None:
    with running(LOOP, str(tmp_path), "0.1") as loop:
        assert loop.stdout is not None
        with stand_aside_request(LocalHome(tmp_path)) as aside:
            aside.wait(timeout_s=60)
        assert [loop.stdout.readline() for _ in range(2)][-1] == "resumed\n"


def test_a_request_left_by_a_process_that_is_gone_is_not_honoured(tmp_path: Path) -> None:
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], check=True, capture_output=True, text=True
    )
    (tmp_path / "pipeline").mkdir()
    LocalHome(tmp_path).stand_aside.write_text(gone.stdout)
    with sync_loop(LocalHome(tmp_path)) as loop:
        assert loop.requester() is None
    with stand_aside_request(LocalHome(tmp_path)) as aside:  # and a new request replaces it
        assert aside.loop is None


def test_a_loop_that_does_not_stand_aside_in_time_is_one_clear_error_and_stays_up(tmp_path: Path) -> None:
    with running(DEAF_LOOP, str(tmp_path)) as loop:
        with (
            stand_aside_request(LocalHome(tmp_path)) as aside,
            pytest.raises(LoopDidNotStandAsideError) as raised,
        ):
            aside.wait(timeout_s=0.5)
        assert f"process {loop.pid}" in str(raised.value) and "did not stand aside within 0.5s" in str(
            raised.value
        )
        assert alive(loop.pid)  # the stand-aside signal is handled, never fatal
        assert not LocalHome(tmp_path).stand_aside.exists()


def test_a_second_loop_or_a_second_request_on_the_same_home_is_refused(tmp_path: Path) -> None:
    with (
        running(DEAF_LOOP, str(tmp_path)),
        pytest.raises(HomeInUseError, match="sync loop already runs"),
        sync_loop(LocalHome(tmp_path)),
    ):
        pass
    with (
        running(REQUESTER, str(tmp_path)),
        pytest.raises(HomeInUseError, match="already asked"),
        stand_aside_request(LocalHome(tmp_path)),
    ):
        pass


SLEEPER = "import time\nprint('ready', flush=True)\ntime.sleep(600)\n"
"""A live process that asked nothing: the one a dead requester's PID now names, say."""


def _left_behind(home: Path) -> tuple[Path, int]:
    """The request of a failover killed outright (SIGKILL: no withdrawal), and its PID."""
    with running(REQUESTER, str(home)) as requester:
        pid = requester.pid
    path = LocalHome(home).stand_aside
    assert path.exists()
    return path, pid


def test_a_request_whose_pid_now_names_another_process_is_ignored_and_removed(tmp_path: Path) -> None:
    """Issue 46: a killed failover's request, its PID reused by an unrelated process, was taken as
    live: every later failover was refused ("already asked") and the loop stood aside for ever."""
    path, dead = _left_behind(tmp_path)
    with running(SLEEPER) as other:
        reused = re.sub(rf"\b{dead}\b", str(other.pid), path.read_text(), count=1)  # the PID it names
        path.write_text(reused)
        with sync_loop(LocalHome(tmp_path)) as loop:
            assert loop.requester() is None  # not parked
        assert not path.exists()  # and cleaned
        path.write_text(reused)
        with stand_aside_request(LocalHome(tmp_path)) as aside:  # not refused: replaced
            request = StandAsideRequest.parse(path.read_text())
            assert request is not None and request.token == aside.token


def test_an_expired_request_of_an_owner_that_hangs_is_ignored_and_removed(tmp_path: Path) -> None:
    """A request expires unless its owner renews it: a failover stopped (SIGSTOP) for longer than
    the request's time to live does not keep the loop parked or other failovers out."""
    with running(REQUESTER, str(tmp_path)) as requester:
        path = LocalHome(tmp_path).stand_aside
        os.kill(requester.pid, signal.SIGSTOP)  # it renews no more
        try:
            with sync_loop(LocalHome(tmp_path)) as loop:
                assert loop.requester() is not None  # a live owner's request counts
                path.write_text(re.sub(r"expires=\S+", f"expires={time.time() - 1:.3f}", path.read_text()))
                assert loop.requester() is None  # its time to live is over
            assert not path.exists()
            with stand_aside_request(LocalHome(tmp_path)) as aside:
                request = StandAsideRequest.parse(path.read_text())
                assert request is not None and request.token == aside.token
        finally:
            os.kill(requester.pid, signal.SIGCONT)


def test_a_request_is_renewed_while_its_owner_runs(tmp_path: Path) -> None:
    path = LocalHome(tmp_path).stand_aside
    with stand_aside_request(LocalHome(tmp_path), ttl_s=0.4) as aside:
        first = StandAsideRequest.parse(path.read_text())
        assert first is not None
        while (renewed := StandAsideRequest.parse(path.read_text())) == first:
            time.sleep(0.05)  # until the renewal, an event: no bound on when it comes
        assert renewed is not None and renewed.token == aside.token and renewed.expires > first.expires
    assert not path.exists()


def test_a_request_made_while_the_loop_starts_its_server_is_honoured_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 46: a request sent while the sync loop (re)started its Spark Connect server was not
    heard until the server was up and an update had run, and the failover gave up after 45 s.
    The loop here is ``pipeline run --every``'s own code with a server that never comes up; the
    failover is a thread of this process (the loop's signal reaches the main thread)."""
    servers: list[subprocess.Popen[str]] = []
    spawned = threading.Event()

    def spawn(_command: object, *, cwd: Path, env: object, log_path: Path) -> subprocess.Popen[str]:
        if servers:  # the loop resumed after the failover and starts its server again: enough
            raise StopSignalError(signal.SIGTERM)
        servers.append(
            spawn_group([sys.executable, "-c", SLEEPER], cwd=cwd, env=dict(os.environ), log_path=log_path)
        )
        spawned.set()
        return servers[0]

    def update(*_: object, **__: object) -> None:
        raise AssertionError("no update may start while a failover asks the loop to stand aside")

    monkeypatch.setattr(connect_server, "spawn_group", spawn)
    monkeypatch.setattr(connect_server, "jvm_start_conf", lambda *_: {"spark.driver.extraJavaOptions": ""})
    monkeypatch.setattr(pipeline_cli, "run_pipeline", update)
    outcome: list[object] = []

    def failover() -> None:
        spawned.wait()
        try:
            with stand_aside_request(LocalHome(tmp_path)) as aside:
                outcome.append(aside.wait(timeout_s=HANG_GUARD_S))
                outcome.append(servers[0].poll() is not None)  # the half-started server was stopped
        except LoopDidNotStandAsideError as error:
            outcome.append(error)

    asking = threading.Thread(target=failover)
    asking.start()
    out = io.StringIO()
    settings = PipelineSettings("localhost:1", (ClusterEndpoint("a", "localhost:2"),))
    try:
        with pytest.raises(StopSignalError):
            pipeline_cli.run_every(
                settings, LocalHome(tmp_path), timedelta(seconds=1), None, Context(out=out)
            )
    finally:
        asking.join()
        for server in servers:
            server.kill()
            server.wait()
    assert len(outcome) == 2 and isinstance(outcome[0], float), outcome
    assert outcome[1] is True
    assert f"standing aside for process {os.getpid()} (a failover)" in out.getvalue()
    assert f"process {os.getpid()} is done; resuming updates" in out.getvalue()


def test_a_request_made_between_the_loops_look_and_its_update_is_not_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The signal reaches the loop after its look for a request and before the update listens for
    it: the update must not start. The loop is ``pipeline run --every``'s own code, its server a
    stand-in; the failover is a thread of this process, asking once the loop has looked."""
    looked, signalled = threading.Event(), threading.Event()

    class Server:
        url = "sc://localhost:0"
        asked_after_look = True

        def __enter__(self) -> Server:
            return self

        def __exit__(self, *_: object) -> None:
            pass

        def alive(self) -> bool:  # what the loop asks right after its look
            if self.asked_after_look:
                self.asked_after_look = False
                looked.set()
                signalled.wait()  # the loop's handler runs as this wait returns
            return True

        def stop(self) -> None:
            pass

    updates: list[bool] = []

    def update(*_: object, **__: object) -> None:
        updates.append(LocalHome(tmp_path).stand_aside.exists())  # a request still stands?
        raise StopSignalError(signal.SIGTERM)

    monkeypatch.setattr(pipeline_cli, "WarmServer", lambda *_, **__: Server())
    monkeypatch.setattr(pipeline_cli, "run_pipeline", update)
    acknowledged: list[bool] = []

    def failover() -> None:
        looked.wait()
        with stand_aside_request(LocalHome(tmp_path)) as aside:
            signalled.set()
            aside.wait(timeout_s=HANG_GUARD_S)
            ack = LocalHome(tmp_path).stand_aside_ack
            acknowledged.append(ack.exists() and ack.read_text() == f"{aside.token}\n")

    asking = threading.Thread(target=failover)
    asking.start()
    out = io.StringIO()
    settings = PipelineSettings("localhost:1", (ClusterEndpoint("a", "localhost:2"),))
    try:
        with pytest.raises(StopSignalError):
            pipeline_cli.run_every(
                settings, LocalHome(tmp_path), timedelta(seconds=1), None, Context(out=out)
            )
    finally:
        asking.join()
    assert acknowledged == [True]
    assert updates == [False]  # the only update came after the failover
    assert f"standing aside for process {os.getpid()} (a failover)" in out.getvalue()
