"""Kafka client credentials: from a Databricks secret scope, or locally from a properties file.

Every secret whose key starts with ``kafka.`` (``kafka.sasl.jaas.config``, ``kafka.security.protocol``
...) becomes a client option, so credentials never sit in bundle YAML or job parameters. Locally,
the same settings come from a Java properties file (``--kafka-properties``, or the file named by
$OFFSETLAKE_KAFKA_PROPERTIES). The values are kept out of everything printed or written:
``SecretScrubber`` masks them in any text.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from offsetlake.errors import InvalidValueError
from offsetlake.kafka.client_config import KAFKA_OPTION_PREFIX, REDACTED, kafka_options_to_librdkafka, redact

BOOTSTRAP_OPTION = f"{KAFKA_OPTION_PREFIX}bootstrap.servers"
"""The client setting that names a cluster, as a secret-scope key or a properties-file entry."""

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient


class SecretsProvider(Protocol):
    def list_keys(self, scope: str) -> list[str]: ...

    def get(self, scope: str, key: str) -> str: ...


class DatabricksSecrets:
    """Secrets through ``dbutils.secrets``: on Databricks the runtime's own (values are redacted in
    notebook and job output), elsewhere databricks-sdk's remote equivalent over the Secrets API.
    The client is created on first use (it needs credentials)."""

    def __init__(self, client: WorkspaceClient | None = None) -> None:
        self._client = client

    def _secrets(self) -> Any:
        if self._client is None:
            from databricks.sdk import WorkspaceClient

            self._client = WorkspaceClient()
        return self._client.dbutils.secrets

    def list_keys(self, scope: str) -> list[str]:
        return [secret.key for secret in self._secrets().list(scope) if secret.key]

    def get(self, scope: str, key: str) -> str:
        return str(self._secrets().get(scope, key))


PROPERTIES_ENV = "OFFSETLAKE_KAFKA_PROPERTIES"
"""Names the Kafka properties file for every local command and for the local pipeline's readers."""

# Values of other scope entries shorter than this (``true``, ``PLAIN``) are settings, not secrets;
# masking them would garble ordinary output such as offsets.
_MIN_MASKED_SETTING_LENGTH = 8


class SecretScrubber:
    """Masks the secret-scope values in text before it is printed or stored.

    Every value of a secret-looking name (password, jaas, key ...) is masked whatever its length;
    the values of other names from the scope are masked from 8 characters on.
    """

    def __init__(self, scope_options: Mapping[str, str] | None = None) -> None:
        options = dict(scope_options or {})
        flagged = redact(options)
        masked = {
            value
            for name, value in options.items()
            if value and (flagged[name] == REDACTED or len(value) >= _MIN_MASKED_SETTING_LENGTH)
        }
        # Longest first, so a secret containing another is masked whole.
        self._values = sorted(masked, key=len, reverse=True)

    def scrub(self, text: str) -> str:
        for value in self._values:
            text = text.replace(value, REDACTED)
        return text


def kafka_options_from_scope(provider: SecretsProvider, scope: str) -> dict[str, str]:
    """The ``kafka.*`` secrets of ``scope`` as Spark-style Kafka options."""
    return {
        key: provider.get(scope, key)
        for key in sorted(provider.list_keys(scope))
        if key.lower().startswith(KAFKA_OPTION_PREFIX)
    }


def kafka_options_from_properties(path: Path) -> dict[str, str]:
    """Kafka client settings from a Java properties file, as Spark-style ``kafka.*`` options.

    Keys may be written as the Java client names them (``security.protocol``, ``sasl.jaas.config``)
    or with the ``kafka.`` prefix; the file is what an operator already has for kafka-console tools.
    """
    from jproperties import Properties

    properties = Properties()
    try:
        with path.open("rb") as stream:
            properties.load(stream, "utf-8")
    except OSError as error:
        raise InvalidValueError(f"cannot read Kafka properties file {path}: {error.strerror}") from None
    options = {}
    for key, (value, _) in properties.items():
        name = key.strip()
        options[name if name.lower().startswith(KAFKA_OPTION_PREFIX) else KAFKA_OPTION_PREFIX + name] = value
    kafka_options_to_librdkafka(options)  # refuse what the clients cannot use, now, with its name
    return options


def target_client_config(bootstrap_servers: str | None, secret_options: Mapping[str, str]) -> dict[str, str]:
    """The librdkafka config for the target: secret-scope options, with the bootstrap flag winning."""
    options = dict(secret_options)
    if bootstrap_servers:
        options[BOOTSTRAP_OPTION] = bootstrap_servers
    config = kafka_options_to_librdkafka(options)
    if not config.get("bootstrap.servers"):
        raise InvalidValueError(
            "no target bootstrap servers: pass --target-bootstrap-servers or kafka.bootstrap.servers"
        )
    return config
