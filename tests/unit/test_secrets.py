"""Kafka client settings from a secret scope, and keeping their values out of output."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from offsetlake.kafka.secrets import (
    DatabricksSecrets,
    SecretScrubber,
    kafka_options_from_scope,
    target_client_config,
)
from tests.loopback_api import JsonApiHandler, serving

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="svc" password="pw-1";'


class DictScope:
    def __init__(self, secrets: dict[str, str]) -> None:
        self.secrets = secrets

    def list_keys(self, scope: str) -> list[str]:
        return list(self.secrets)

    def get(self, scope: str, key: str) -> str:
        return self.secrets[key]


def test_only_kafka_entries_of_the_scope_become_client_options() -> None:
    scope = DictScope(
        {"kafka.sasl.jaas.config": JAAS, "kafka.security.protocol": "SASL_SSL", "db.token": "t"}
    )
    options = kafka_options_from_scope(scope, "failover")
    assert options == {"kafka.sasl.jaas.config": JAAS, "kafka.security.protocol": "SASL_SSL"}
    config = target_client_config("broker:9093", options)
    assert config == {
        "bootstrap.servers": "broker:9093",
        "security.protocol": "SASL_SSL",
        "sasl.username": "svc",
        "sasl.password": "pw-1",
    }


def test_the_bootstrap_flag_wins_and_one_is_required() -> None:
    assert target_client_config("flag:9092", {"kafka.bootstrap.servers": "scope:9092"})[
        "bootstrap.servers"
    ] == ("flag:9092")
    assert (
        target_client_config(None, {"kafka.bootstrap.servers": "scope:9092"})["bootstrap.servers"]
        == "scope:9092"
    )
    with pytest.raises(ValueError, match="--target-bootstrap-servers"):
        target_client_config(None, {})


def test_scrubber_masks_secret_names_at_any_length_and_long_settings() -> None:
    scrubber = SecretScrubber(
        {"kafka.sasl.password": "pw1", "kafka.client.id": "failover-client", "kafka.acks": "1", "kafka.x": ""}
    )
    text = "group at 1 with pw1 from failover-client"
    assert scrubber.scrub(text) == "group at 1 with *** from ***"
    assert SecretScrubber().scrub(text) == text


class _SecretsApi(JsonApiHandler):
    """The two Secrets API endpoints dbutils.secrets calls, on loopback (values base64, as the API
    returns them)."""

    def answer(self, path: str, query: dict[str, str]) -> tuple[int, Any]:
        if path == "/api/2.0/secrets/list":
            return 200, {"secrets": [{"key": "kafka.sasl.password"}, {"key": "note"}]}
        if path == "/api/2.0/secrets/get":
            value = f"{query['scope']}/{query['key']}-é".encode()
            return 200, {"key": query["key"], "value": base64.b64encode(value).decode()}
        return 404, {"error_code": "ENDPOINT_NOT_FOUND", "message": "no such endpoint"}


def test_databricks_secrets_come_through_dbutils_and_are_decoded() -> None:
    from databricks.sdk import WorkspaceClient

    with serving(_SecretsApi) as url:
        client = WorkspaceClient(host=url, token="test-token")
        secrets = DatabricksSecrets(client)
        assert secrets.list_keys("s") == ["kafka.sasl.password", "note"]
        assert secrets.get("s", "kafka.sasl.password") == "s/kafka.sasl.password-é"
