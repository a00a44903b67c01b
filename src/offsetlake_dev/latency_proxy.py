"""A TCP proxy that delays every byte by a set time in each direction: a network in a box.

On loopback a Kafka round trip costs nothing, so concurrency in the apply executor looks almost
useless there; in production every alter is a round trip to a group coordinator across a network.
The kernel here has no ``netem``, so this proxy stands in: whatever one side sends reaches the
other ``delay_s`` later, in order, without throttling bandwidth (a pure propagation delay, which is
what a round trip between data centres costs). A broker that advertises the proxy's address keeps
every later connection of its clients going through it (see :func:`delayed_broker`).

It runs its own asyncio loop in a daemon thread, so synchronous code (the Kafka clients, the
benchmarks) uses it as a context manager; ``delay_s`` can be changed while it runs. A test can also
hold every request (client to upstream) in the proxy (:meth:`LatencyProxy.hold`) until it releases
them: a target that has stopped answering for exactly as long as the test says, an event rather
than a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from offsetlake_dev import local_cluster

_CHUNK = 64 * 1024


class LatencyProxy:
    """Listens on ``127.0.0.1:<port>`` and forwards to ``upstream``, each direction delayed."""

    def __init__(self, upstream: tuple[str, int], *, delay_s: float = 0.0, port: int = 0) -> None:
        self.upstream = upstream
        self.delay_s = delay_s
        self._requested_port = port
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="latency-proxy", daemon=True)
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._released = asyncio.Event()
        self._released.set()
        self.holding = threading.Event()
        """Set once a request waits in the proxy because of :meth:`hold`."""

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the proxy is not started")
        return self._server.sockets[0].getsockname()[1]

    def start(self) -> LatencyProxy:
        self._thread.start()
        started: Future[asyncio.Server] = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._accept, local_cluster.LOOPBACK, self._requested_port), self._loop
        )
        self._server = started.result(timeout=10)
        return self

    def stop(self) -> None:
        async def close() -> None:
            if self._server is not None:
                self._server.close()
            for task in list(self._connections):
                task.cancel()
            await asyncio.gather(*self._connections, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def hold(self) -> None:
        """Requests read from now on wait in the proxy until :meth:`release` (answers still flow)."""
        self._in_loop(self._released.clear)

    def release(self) -> None:
        """Deliver the held requests, in order, and stop holding."""
        self._in_loop(self._released.set)

    def _in_loop(self, call: Callable[[], None]) -> None:
        async def run() -> None:
            call()

        asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout=10)

    def __enter__(self) -> LatencyProxy:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    async def _accept(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            client_writer.close()
            self._connections.discard(task)
            return
        try:
            # Either direction ending (EOF or error) ends the connection, as a TCP reset would.
            await _first_completed(
                self._pipe(client_reader, upstream_writer, held=True),
                self._pipe(upstream_reader, client_writer, held=False),
            )
        finally:
            for writer in (client_writer, upstream_writer):
                writer.close()
            self._connections.discard(task)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, held: bool) -> None:
        """Read as data arrives; deliver each chunk ``delay_s`` after it was read, in order; with
        ``held`` (the requests' direction), not while :meth:`hold` is in force."""
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def deliver() -> None:
            while True:
                due, data = await queue.get()
                if not data:
                    return
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                if held and not self._released.is_set():
                    self.holding.set()
                    await self._released.wait()
                writer.write(data)
                await writer.drain()

        delivering = asyncio.ensure_future(deliver())
        try:
            while True:
                data = await reader.read(_CHUNK)
                await queue.put((time.monotonic() + self.delay_s, data))
                if not data or delivering.done():
                    break
            await delivering
        finally:
            delivering.cancel()


async def _first_completed(*coroutines: Coroutine[Any, Any, None]) -> None:
    tasks = [asyncio.ensure_future(coroutine) for coroutine in coroutines]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


@dataclass(frozen=True)
class DelayedBroker:
    """A local broker reachable only through a :class:`LatencyProxy`."""

    bootstrap_servers: str
    """The proxy's address, which is also what the broker advertises."""
    broker: local_cluster.KafkaCluster
    proxy: LatencyProxy


@contextlib.contextmanager
def delayed_broker(
    logs_dir: Path, *, delay_s: float = 0.0, timeout_s: float = 10.0
) -> Iterator[DelayedBroker]:
    """A Tansu broker listening on a private port and advertising the proxy's, so metadata sends
    every client connection back through the proxy (as a real network path would carry it)."""
    broker_port = _free_port()
    with LatencyProxy((local_cluster.LOOPBACK, broker_port), delay_s=delay_s) as proxy:
        broker = local_cluster.start_broker(
            "delayed", port=broker_port, advertised_port=proxy.port, logs_dir=logs_dir, timeout_s=timeout_s
        )
        try:
            yield DelayedBroker(f"{local_cluster.LOOPBACK}:{proxy.port}", broker, proxy)
        finally:
            local_cluster.stop_broker(broker, timeout_s=timeout_s)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((local_cluster.LOOPBACK, 0))
        return probe.getsockname()[1]
