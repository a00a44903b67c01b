"""The command line starts without the heavy libraries, so a failover's probes begin before them.

A failover with its source down costs its probe bound and little more, and the process's start
comes before the probe can begin: ``offsetlake failover`` imports pyarrow, numpy and pyspark only
where it uses them (gold's reads, the audit journal, the range reader, Spark), once its probes run.
Each check runs in a fresh interpreter: this one has imported them all already.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

HEAVY = ("pyarrow", "numpy", "pyspark")
LOADED = f"print(*sorted(name for name in {HEAVY!r} if name in sys.modules), flush=True)"


def _python(script: str, home: Path, *, ends_by: int = 0) -> str:
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OFFSETLAKE_HOME": str(home)},
        check=False,
    )
    assert done.returncode == ends_by, done.stderr
    return done.stdout.strip()


def test_importing_the_command_line_imports_no_heavy_library(tmp_path: Path) -> None:
    assert _python(f"import sys\nimport offsetlake.cli.main\n{LOADED}\n", tmp_path) == ""


def test_a_failovers_probe_starts_before_any_heavy_library_is_imported(tmp_path: Path) -> None:
    """The probes' pool runs a probe where it is submitted, and the probe says what is loaded, then
    kills the process: no thread races the answer, and no exit hook (coverage's, under CI) runs while
    another thread imports."""
    script = (
        "import os, signal, sys\n"
        "from concurrent.futures import ThreadPoolExecutor\n"
        "from offsetlake.failover import run\n"
        "class Inline(ThreadPoolExecutor):\n"
        "    def submit(self, fn, /, *args, **kwargs):\n"
        "        fn(*args, **kwargs)\n"
        "def probe(*args, **kwargs):\n"
        f"    {LOADED}\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "run.ThreadPoolExecutor = Inline\n"
        "run.probe_cluster = probe\n"
        "from offsetlake.cli.main import main\n"
        "main(['failover', '--target', 'localhost:1', '--source', 'east=localhost:2'])\n"
        "print('no probe', flush=True)\n"
    )
    assert _python(script, tmp_path, ends_by=-signal.SIGKILL) == ""
