"""Spark's Python daemon (pyspark.daemon), saving coverage data after every task: `make test` only.

Spark runs Python code (data sources, UDFs) in workers that its daemon forks and reuses; at the
end the daemon ends them with SIGHUP, or the JVM with SIGKILL, so neither atexit nor coverage's
``_exit`` patch ever saves what they measured. `make test` sets
``SPARK_SUBMIT_OPTS=-Dspark.python.daemon.module=spark_coverage_daemon`` (every JVM started through
spark-submit reads it as Spark configuration) and puts scripts/ on PYTHONPATH, so that each worker
runs its tasks through this module: the worker's own coverage (restarted after the fork by the
``fork`` patch of pyproject.toml's [tool.coverage.run]) is saved once per task. Without coverage
running it is pyspark.daemon unchanged.
"""

from __future__ import annotations

from typing import Any

import coverage
from pyspark import daemon

_run_task = daemon.worker


def _run_task_and_save_coverage(sock: Any, authenticated: bool) -> int:
    try:
        return _run_task(sock, authenticated)
    finally:
        measuring = coverage.Coverage.current()
        if measuring is not None:
            measuring.save()


daemon.worker = _run_task_and_save_coverage

if __name__ == "__main__":
    daemon.manager()
