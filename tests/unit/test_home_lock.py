"""A local home in use is named with its holder, from the same lock Derby and pipeline runs take."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from offsetlake.local.home import LocalHome
from offsetlake.local.locks import (
    HomeInUseError,
    check_home_free,
    pipeline_run_lock,
)

# Holds a POSIX lock on a file the way Derby's FileChannel.tryLock does (fcntl F_SETLK).
POSIX_HOLDER = (
    "import fcntl, sys, time\n"
    "f = open(sys.argv[1], 'a+')\n"
    "fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
    "print('locked', flush=True)\n"
    "time.sleep(600)\n"
)
RUN_HOLDER = (
    "import sys, time\n"
    "from pathlib import Path\n"
    "from offsetlake.local.home import LocalHome\n"
    "from offsetlake.local.locks import pipeline_run_lock\n"
    "with pipeline_run_lock(LocalHome(Path(sys.argv[1]))):\n"
    "    print('locked', flush=True)\n"
    "    time.sleep(600)\n"
)


@contextmanager
def holder(script: str, path: Path) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen([sys.executable, "-c", script, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "locked"
        yield process
    finally:
        process.kill()
        process.wait(timeout=10)


def test_a_metastore_held_by_another_process_is_refused_with_its_pid(tmp_path: Path) -> None:
    check_home_free(LocalHome(tmp_path))  # no metastore yet
    lock = LocalHome(tmp_path).derby_lock
    lock.parent.mkdir()
    lock.touch()
    check_home_free(LocalHome(tmp_path))  # a metastore nobody holds
    with holder(POSIX_HOLDER, lock) as process, pytest.raises(HomeInUseError) as refused:
        check_home_free(LocalHome(tmp_path))
    message = str(refused.value)
    assert f"local home {tmp_path} is in use by process {process.pid} (" in message
    assert "OFFSETLAKE_HOME" in message
    assert "\n" not in message
    check_home_free(LocalHome(tmp_path))  # released when the holder ends


def test_a_second_pipeline_run_on_one_home_is_refused_at_once(tmp_path: Path) -> None:
    with (
        holder(RUN_HOLDER, tmp_path) as process,
        pytest.raises(HomeInUseError, match=rf"in use by process {process.pid} \("),
        pipeline_run_lock(LocalHome(tmp_path)),
    ):
        pass
    with pipeline_run_lock(LocalHome(tmp_path)):
        pass
