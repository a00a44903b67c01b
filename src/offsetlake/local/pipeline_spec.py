"""What a local pipeline update is given: the spec, the Spark settings and the command line.

``write_spec`` writes the home's spark-pipeline.yml (libraries -> the packaged transformations
directory, schema ``offsetlake``, storage under the home, the offsetlake.* keys in
``configuration``); ``remote_init_env`` the static settings (the shared warehouse and metastore)
of the Spark Connect server the pipelines CLI starts; ``spark_env`` the environment of every
process that runs Spark for the home; ``spark_pipelines_command`` the
``spark-pipelines run`` command line (our launcher of pyspark's CLI, in this Python).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

import yaml

from offsetlake.contract.settings import PipelineSettings
from offsetlake.errors import InvalidValueError
from offsetlake.kafka.secrets import PROPERTIES_ENV
from offsetlake.local.home import LOCAL_SCHEMA, LocalHome
from offsetlake.local.worker_python import worker_python
from offsetlake.pipeline.generated_code import INTERPRETED

TRANSFORMATIONS_DIR: Final = Path(__file__).resolve().parents[1] / "pipeline" / "transformations"
SDP_LAUNCHER: Final = Path(__file__).resolve().parent / "sdp_launcher.py"
LOCAL_MASTER: Final = "local[2]"
PIPELINE_NAME: Final = "offsetlake"
MAX_FLOW_RETRIES_CONF: Final = "spark.sql.pipelines.maxFlowRetryAttempts"
# The engine's default is 2 retries of a failed flow (SQLConf, Spark 4.1+). Under load a Python
# data source's worker can miss Spark's connect-back window; a retried stream resumes from its
# checkpoint, so a few more retries turn a transient failure into a completed update.
MAX_FLOW_RETRIES: Final = 5
ARTIFACT_ISOLATION_CONF: Final = "spark.sql.artifact.isolation.enabled"
# Spark Connect isolates each session's artifacts (on by force in its local servers), and Spark then
# starts a Python daemon per artifact session and never stops it: about ten per update, each with
# a forked worker (~100 MB), piling up on a kept-warm server (33, 40, 50 Python processes over three
# updates). The pipeline adds no artifacts (its modules are installed), so its flows run without:
# one daemon whose workers are reused (benchmarks/README.md, issue 50).
ARTIFACT_ISOLATION: Final = "false"


def write_spec(
    home: LocalHome, settings: PipelineSettings, spark_conf: Mapping[str, str] | None = None
) -> Path:
    """The spec: libraries, schema, storage and the runtime configuration (offsetlake.* keys; flows
    interpreted but those over every record, pipeline/generated_code.py; no artifact isolation)."""
    home.pipeline_dir.mkdir(parents=True, exist_ok=True)
    libraries = os.path.relpath(TRANSFORMATIONS_DIR, home.pipeline_dir)
    spec = {
        "name": PIPELINE_NAME,
        "storage": home.pipeline_storage.resolve().as_uri(),
        "catalog": "spark_catalog",
        "database": LOCAL_SCHEMA,
        "configuration": {
            MAX_FLOW_RETRIES_CONF: str(MAX_FLOW_RETRIES),
            ARTIFACT_ISOLATION_CONF: ARTIFACT_ISOLATION,
            **INTERPRETED,
            **(spark_conf or {}),
            **settings.to_conf(),
        },
        "libraries": [{"glob": {"include": f"{libraries}/**"}}],
    }
    home.pipeline_spec.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return home.pipeline_spec


def spark_env(home: LocalHome, kafka_properties: Path | None) -> dict[str, str]:
    """The environment every process that runs Spark for ``home`` starts with (Python workers
    included: they read the Kafka properties path from it, and start through
    local/worker_python.py's launcher, which imports PySpark with its bytecode cached).

    No ``SPARK_CONF_DIR``: static settings reach a local JVM as ``--conf`` (remote_init_env,
    WarmServer), so none reads a user's spark-defaults.conf, and every local JVM has the same
    classpath, which its class-data archive requires (local/class_archive.py).
    """
    env = {
        **os.environ,
        "PYSPARK_PYTHON": str(worker_python(home.bin_dir)),
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        # Progress lines reach ``echo`` (and the log's reader) as they are printed, not in 8 KiB blocks.
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("SPARK_CONF_DIR", None)
    if kafka_properties is not None:
        env[PROPERTIES_ENV] = str(kafka_properties.resolve())
    return env


def remote_init_env(static_conf: Mapping[str, str]) -> dict[str, str]:
    """The static settings of the Spark Connect server the pipelines CLI starts itself.

    ``spark-pipelines`` with ``SPARK_REMOTE=local`` starts the server's JVM from the client
    (pyspark.sql.connect.session._start_connect_server), which passes the settings of
    ``PYSPARK_REMOTE_INIT_CONF_0`` (what ``pyspark --remote local --conf`` uses; read there in
    PySpark 4.0 and 4.2 alike) as ``--conf``; the spec's ``configuration`` would not do, being
    applied per flow as runtime SQL conf, where static settings fail with CANNOT_MODIFY_CONFIG.
    """
    return {"PYSPARK_REMOTE_INIT_CONF_LEN": "1", "PYSPARK_REMOTE_INIT_CONF_0": json.dumps(dict(static_conf))}


def run_arguments(spec_path: Path, full_refresh: bool, refresh: Sequence[str]) -> list[str]:
    """The pipelines CLI's ``run`` arguments: everything, a full refresh, or only ``refresh``
    (``--refresh a,b``: the CLI splits on commas; the engine updates only those datasets)."""
    if full_refresh and refresh:
        raise InvalidValueError(
            "a full refresh resets every table; it cannot be limited to a refresh selection"
        )
    bad = [name for name in refresh if not name or "," in name]
    if bad:
        raise InvalidValueError(f"refresh selection: not a dataset name: {bad}")
    arguments = ["run", "--spec", str(spec_path)]
    if full_refresh:
        arguments.append("--full-refresh-all")
    if refresh:
        arguments += ["--refresh", ",".join(refresh)]
    return arguments


def spark_pipelines_command(spec_path: Path, full_refresh: bool, refresh: Sequence[str] = ()) -> list[str]:
    """The pipelines CLI (our launcher: it creates the schema first) in this Python.

    The ``spark-pipelines`` script starts a JVM (``SparkPipelines``, i.e. spark-submit) only to
    start this Python process with ``SPARK_REMOTE=local``, and then idles; the Python client starts
    the Spark Connect server's JVM itself. Started directly with that environment (see
    ``pipeline_update._update_env``) an update starts one JVM instead of two (measured: launch phase
    6 s -> 1 s).
    """
    return [sys.executable, str(SDP_LAUNCHER), *run_arguments(spec_path, full_refresh, refresh)]
