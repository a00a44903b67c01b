"""The latency proxy adds the delay it is set to, holds requests while told to, and a broker behind
it keeps clients on it.

A delay is asserted only from below (a busy machine can only make a round trip longer); whether
bytes passed is asserted on the bytes themselves, never on how soon they came."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from offsetlake_dev.latency_proxy import LatencyProxy, delayed_broker
from offsetlake_dev.local_cluster import LOOPBACK

DELAY_S = 0.05


@pytest.fixture
def echo_server(received: bytearray) -> Iterator[int]:
    """A loopback TCP server that sends back whatever it receives (kept in ``received``)."""
    server = socket.create_server((LOOPBACK, 0))

    def serve() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            with connection:
                while data := connection.recv(65536):
                    received.extend(data)
                    connection.sendall(data)

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1]
    server.close()


@pytest.fixture
def received() -> bytearray:
    return bytearray()


def _round_trips(port: int, count: int = 5, size: int = 1) -> list[float]:
    with socket.create_connection((LOOPBACK, port), timeout=10) as connection:
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        seconds = []
        for _ in range(count):
            started = time.monotonic()
            connection.sendall(b"x" * size)
            received = 0
            while received < size:
                received += len(connection.recv(65536))
            seconds.append(time.monotonic() - started)
    return seconds


def test_each_direction_is_delayed_by_the_set_time_and_order_is_kept(echo_server: int) -> None:
    with LatencyProxy((LOOPBACK, echo_server), delay_s=DELAY_S) as proxy:
        delayed = min(_round_trips(proxy.port))
        # Large payloads arrive whole and in order through the delayed pipes.
        proxy.delay_s = 0.01
        with socket.create_connection((LOOPBACK, proxy.port), timeout=10) as connection:
            payload = bytes(range(256)) * 4096  # 1 MiB
            connection.sendall(payload)
            echoed = b""
            while len(echoed) < len(payload):
                echoed += connection.recv(65536)
    assert echoed == payload
    # A round trip crosses the proxy twice: at least 2 x 50 ms (a busy machine only adds to it).
    assert delayed >= 2 * DELAY_S, delayed


def test_held_requests_reach_the_server_only_once_released_and_in_order(
    echo_server: int, received: bytearray
) -> None:
    with (
        LatencyProxy((LOOPBACK, echo_server)) as proxy,
        socket.create_connection((LOOPBACK, proxy.port), timeout=10) as connection,
    ):
        connection.sendall(b"before")
        assert connection.recv(6) == b"before"
        proxy.hold()
        connection.sendall(b"held-1")
        connection.sendall(b"held-2")
        assert proxy.holding.wait(timeout=10)
        assert bytes(received) == b"before"  # the proxy has it: nothing more reached the server
        proxy.release()
        echoed = b""
        while len(echoed) < 12:
            echoed += connection.recv(65536)
    assert echoed == b"held-1held-2"
    assert bytes(received) == b"beforeheld-1held-2"


@pytest.mark.kafka
def test_a_broker_behind_the_proxy_advertises_the_proxy(tmp_path: Path) -> None:
    with delayed_broker(tmp_path, delay_s=DELAY_S) as delayed:
        admin = AdminClient({"bootstrap.servers": delayed.bootstrap_servers})
        metadata = admin.list_topics(timeout=10)
        assert [(broker.host, broker.port) for broker in metadata.brokers.values()] == [
            (LOOPBACK, delayed.proxy.port)
        ]
        started = time.monotonic()
        admin.list_topics(timeout=10)  # over the connection already open: one round trip
        assert time.monotonic() - started >= 2 * DELAY_S
