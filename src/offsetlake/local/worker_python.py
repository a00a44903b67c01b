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
import importlib.util
import os
import shlex
import sys
from pathlib import Path
from typing import Final

SPARK_ARCHIVES: Final = ("python/lib/pyspark.zip", "python/lib/py4j-*-src.zip", "jars/spark-core_*.jar")
"""The ``PYTHONPATH`` entries Spark adds for its workers (under its ``SPARK_HOME``) that the
installed PySpark replaces; shell patterns relative to that PySpark's directory."""

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


def worker_python(directory: Path, python: str = sys.executable, pyspark_dir: Path | None = None) -> Path:
    """The launcher for ``python`` in ``directory``, written there unless it already is.

    Only the archives of ``pyspark_dir`` (the PySpark installed for this interpreter, Spark's home
    locally) are dropped: a JVM started from another ``SPARK_HOME`` keeps its own PySpark for its
    workers. Named by both, so processes of two environments sharing a directory never run each
    other's; replaced atomically, so a worker never starts a half-written script.
    """
    home = pyspark_dir or installed_pyspark()
    # As found and resolved: pyspark's find_spark_home takes the real path of its own directory.
    homes = dict.fromkeys([str(home), str(home.resolve())])
    patterns = "|".join(f"{shlex.quote(each)}/{archive}" for each in homes for archive in SPARK_ARCHIVES)
    script = _SCRIPT.format(patterns=patterns, python=shlex.quote(python))
    digest = hashlib.sha256(f"{python}\0{home}".encode()).hexdigest()[:12]
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


def installed_pyspark() -> Path:
    """The directory of the PySpark this interpreter imports (``SPARK_HOME`` of a pip install),
    found without importing it."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("pyspark is not installed for this interpreter")
    return Path(next(iter(spec.submodule_search_locations)))
