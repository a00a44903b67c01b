"""The executable local Spark starts its Python workers with: this interpreter, without the zip
archives Spark puts first on a worker's ``PYTHONPATH``.

Spark starts every Python worker (a streaming source's runner, a data source's planner, the
daemon that forks the executors' workers) with ``$SPARK_HOME/python/lib/pyspark.zip``, the py4j
zip and the spark-core jar first on its path (``PythonUtils.sparkPythonPath``, Spark 4.0-4.2), so
it imports PySpark from the zip. Python never caches bytecode for a zip import: each worker
compiled PySpark's modules from source, and ``setup_spark_files`` re-reads the archives'
directories. Measured on a demo-sized update (2 cores): that was about half of the Python
workers' CPU (40 s -> 15 s without it), the update 83.6 -> 65.3 s. Outside those archives the
same PySpark is installed beside this interpreter, with its bytecode cached.

A POSIX shell script, because Spark takes one executable (``PYSPARK_PYTHON``) and no arguments;
it drops exactly those entries and execs this interpreter. Only the local runtime uses it.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import sys
from pathlib import Path
from typing import Final

SPARK_ARCHIVES: Final = ("*/python/lib/pyspark.zip", "*/python/lib/py4j-*-src.zip", "*/spark-core_*.jar")
"""The ``PYTHONPATH`` entries Spark adds for its workers that this interpreter's packages replace."""

_SCRIPT: Final = """#!/bin/sh
# Written by offsetlake (offsetlake/local/worker_python.py): Spark's Python workers import PySpark
# from the installed package, whose bytecode is cached, not from Spark's zip archives.
set -f
kept=
IFS=:
for entry in $PYTHONPATH; do
  case $entry in
    {patterns}) ;;
    *) kept=${{kept:+$kept:}}$entry ;;
  esac
done
unset IFS
if [ -n "$kept" ]; then PYTHONPATH=$kept; export PYTHONPATH; else unset PYTHONPATH; fi
exec {python} "$@"
"""


def worker_python(directory: Path, python: str = sys.executable) -> Path:
    """The launcher for ``python`` in ``directory``, written there unless it already is.

    Named by the interpreter it runs, so processes of two environments sharing a directory never
    run each other's; replaced atomically, so a worker never starts a half-written script.
    """
    script = _SCRIPT.format(patterns="|".join(SPARK_ARCHIVES), python=shlex.quote(python))
    digest = hashlib.sha256(python.encode()).hexdigest()[:12]
    launcher = directory / f"spark-worker-python-{digest}"
    try:
        if launcher.read_text() == script and os.access(launcher, os.X_OK):
            return launcher
    except OSError:
        pass
    directory.mkdir(parents=True, exist_ok=True)
    partial = launcher.with_name(f"{launcher.name}.{os.getpid()}.partial")
    partial.write_text(script)
    partial.chmod(0o755)
    os.replace(partial, launcher)
    return launcher
