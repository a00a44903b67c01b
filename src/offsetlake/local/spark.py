"""The local Spark used by the CLI, the apply and tests: one warehouse, one metastore.

Pipeline runs, `offsetlake sql` and the apply are separate processes, so tables must outlive
a session: a Derby-backed Hive metastore and a warehouse directory under the local home give
that. On Databricks none of this is used; the runtime's session and Unity Catalog are.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Final

from offsetlake.local.class_archive import Purpose, class_archive_options
from offsetlake.local.home import LOCAL_SCHEMA, LocalHome
from offsetlake.local.jit import Jit
from offsetlake.local.locks import check_home_free

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Errors only: Spark's default profile prints every WARN between the CLI's progress lines.
LOG4J2_CONFIG = Path(__file__).resolve().parent / "log4j2.properties"


# Local Spark processes live for seconds to minutes on small data: the JIT's optimising tier and a
# parallel collector cost more CPU than they save. Measured on the loaded 2-core machine: a short
# session (start, a small aggregation, a table write) 40 s -> 25 s (median of 3); a pipeline update
# over 100,000 checkpoints 223 s -> 161 s (start-up 97 s -> 50 s). Only local processes use this;
# a pipeline update with a large backlog runs C2 as well (local/jit.py).
LOCAL_JVM_OPTIONS: Final = Jit.QUICK.jvm_options

# Spark keeps 100 compiled classes of generated code; a pipeline update generates a few hundred
# (every projection, predicate and ordering of every flow, again at each micro-batch's planning), so
# classes were evicted and compiled anew (Janino, then C1). Measured (2 cores, medians of 3, issue
# 36's sixth session in benchmarks/README.md): a demo-sized update 68.0 -> 64.0 s, its JVM 75.7 ->
# 72.5 s of CPU. The pipeline also interprets most flows' expressions (pipeline/generated_code.py).
LOCAL_SQL_CONF: Final = {"spark.sql.codegen.cache.maxEntries": "5000"}


# No setting here widens the window a Python data source's worker has to connect back to the
# JVM (CANNOT_OPEN_SOCKET under load): PythonStreamingSourceRunner always starts it with
# PythonWorkerFactory.createSimpleWorker, which waits a hard-coded Selector.select(10000) for the
# connection and then closes the listening socket (Spark 4.0-4.2; spark.python.use.daemon,
# worker.reuse, unix.domain.socket.enabled do not reach that path, and
# spark.python.authenticate.socketTimeout is the worker's own connect timeout, 15 s, after the
# listener is gone). A failed flow is retried by the pipeline engine instead
# (spark.sql.pipelines.maxFlowRetryAttempts, set in pipeline_spec.write_spec).
def local_spark_conf(home: LocalHome, jit: Jit = Jit.QUICK) -> dict[str, str]:
    """Static Spark settings every local process must share to see the same tables (the JIT aside)."""
    return {
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(home.warehouse),
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={home.metastore};create=true"
        ),
        "spark.driver.extraJavaOptions": (
            f"-Dderby.system.home={home.derby_home} -Dlog4j2.configurationFile={LOG4J2_CONFIG.as_uri()} "
            + jit.jvm_options
        ),
        **LOCAL_SQL_CONF,
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "4",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
    }


def jvm_start_conf(home: LocalHome, purpose: Purpose, jit: Jit = Jit.QUICK) -> dict[str, str]:
    """``local_spark_conf`` for a JVM about to start, with the class-data archive's options
    (local/class_archive.py: one archive per JIT choice). Call once per JVM started: the call may
    claim the archive's writing."""
    conf = local_spark_conf(home, jit)
    # An update with C2 is rare (a large backlog): it maps that archive when one exists, but records
    # none (its writer would spend ~50 s of CPU and ~200 MB of the cache's bounds on a rare kind).
    archive = class_archive_options(purpose, jit.jvm_options, write=jit is Jit.QUICK)
    if archive:
        conf["spark.driver.extraJavaOptions"] += f" {archive}"
    return conf


def get_local_spark(
    home: LocalHome | None = None, app_name: str = "offsetlake", jit: Jit = Jit.QUICK
) -> SparkSession:
    """A local[2] session on the shared warehouse, with the `offsetlake` schema present; a JVM it
    starts runs ``jit``'s compilers (C1 alone unless asked: local/jit.py). ``home`` by default: the
    one ``$OFFSETLAKE_HOME`` names (a caller outside a command: the harness, a test's script).

    Refused in one line when another process holds the home (pipeline/home_lock.py). A JVM it
    starts prints to <home>/logs/spark.log, not the terminal, unless ``--verbose``.
    """
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    home = home or LocalHome.resolve()
    starting = SparkContext._active_spark_context is None
    if starting:
        check_home_free(home)
    builder = SparkSession.builder.master("local[2]").appName(app_name)
    conf = jvm_start_conf(home, "session", jit) if starting else local_spark_conf(home, jit)
    for key, value in conf.items():
        builder = builder.config(key, value)
    quiet = starting and not logging.getLogger("offsetlake").isEnabledFor(logging.DEBUG)
    with _jvm_output_to(home) if quiet else contextlib.nullcontext():
        spark = builder.enableHiveSupport().getOrCreate()
    if starting:
        _STARTED_HERE.add(id(spark.sparkContext))
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS {LOCAL_SCHEMA}")
    return spark


@contextlib.contextmanager
def _jvm_output_to(home: LocalHome) -> Iterator[None]:
    """Point this process's fds 1 and 2 at the home's Spark log while pyspark launches the JVM.

    The JVM inherits them (pyspark.java_gateway starts it with Popen and no redirection), so its
    banner ("Using incubator modules", "Setting default log level") and its later log lines go to
    the file and every command's output starts with its own lines. The CLI's ``--verbose`` (the
    ``offsetlake`` logger at DEBUG, cli/main.py) skips this and shows them.
    """
    log_path = home.spark_log
    log_path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with log_path.open("ab") as log:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, original in zip((1, 2), saved, strict=True):
            os.dup2(original, fd)
            os.close(original)


# The SparkContexts get_local_spark started: only those are stopped by stop_local_spark, never a
# session the caller had before (a notebook's, a test session's).
_STARTED_HERE: set[int] = set()


def stop_local_spark(*, timeout_s: float = 30.0) -> None:
    """Stop the Spark get_local_spark started in this process, if any, and wait for its JVM to exit.

    The JVM outlives a Python process that just exits, holding the home's metastore for a few
    more seconds, so the next command on the home would find it busy. Closing the JVM's stdin is
    how pyspark tells it to exit (java_gateway.py).
    """
    if "pyspark" not in sys.modules:
        return
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is None or id(context) not in _STARTED_HERE:
        return
    _STARTED_HERE.discard(id(context))
    jvm = getattr(SparkContext._gateway, "proc", None)
    context.stop()
    if jvm is not None and jvm.stdin is not None:
        jvm.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            jvm.wait(timeout=timeout_s)
