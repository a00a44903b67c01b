"""A failover goes first: the stand-aside protocol between it and the local sync loop (local/locks.py).

The loop here is a small Python process using the loop's side of the protocol the way
``pipeline run --every`` does (no Spark): it polls for a request between "updates", and an update
in progress is a wait that the stand-aside signal ends.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from offsetlake.local.home import LocalHome
from offsetlake.local.locks import (
    HomeInUseError,
    LoopDidNotStandAsideError,
    stand_aside_request,
    sync_loop,
)
from tests.process_helpers import alive

# A loop: "updates" are waits the stand-aside signal ends (on_request), then a look for a request.
LOOP = (
    "import sys, threading, time\n"
    "from pathlib import Path\n"
    "from offsetlake.local.locks import sync_loop\n"
    "with sync_loop(Path(sys.argv[1])) as loop:\n"
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
    "from offsetlake.local.locks import sync_loop\n"
    "with sync_loop(Path(sys.argv[1])):\n"
    "    print('ready', flush=True)\n"
    "    while True:\n"
    "        time.sleep(0.1)\n"
)

# A failover holding its request.
REQUESTER = (
    "import sys, time\n"
    "from pathlib import Path\n"
    "from offsetlake.local.locks import stand_aside_request\n"
    "with stand_aside_request(Path(sys.argv[1])):\n"
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
    with stand_aside_request(tmp_path) as aside:
        assert aside.loop is None
        assert aside.wait(timeout_s=0) == 0.0
        assert LocalHome(tmp_path).stand_aside.read_text() == f"{os.getpid()}\n"
    assert not LocalHome(tmp_path).stand_aside.exists()


def test_an_update_in_progress_is_stopped_and_the_loop_resumes_after_the_failover(tmp_path: Path) -> None:
    with running(LOOP, str(tmp_path), "600") as loop:
        assert loop.stdout is not None
        with stand_aside_request(tmp_path) as aside:
            assert aside.loop == loop.pid
            aside.wait(timeout_s=60)
            assert loop.stdout.readline() == "update stopped\n"  # the signal ended the 600 s update
            assert LocalHome(tmp_path).stand_aside_ack.read_text() == f"{os.getpid()}\n"
        assert loop.stdout.readline() == "resumed\n"
        assert not LocalHome(tmp_path).stand_aside_ack.exists()


def test_a_loop_between_updates_stands_aside_at_its_next_look(tmp_path: Path) -> None:
    with running(LOOP, str(tmp_path), "0.1") as loop:
        assert loop.stdout is not None
        with stand_aside_request(tmp_path) as aside:
            aside.wait(timeout_s=60)
        assert [loop.stdout.readline() for _ in range(2)][-1] == "resumed\n"


def test_a_request_left_by_a_process_that_is_gone_is_not_honoured(tmp_path: Path) -> None:
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], check=True, capture_output=True, text=True
    )
    (tmp_path / "pipeline").mkdir()
    LocalHome(tmp_path).stand_aside.write_text(gone.stdout)
    with sync_loop(tmp_path) as loop:
        assert loop.requester() is None
    with stand_aside_request(tmp_path) as aside:  # and a new request replaces it
        assert aside.loop is None


def test_a_loop_that_does_not_stand_aside_in_time_is_one_clear_error_and_stays_up(tmp_path: Path) -> None:
    with running(DEAF_LOOP, str(tmp_path)) as loop:
        with stand_aside_request(tmp_path) as aside, pytest.raises(LoopDidNotStandAsideError) as raised:
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
        sync_loop(tmp_path),
    ):
        pass
    with (
        running(REQUESTER, str(tmp_path)),
        pytest.raises(HomeInUseError, match="already asked"),
        stand_aside_request(tmp_path),
    ):
        pass
