"""The MM2 offset reset through Kafka Connect's REST API (KIP-875), against a loopback worker that
enforces what a real one does: offsets change only while the connector is STOPPED (409 otherwise)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from offsetlake.kafka.connect_rest import ConnectRest, ConnectRestError
from offsetlake.mm2_reset.plan import ResetAction
from offsetlake.mm2_reset.run import ResetRequest, run_rest_reset

CONNECTOR = "MirrorSourceConnector"


def _partition(topic: str, partition: int) -> dict[str, Any]:
    return {"cluster": "east", "topic": topic, "partition": partition}


class Worker:
    """The state behind the loopback REST API."""

    def __init__(self) -> None:
        self.state = "RUNNING"
        self.offsets: dict[str, dict[str, Any] | None] = {
            json.dumps(_partition(topic, p), sort_keys=True): {"offset": 10 * p + 5}
            for topic in ("orders", "payments")
            for p in range(2)
        }
        self.calls: list[str] = []


def _handler(worker: Worker) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self, status: int, body: object = None) -> None:
            payload = b"" if body is None else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _route(self) -> None:
            worker.calls.append(f"{self.command} {self.path}")
            base = f"/connectors/{CONNECTOR}"
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            if not self.path.startswith(base):
                self._answer(404, {"error_code": 404, "message": f"Connector {self.path} not found"})
            elif (self.command, self.path) == ("GET", f"{base}/offsets"):
                offsets = [
                    {"partition": json.loads(key), "offset": value} for key, value in worker.offsets.items()
                ]
                self._answer(200, {"offsets": offsets})
            elif (self.command, self.path) == ("GET", f"{base}/status"):
                self._answer(200, {"name": CONNECTOR, "connector": {"state": worker.state}, "tasks": []})
            elif (self.command, self.path) == ("PUT", f"{base}/stop"):
                worker.state = "STOPPED"
                self._answer(204)
            elif worker.state != "STOPPED":
                message = "Connectors must be in the STOPPED state before their offsets can be modified"
                self._answer(400, {"error_code": 400, "message": message})
            elif (self.command, self.path) == ("DELETE", f"{base}/offsets"):
                worker.offsets.clear()
                self._answer(200, {"message": "The offsets for this connector have been reset successfully"})
            elif (self.command, self.path) == ("PATCH", f"{base}/offsets"):
                for entry in body["offsets"]:
                    worker.offsets[json.dumps(entry["partition"], sort_keys=True)] = entry["offset"]
                self._answer(
                    200, {"message": "The offsets for this connector have been altered successfully"}
                )
            else:
                self._answer(405, {"error_code": 405, "message": "HTTP 405 Method Not Allowed"})

        do_GET = do_PUT = do_PATCH = do_DELETE = _route  # noqa: N815 (http.server's names)

        def log_message(self, *_args: object) -> None:
            pass

    return Handler


@pytest.fixture
def worker() -> Iterator[tuple[Worker, str]]:
    state = Worker()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield state, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _request(url: str, **options: Any) -> ResetRequest:
    return ResetRequest(connector=CONNECTOR, offsets_topic="", connect_url=url, **options)


def test_a_dry_run_lists_the_offsets_and_changes_nothing(worker: tuple[Worker, str]) -> None:
    state, url = worker
    result = run_rest_reset(_request(url, topics="orders"), ConnectRest(url))
    assert sorted(row.stored.partition["partition"] for row in result.rows) == [0, 1]
    assert {row.action for row in result.rows} == {ResetAction.RESET_VIA_REST}
    assert state.state == "RUNNING" and all(value is not None for value in state.offsets.values())
    assert [call.split()[0] for call in state.calls] == ["GET"]


def test_execute_stops_the_connector_then_resets_only_the_selected_topics(worker: tuple[Worker, str]) -> None:
    state, url = worker
    result = run_rest_reset(_request(url, topics="orders", execute=True), ConnectRest(url))
    assert result.not_verified == []
    assert state.state == "STOPPED"
    reset = {json.loads(key)["topic"] for key, value in state.offsets.items() if value is None}
    kept = {json.loads(key)["topic"] for key, value in state.offsets.items() if value is not None}
    assert (reset, kept) == ({"orders"}, {"payments"})
    assert state.calls.index(f"PUT /connectors/{CONNECTOR}/stop") < state.calls.index(
        f"PATCH /connectors/{CONNECTOR}/offsets"
    )


def test_execute_without_a_topic_filter_resets_every_partition(worker: tuple[Worker, str]) -> None:
    state, url = worker
    result = run_rest_reset(_request(url, execute=True), ConnectRest(url))
    assert result.not_verified == [] and len(result.rows) == 4
    assert state.offsets == {} and f"DELETE /connectors/{CONNECTOR}/offsets" in state.calls


def test_the_workers_refusal_is_one_clear_error(worker: tuple[Worker, str]) -> None:
    _, url = worker
    with pytest.raises(ConnectRestError, match="STOPPED state before their offsets can be modified"):
        ConnectRest(url).reset_all(CONNECTOR)  # not stopped first
    with pytest.raises(ConnectRestError, match=r"HTTP 404: Connector .* not found"):
        ConnectRest(url).offsets("no-such-connector")


def test_an_unreachable_worker_costs_bounded_time() -> None:
    with pytest.raises(ConnectRestError, match="unreachable"):
        ConnectRest("http://127.0.0.1:9", timeout_s=2).offsets(CONNECTOR)
