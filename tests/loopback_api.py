"""A loopback JSON API for tests of code that calls a Databricks REST API through databricks-sdk."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


class JsonApiHandler(BaseHTTPRequestHandler):
    """Answers GET requests with JSON and keeps the test output quiet; subclasses implement ``answer``."""

    def answer(self, path: str, query: dict[str, str]) -> tuple[int, Any]:
        """(HTTP status, JSON body) for one GET request."""
        raise NotImplementedError

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        status, body = self.answer(
            url.path, {name: values[0] for name, values in parse_qs(url.query).items()}
        )
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *_args: object) -> None:
        pass


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """The handler served on a free loopback port; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
