"""run_group: a child's whole process tree ends with the run, on exit, on a deadline and on SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from offsetlake.local.processes import run_group
from tests.process_helpers import python_child

# A parent that starts a grandchild (like spark-pipelines starting the Spark Connect JVM) and
# prints both PIDs, then waits.
TREE = (
    "import subprocess, sys, time\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
    "print(child.pid, flush=True)\n"
    "time.sleep(float(sys.argv[1]))\n"
)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "zombie" not in state


def _run(seconds: float, timeout_s: float | None) -> tuple[list[int], object]:
    pids: list[int] = []
    result = run_group(
        [sys.executable, "-c", TREE, str(seconds)],
        cwd=Path.cwd(),
        env=os.environ,
        on_line=lambda line: pids.append(int(line)),
        timeout_s=timeout_s,
        grace_s=2,
    )
    return pids, result


def test_a_normal_exit_leaves_no_grandchild() -> None:
    pids, result = _run(0.2, timeout_s=None)
    assert result.exit_code == 0 and not result.timed_out
    assert not _alive(pids[0])


def test_setting_stop_ends_the_whole_tree_before_the_deadline() -> None:
    stop = threading.Event()
    pids: list[int] = []

    def on_line(line: str) -> None:
        pids.append(int(line))
        stop.set()

    result = run_group(
        [sys.executable, "-c", TREE, "600"],
        cwd=Path.cwd(),
        env=os.environ,
        on_line=on_line,
        timeout_s=300,
        grace_s=2,
        stop=stop,
    )
    assert not result.timed_out and result.exit_code != 0
    assert not _alive(pids[0])


def test_the_deadline_stops_the_whole_tree() -> None:
    """The tree would run 600 s: only the 1 s deadline can end it (``timed_out``)."""
    pids, result = _run(600, timeout_s=1.0)
    assert result.timed_out
    assert not _alive(pids[0])


# Runs the tree under `interruptible` with handlers of its own in place before, prints "running"
# once the grandchild runs (the test then sends SIGTERM), and reports: the exit code of the
# StopSignalError, whether `interruptible` replaced both handlers inside the block and put the
# previous ones back after it, and the grandchild's PID.
SIGTERM_DURING_A_RUN = (
    "import json, os, signal, sys\n"
    "from offsetlake.errors import StopSignalError\n"
    "from offsetlake.local.processes import interruptible, run_group\n"
    "def previous(signum, frame):\n"
    "    pass\n"
    "signals = (signal.SIGTERM, signal.SIGINT)\n"
    "for signum in signals:\n"
    "    signal.signal(signum, previous)\n"
    "report = {}\n"
    "def on_line(line):\n"
    "    report['grandchild'] = int(line)\n"
    "    print('running', flush=True)\n"
    "try:\n"
    "    with interruptible():\n"
    "        report['replaced'] = [signal.getsignal(s) is not previous for s in signals]\n"
    "        run_group([sys.executable, '-c', sys.argv[1], '600'], cwd=os.getcwd(), env=os.environ,\n"
    "                  on_line=on_line, grace_s=2)\n"
    "except StopSignalError as error:\n"
    "    report['exit_code'] = error.exit_code\n"
    "report['restored'] = [signal.getsignal(s) is previous for s in signals]\n"
    "print(json.dumps(report), flush=True)\n"
)


def test_sigterm_raises_after_the_tree_is_stopped_and_the_previous_handlers_are_back() -> None:
    # In a process of its own, signalled from here: a SIGTERM to this test session would reach
    # pytest's own handlers (and the kafka_clusters fixture's) if the code under test misbehaved.
    with python_child(SIGTERM_DURING_A_RUN, TREE) as child:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "running", child.communicate(timeout=60)[1]
        child.send_signal(signal.SIGTERM)
        stdout, stderr = child.communicate(timeout=60)
    assert child.returncode == 0, stderr
    report = json.loads(stdout.strip().splitlines()[-1])
    assert report["exit_code"] == 128 + signal.SIGTERM
    assert report["replaced"] == [True, True]  # SIGTERM and SIGINT raise inside the block
    assert report["restored"] == [True, True]  # and the handlers from before are back after it
    assert not _alive(report["grandchild"])


# A command that starts a child in a session of its own (as the demo starts a broker) and a child
# that ignores SIGTERM (so only SIGKILL ends it), then ends all its descendants as `main` does
# after a signal, and prints what it signalled.
ENDS_ITS_DESCENDANTS = (
    "import json, subprocess, sys, time\n"
    "from offsetlake.local.processes import descendants, terminate_descendants\n"
    "sleeper = [sys.executable, '-c', 'import time; time.sleep(600)']\n"
    "stubborn = [sys.executable, '-c', 'import signal, time; signal.signal(signal.SIGTERM, "
    "signal.SIG_IGN); print(1, flush=True); time.sleep(600)']\n"
    "tree = subprocess.Popen([sys.executable, '-c', " + repr(TREE) + ", '600'], stdout=subprocess.PIPE)\n"
    "grandchild = int(tree.stdout.readline())\n"
    "detached = subprocess.Popen(sleeper, start_new_session=True)\n"
    "deaf = subprocess.Popen(stubborn, stdout=subprocess.PIPE)\n"
    "deaf.stdout.readline()\n"
    "before = sorted(descendants(__import__('os').getpid()))\n"
    "signalled = sorted(terminate_descendants(grace_s=1))\n"
    "print(json.dumps({'before': before, 'signalled': signalled, 'grandchild': grandchild}))\n"
)


def test_terminate_descendants_ends_every_process_the_command_started() -> None:
    # In a process of its own: here it would end this test session's Spark and brokers.
    done = subprocess.run(
        [sys.executable, "-c", ENDS_ITS_DESCENDANTS], capture_output=True, text=True, timeout=60, check=True
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(report["before"]) == 4  # tree, its grandchild, the detached and the deaf child
    assert report["grandchild"] in report["before"]
    assert report["signalled"] == report["before"]
    assert not any(_alive(pid) for pid in report["before"])


# Waits for metadata from a port nobody listens on (an hour's timeout) under `interruptible`, after
# printing "waiting"; prints the StopSignalError's exit code when a signal cuts in.
METADATA_WAIT = (
    "import sys\n"
    "from confluent_kafka.admin import AdminClient\n"
    "from offsetlake.errors import StopSignalError\n"
    "from offsetlake.kafka.admin import read_metadata\n"
    "from offsetlake.local.processes import interruptible\n"
    "admin = AdminClient({'bootstrap.servers': '127.0.0.1:' + sys.argv[1], 'log_level': '0'})\n"
    "try:\n"
    "    with interruptible():\n"
    "        print('waiting', flush=True)\n"
    "        read_metadata(admin, timeout_s=3600)\n"
    "except StopSignalError as error:\n"
    "    print(error.exit_code, flush=True)\n"
)


def test_sigterm_cuts_into_a_metadata_wait_at_once() -> None:
    """librdkafka's list_topics holds a signal until its timeout; read_metadata does not."""
    with python_child(METADATA_WAIT, str(_closed_port())) as child:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "waiting", child.communicate(timeout=60)[1]
        time.sleep(0.5)  # into the wait
        child.send_signal(signal.SIGTERM)
        # The wait ends only by the signal (its timeout is an hour): the child answers, then exits.
        answer, _ = child.communicate(timeout=120)
    assert answer.strip() == str(128 + signal.SIGTERM)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# A command stuck where SIGTERM cannot cut in (librdkafka's list_topics holds signals until its
# timeout), with a stop bounded to 1 s; prints the seconds from start to the signal.
STUCK_COMMAND = (
    "import os, signal, sys, threading, time\n"
    "from confluent_kafka.admin import AdminClient\n"
    "from offsetlake.local.processes import call_interruptibly, forced_exit_after\n"
    "admin = AdminClient({'bootstrap.servers': '127.0.0.1:' + sys.argv[1], 'log_level': '0'})\n"
    "threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM)).start()\n"
    "with forced_exit_after(1.0, 'offsetlake test'):\n"
    "    call_interruptibly(lambda: admin.list_topics(timeout=3600))\n"
)


def test_a_stop_is_bounded_even_when_the_main_thread_cannot_take_the_signal() -> None:
    """The call would hold the signal for an hour; the forced exit says it stopped after 1 s."""
    command = [sys.executable, "-c", STUCK_COMMAND, str(_closed_port())]
    stuck = subprocess.run(command, check=False, capture_output=True, text=True, timeout=120)
    assert stuck.returncode == 128 + signal.SIGTERM, stuck.stderr
    assert (
        "offsetlake test: interrupted by SIGTERM; cleanup still running after 1s, stopping now"
        in stuck.stderr
    )
