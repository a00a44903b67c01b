"""Spark/Java Kafka options -> librdkafka config, and redaction for logs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsetlake.kafka.client_config import (
    REDACTED,
    ClientConfigError,
    java_to_librdkafka,
    kafka_options_to_librdkafka,
    redact,
)

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def test_kafka_prefixed_options_are_stripped_and_source_options_ignored() -> None:
    config = kafka_options_to_librdkafka(
        {
            "kafka.bootstrap.servers": "b1:9092,b2:9092",
            "kafka.security.protocol": "SASL_SSL",
            "kafka.client.id": "offsetlake",
            "subscribe": "orders",
            "startingOffsets": "earliest",
        }
    )
    assert config == {
        "bootstrap.servers": "b1:9092,b2:9092",
        "security.protocol": "SASL_SSL",
        "client.id": "offsetlake",
    }


def test_spark_lowercases_option_names_and_translation_still_applies() -> None:
    config = kafka_options_to_librdkafka({"kafka.sasl.mechanism": "PLAIN", "KAFKA.Client.Id": "x"})
    assert config == {"sasl.mechanisms": "PLAIN", "client.id": "x"}


@pytest.mark.parametrize("login_module", [PLAIN, SCRAM, "kafkashaded." + PLAIN])
def test_plain_and_scram_jaas_become_username_and_password(login_module: str) -> None:
    config = java_to_librdkafka(
        {
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": f'{login_module} required username="alice" password="s3cr;et";',
        }
    )
    assert config == {
        "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": "s3cr;et",
    }


def test_jaas_single_quotes_escapes_and_bare_words() -> None:
    jaas = f'{PLAIN} required username=\'api-key\' password="a\\"b\\\\c" ignored=bare;'
    assert java_to_librdkafka({"sasl.jaas.config": jaas}) == {
        "sasl.username": "api-key",
        "sasl.password": 'a"b\\c',
    }


@given(
    username=st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1),
    password=st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1),
)
def test_any_escaped_credentials_round_trip(username: str, password: str) -> None:
    def quote(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'

    jaas = f"{SCRAM} required username={quote(username)} password={quote(password)};"
    assert java_to_librdkafka({"sasl.jaas.config": jaas}) == {
        "sasl.username": username,
        "sasl.password": password,
    }


@pytest.mark.parametrize(
    ("jaas", "message"),
    [
        ("not a jaas line", "must look like"),
        (f'{PLAIN} required username="a";', "lacks password"),
        (f'{PLAIN} required username="a" password="b"; {PLAIN} required username="c" password="d";', "one"),
        (
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId='x';",
            "sasl.oauthbearer.method=oidc",
        ),
        ("com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true;", "sasl.kerberos.keytab"),
    ],
)
def test_untranslatable_jaas_is_rejected_with_guidance(jaas: str, message: str) -> None:
    with pytest.raises(ClientConfigError, match=message):
        java_to_librdkafka({"sasl.jaas.config": jaas})


def test_jaas_together_with_native_credentials_is_ambiguous() -> None:
    with pytest.raises(ClientConfigError, match="not both"):
        java_to_librdkafka(
            {"sasl.jaas.config": f'{PLAIN} required username="a" password="b";', "sasl.username": "c"}
        )


def test_jks_truststore_is_rejected_pointing_at_ssl_ca_location() -> None:
    with pytest.raises(ClientConfigError, match=r"ssl\.ca\.location"):
        java_to_librdkafka(
            {"ssl.truststore.location": "/dbfs/certs/truststore.jks", "ssl.truststore.password": "x"}
        )


def test_pem_truststore_maps_to_ssl_ca_location() -> None:
    config = java_to_librdkafka({"ssl.truststore.location": "/certs/ca.pem", "ssl.truststore.type": "PEM"})
    assert config == {"ssl.ca.location": "/certs/ca.pem"}


def test_pkcs12_keystore_passes_through_and_jks_is_rejected() -> None:
    config = java_to_librdkafka(
        {
            "ssl.keystore.location": "/certs/client.p12",
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.password": "p",
        }
    )
    assert config == {"ssl.keystore.location": "/certs/client.p12", "ssl.keystore.password": "p"}
    with pytest.raises(ClientConfigError, match=r"ssl\.certificate\.location"):
        java_to_librdkafka({"ssl.keystore.location": "/certs/client.jks"})


def test_empty_endpoint_identification_disables_verification_the_librdkafka_way() -> None:
    assert java_to_librdkafka({"ssl.endpoint.identification.algorithm": ""}) == {
        "ssl.endpoint.identification.algorithm": "none"
    }


@pytest.mark.parametrize(
    "name", ["key.deserializer", "interceptor.classes", "sasl.login.callback.handler.class"]
)
def test_java_only_settings_are_rejected(name: str) -> None:
    with pytest.raises(ClientConfigError, match=name):
        java_to_librdkafka({name: "com.example.Whatever"})


def test_redact_hides_every_secret_looking_value_and_keeps_the_rest() -> None:
    config = {
        "bootstrap.servers": "b:9092",
        "sasl.username": "alice",
        "sasl.password": "pw",
        "kafka.sasl.jaas.config": "… password='pw';",
        "ssl.key.pem": "-----BEGIN PRIVATE KEY-----",
        "sasl.oauthbearer.client.secret": "s",
        "Access.Token": "t",
        "google.credentials": "c",
    }
    assert redact(config) == {
        "bootstrap.servers": "b:9092",
        "sasl.username": "alice",
        "sasl.password": REDACTED,
        "kafka.sasl.jaas.config": REDACTED,
        "ssl.key.pem": REDACTED,
        "sasl.oauthbearer.client.secret": REDACTED,
        "Access.Token": REDACTED,
        "google.credentials": REDACTED,
    }
    assert config["sasl.password"] == "pw", "redact must not modify its input"
