"""Kafka client settings: Spark/Java-client spelling -> librdkafka (confluent-kafka) spelling.

Users write the options they already know from Spark's built-in Kafka source and the Java client
(``kafka.bootstrap.servers``, ``kafka.sasl.jaas.config`` ...). librdkafka names several of them
differently and cannot read Java key stores, so the translation happens once, here, and anything
that cannot be honoured fails loudly with the setting to use instead. Silently dropping a security
setting would connect in plaintext or with the wrong identity.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from offsetlake.errors import UsageError

KAFKA_OPTION_PREFIX = "kafka."
REDACTED = "***"

_SECRET_NAME_PARTS = ("password", "secret", "jaas", "key", "token", "credentials")

# Java names librdkafka spells differently; the value is passed unchanged.
_RENAMED = {
    "sasl.mechanism": "sasl.mechanisms",
}

# Java-only settings that librdkafka has no equivalent for, with what to use instead.
_UNSUPPORTED = {
    "key.deserializer": "keys and values are always read as bytes",
    "value.deserializer": "keys and values are always read as bytes",
    "interceptor.classes": "Java interceptors cannot run in librdkafka",
    "sasl.login.callback.handler.class": "for OAUTHBEARER set sasl.oauthbearer.method=oidc and "
    "sasl.oauthbearer.client.id / client.secret / token.endpoint.url",
    "sasl.client.callback.handler.class": "Java callback handlers cannot run in librdkafka",
    "ssl.truststore.certificates": "use ssl.ca.pem (the same PEM text)",
    "ssl.keystore.key": "use ssl.key.pem (the same PEM text)",
    "ssl.keystore.certificate.chain": "use ssl.certificate.pem (the same PEM text)",
}

_LOGIN_MODULE = re.compile(r"^\s*(?P<cls>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)\b")
# Java's JAAS parser (StreamTokenizer) accepts both quote characters; Confluent Cloud uses '...'.
_QUOTED = r"""(?:"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')"""
_JAAS_OPTION = re.compile(rf"""(?P<name>[\w.-]+)\s*=\s*(?:(?P<quoted>{_QUOTED})|(?P<bare>[^\s;"']+))""")
_JAAS_ESCAPE = re.compile(r"\\(.)")


class ClientConfigError(UsageError, ValueError):
    """A Kafka client setting that cannot be translated for librdkafka."""


def kafka_options_to_librdkafka(options: Mapping[str, str]) -> dict[str, str]:
    """The librdkafka config for the ``kafka.*`` entries of Spark-style options.

    Non-``kafka.`` options (``subscribe``, ``startingOffsets`` ...) belong to the source and are
    ignored here.
    """
    java_config = {
        name[len(KAFKA_OPTION_PREFIX) :]: value
        for name, value in options.items()
        if name.lower().startswith(KAFKA_OPTION_PREFIX)
    }
    return java_to_librdkafka(java_config)


def java_to_librdkafka(config: Mapping[str, str]) -> dict[str, str]:
    """Translate Java-client setting names and values to librdkafka ones.

    Raises ClientConfigError for settings librdkafka cannot honour, naming the replacement.
    """
    remaining = {name.lower(): str(value) for name, value in config.items()}
    translated: dict[str, str] = {}

    for name, hint in _UNSUPPORTED.items():
        if name in remaining:
            raise ClientConfigError(f"Kafka setting {name!r} is not supported by librdkafka: {hint}")

    jaas = remaining.pop("sasl.jaas.config", None)
    if jaas is not None:
        for name in ("sasl.username", "sasl.password"):
            if name in remaining:
                raise ClientConfigError(f"set either sasl.jaas.config or {name}, not both")
        translated.update(_jaas_to_librdkafka(jaas))

    translated.update(_truststore_to_librdkafka(remaining))
    translated.update(_keystore_to_librdkafka(remaining))

    algorithm = remaining.pop("ssl.endpoint.identification.algorithm", None)
    if algorithm is not None:
        # Java disables host-name verification with an empty string; librdkafka with "none".
        translated["ssl.endpoint.identification.algorithm"] = algorithm or "none"

    for name, value in remaining.items():
        translated[_RENAMED.get(name, name)] = value
    return translated


def redact(config: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``config`` safe to log: every secret-looking value becomes ``***``."""
    return {
        name: REDACTED if any(part in name.lower() for part in _SECRET_NAME_PARTS) else value
        for name, value in config.items()
    }


def _jaas_to_librdkafka(jaas: str) -> dict[str, str]:
    """PLAIN and SCRAM credentials from a JAAS line; other login modules need native settings."""
    module = _LOGIN_MODULE.match(jaas)
    if module is None:
        raise ClientConfigError(
            "sasl.jaas.config must look like '<LoginModule class> required name=\"value\" ...;'"
        )
    if _count_login_modules(jaas) != 1:
        raise ClientConfigError("sasl.jaas.config must contain exactly one login module")
    login_class = module.group("cls").rsplit(".", 1)[-1]
    if login_class not in ("PlainLoginModule", "ScramLoginModule"):
        raise ClientConfigError(
            f"sasl.jaas.config login module {login_class} cannot be translated for librdkafka: "
            "for OAUTHBEARER set sasl.oauthbearer.method=oidc with sasl.oauthbearer.client.id, "
            "sasl.oauthbearer.client.secret and sasl.oauthbearer.token.endpoint.url; for GSSAPI "
            "set sasl.kerberos.principal and sasl.kerberos.keytab"
        )
    options = {
        match.group("name"): _unescape(match.group("quoted")[1:-1])
        if match.group("quoted") is not None
        else match.group("bare")
        for match in _JAAS_OPTION.finditer(jaas, module.end())
    }
    missing = [name for name in ("username", "password") if name not in options]
    if missing:
        raise ClientConfigError(f"sasl.jaas.config {login_class} lacks {' and '.join(missing)}")
    return {"sasl.username": options["username"], "sasl.password": options["password"]}


def _count_login_modules(jaas: str) -> int:
    """Entries end with ';' outside quoted values (a password may contain ';')."""
    outside_quotes = re.sub(_QUOTED, "''", jaas)
    return sum(1 for entry in outside_quotes.split(";") if entry.strip())


def _unescape(quoted: str) -> str:
    return _JAAS_ESCAPE.sub(r"\1", quoted)


def _truststore_to_librdkafka(remaining: dict[str, str]) -> dict[str, str]:
    """Java trust stores: PEM files map to ssl.ca.location; JKS/PKCS12 cannot be read."""
    location = remaining.pop("ssl.truststore.location", None)
    store_type = remaining.pop("ssl.truststore.type", "JKS" if location else None)
    password = remaining.pop("ssl.truststore.password", None)
    if location is None:
        return {}
    if store_type is not None and store_type.upper() == "PEM":
        if password:
            raise ClientConfigError("a PEM ssl.truststore.location takes no ssl.truststore.password")
        return {"ssl.ca.location": location}
    raise ClientConfigError(
        f"ssl.truststore.location of type {store_type} cannot be read by librdkafka: "
        "convert the trust store to PEM and set ssl.ca.location to that file "
        "(keytool -exportcert -rfc ...)"
    )


def _keystore_to_librdkafka(remaining: dict[str, str]) -> dict[str, str]:
    """Java key stores: PKCS#12 is understood by librdkafka under the same names, JKS is not."""
    location = remaining.pop("ssl.keystore.location", None)
    store_type = remaining.pop("ssl.keystore.type", "JKS" if location else None)
    password = remaining.pop("ssl.keystore.password", None)
    if location is None:
        return {}
    if store_type is not None and store_type.upper() == "PKCS12":
        keystore = {"ssl.keystore.location": location}
        if password is not None:
            keystore["ssl.keystore.password"] = password
        return keystore
    raise ClientConfigError(
        f"ssl.keystore.location of type {store_type} cannot be read by librdkafka: "
        "use a PKCS12 key store (ssl.keystore.type=PKCS12) or PEM files via "
        "ssl.certificate.location and ssl.key.location"
    )
