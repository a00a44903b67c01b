"""A local Spark Connect server kept running between pipeline updates of one home (WarmServer)."""

from __future__ import annotations

import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from offsetlake.errors import ExternalError
from offsetlake.local.home import LocalHome
from offsetlake.local.locks import check_home_free
from offsetlake.local.pipeline_spec import LOCAL_MASTER, PIPELINE_NAME, spark_env
from offsetlake.local.processes import spawn_group, terminate_group
from offsetlake.local.spark import jvm_start_conf

CONNECT_SERVER_CLASS: Final = "org.apache.spark.sql.connect.service.SparkConnectServer"


class WarmServer:
    """One local Spark Connect server kept running between updates of the same home.

    A cold update starts two JVMs (the ``spark-pipelines`` launcher, then the Spark Connect server
    with its SparkContext) before any flow runs. Against a warm server an update is only the
    pipelines CLI in Python (no JVM), talking to ``sc://localhost:<port>``. The server holds the
    home's metastore (static settings as ``--conf``: local/spark.py) and the Kafka properties file for
    its Python workers, so both are fixed for its life. Its process group ends on ``stop`` (and
    on ``__exit__``); its output goes to the home's ``connect_server_log``.
    """

    def __init__(
        self, home: LocalHome, *, kafka_properties: Path | None = None, start_timeout_s: float = 180.0
    ) -> None:
        self.home = home
        self.kafka_properties = kafka_properties.resolve() if kafka_properties is not None else None
        self._start_timeout_s = start_timeout_s
        self._token = secrets.token_urlsafe(24)
        self._process: subprocess.Popen[str] | None = None
        self._port = 0

    @property
    def url(self) -> str:
        return f"sc://localhost:{self._port}"

    def client_env(self) -> dict[str, str]:
        """What an update's pipelines CLI needs to use this server instead of starting one."""
        return {
            "SPARK_REMOTE": self.url,
            "SPARK_CONNECT_MODE_ENABLED": "1",
            "SPARK_CONNECT_AUTHENTICATE_TOKEN": self._token,
        }

    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self, interrupted: Callable[[], bool] | None = None) -> bool:
        """Start the server and wait until it accepts connections (its SparkContext is up then):
        True. Should ``interrupted`` say so meanwhile, the server is stopped instead: False (a JVM
        start can take longer than a failover waits for the sync loop to stand aside)."""
        check_home_free(self.home)
        self.home.pipeline_dir.mkdir(parents=True, exist_ok=True)
        self._port = _free_port()
        env = {
            **spark_env(self.home, self.kafka_properties),
            "SPARK_CONNECT_AUTHENTICATE_TOKEN": self._token,
        }
        command = [
            str(Path(sys.executable).with_name("spark-class")),
            "org.apache.spark.deploy.SparkSubmit",
            "--class", CONNECT_SERVER_CLASS,
            "--name", f"{PIPELINE_NAME}-connect",
            "--master", LOCAL_MASTER,
            "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
            "--conf", f"spark.connect.grpc.binding.port={self._port}",
        ]  # fmt: skip
        static_conf = jvm_start_conf(self.home, "server")
        for key, value in static_conf.items():
            command += ["--conf", f"{key}={value}"]
        command.append("spark-internal")
        log_path = self.home.connect_server_log
        self._process = spawn_group(command, cwd=self.home.pipeline_dir, env=env, log_path=log_path)
        deadline = time.monotonic() + self._start_timeout_s
        while not _accepts(self._port):
            if interrupted is not None and interrupted():
                self.stop()
                return False
            if not self.alive() or time.monotonic() > deadline:
                code = self._process.poll()
                self.stop()
                why = (
                    f"exited with {code}"
                    if code is not None
                    else f"not ready after {self._start_timeout_s:g}s"
                )
                raise ConnectServerError(f"the local Spark Connect server {why} (log: {log_path})")
            time.sleep(0.2)
        return True

    def stop(self) -> None:
        """End the server's process group."""
        if self._process is not None:
            terminate_group(self._process)
            self._process = None

    def __enter__(self) -> WarmServer:
        """The server, not started yet (:meth:`start`); stopped at the block's end."""
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()


class ConnectServerError(ExternalError):
    """The kept-warm local Spark Connect server did not start or is gone."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _accepts(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        return probe.connect_ex(("127.0.0.1", port)) == 0
