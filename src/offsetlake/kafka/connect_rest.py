"""The Kafka Connect REST calls a safe MM2 offset reset needs (KIP-875, Apache Kafka 3.6+).

Through the REST API the worker itself stops the connector, and it refuses to alter or reset the
offsets of a connector that is not STOPPED (``AbstractHerder``), so nothing can race the reset.
Endpoints, from ``ConnectorsResource``: ``PUT /connectors/{name}/stop``, ``GET
/connectors/{name}/status``, ``GET``/``PATCH``/``DELETE /connectors/{name}/offsets``; bodies are
``{"offsets": [{"partition": {...}, "offset": {...}}]}`` and a ``null`` offset resets a partition.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from offsetlake.errors import ExternalError

STOPPED = "STOPPED"


class ConnectRestError(ExternalError):
    """The Connect worker refused a request or did not answer."""


@dataclass(frozen=True)
class StoredOffset:
    """One source partition's offset as the worker reports it (``offset`` None: reset)."""

    partition: Mapping[str, Any]
    offset: Mapping[str, Any] | None


class ConnectRest:
    """A Connect worker's REST API at ``url`` (``http://connect:8083``)."""

    def __init__(self, url: str, *, timeout_s: float = 30.0) -> None:
        self._url = url.rstrip("/")
        self._timeout_s = timeout_s

    def offsets(self, connector: str) -> list[StoredOffset]:
        body = self._call("GET", f"/connectors/{quote(connector, safe='')}/offsets")
        return [StoredOffset(entry["partition"], entry.get("offset")) for entry in body.get("offsets", [])]

    def state(self, connector: str) -> str:
        body = self._call("GET", f"/connectors/{quote(connector, safe='')}/status")
        return str(body.get("connector", {}).get("state", "UNKNOWN"))

    def stop(self, connector: str, *, wait_s: float = 60.0) -> None:
        """Stop the connector (its tasks shut down, its config stays) and wait until it is STOPPED."""
        self._call("PUT", f"/connectors/{quote(connector, safe='')}/stop")
        deadline = time.monotonic() + wait_s
        while (state := self.state(connector)) != STOPPED:
            if time.monotonic() > deadline:
                raise ConnectRestError(f"connector {connector!r} is still {state} {wait_s:g} s after stop")
            time.sleep(0.5)

    def reset_all(self, connector: str) -> None:
        self._call("DELETE", f"/connectors/{quote(connector, safe='')}/offsets")

    def reset(self, connector: str, partitions: Sequence[Mapping[str, Any]]) -> None:
        """Reset only these source partitions (a null offset each)."""
        body = {"offsets": [{"partition": dict(partition), "offset": None} for partition in partitions]}
        self._call("PATCH", f"/connectors/{quote(connector, safe='')}/offsets", body)

    def _call(self, method: str, path: str, body: object = None) -> dict[str, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self._url + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=self._timeout_s) as response:
                text = response.read().decode()
        except urllib.error.HTTPError as error:
            raise ConnectRestError(
                f"{method} {path}: HTTP {error.code}: {_message(error.read().decode(errors='replace'))}"
            ) from None
        except (urllib.error.URLError, TimeoutError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise ConnectRestError(
                f"{method} {path}: Kafka Connect at {self._url} unreachable: {reason}"
            ) from None
        return json.loads(text) if text.strip() else {}


def _message(text: str) -> str:
    """Connect's error body is ``{"error_code": 409, "message": "..."}``; the message alone."""
    try:
        return str(json.loads(text).get("message", text))
    except (ValueError, AttributeError):
        return text
