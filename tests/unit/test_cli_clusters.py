"""The edge resolver: flag, then the client settings, then (local commands only) the clusters file."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from offsetlake.cli.clusters import NoTargetError, resolve_clusters
from offsetlake.cli.main import build_parser
from offsetlake.errors import UsageError
from offsetlake.kafka.secrets import PROPERTIES_ENV
from offsetlake.local.clusters import ClustersFileError
from offsetlake.mirror.clusters import ClusterEndpoint
from offsetlake.sessions import RUNTIME_ENV


class ScopeKeys:
    """A secret scope that knows its key names; reading a value fails the test."""

    def __init__(self, keys: list[str]) -> None:
        self.keys = keys

    def list_keys(self, scope: str) -> list[str]:
        return self.keys

    def get(self, scope: str, key: str) -> str:
        raise AssertionError("the resolver reads key names only, never a secret value")


@pytest.fixture
def local_pair(offsetlake_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(RUNTIME_ENV, raising=False)
    monkeypatch.delenv(PROPERTIES_ENV, raising=False)
    state = {
        "source": {"bootstrap_servers": "127.0.0.1:1001"},
        "target": {"bootstrap_servers": "127.0.0.1:2002"},
    }
    (offsetlake_home / "clusters.json").write_text(json.dumps(state), encoding="utf-8")
    return offsetlake_home


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def test_the_target_flag_wins(local_pair: Path) -> None:
    resolved = resolve_clusters(parse("plan", "--target", "broker:9092"), sources=False)
    assert (resolved.target, resolved.sources) == ("broker:9092", ())


def test_without_flags_a_local_command_uses_the_local_pair(local_pair: Path) -> None:
    resolved = resolve_clusters(parse("pipeline", "run"), sources=True)
    assert resolved.target == "127.0.0.1:2002"
    assert resolved.sources == (ClusterEndpoint("source", "127.0.0.1:1001"),)
    assert resolved.pipeline_settings().target_alias == "target"


def test_sources_and_target_go_together(local_pair: Path) -> None:
    with pytest.raises(UsageError, match="go together"):
        resolve_clusters(parse("pipeline", "run", "--target", "t:1"), sources=True)
    with pytest.raises(UsageError, match="go together"):
        resolve_clusters(parse("pipeline", "run", "--source", "east=e:1"), sources=True)


def test_a_secret_scope_naming_the_target_is_left_to_the_job(local_pair: Path) -> None:
    args = parse("plan", "--secret-scope", "kafka")
    resolved = resolve_clusters(args, sources=False, secrets=ScopeKeys(["kafka.BOOTSTRAP.servers"]))
    assert resolved.target is None


def test_a_properties_file_naming_the_target_is_left_to_the_job(local_pair: Path, tmp_path: Path) -> None:
    properties = tmp_path / "client.properties"
    properties.write_text("bootstrap.servers=b:9092\nsecurity.protocol=SASL_SSL\n", encoding="utf-8")
    resolved = resolve_clusters(parse("plan", "--kafka-properties", str(properties)), sources=False)
    assert (resolved.target, resolved.kafka_properties) == (None, properties)


def test_a_scope_without_the_target_falls_back_to_the_local_target(local_pair: Path) -> None:
    args = parse("plan", "--secret-scope", "kafka")
    resolved = resolve_clusters(args, sources=False, secrets=ScopeKeys(["kafka.sasl.jaas.config"]))
    assert resolved.target == "127.0.0.1:2002"


def test_on_databricks_a_missing_target_is_one_line_and_never_the_clusters_file(
    local_pair: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(RUNTIME_ENV, "17.3")
    args = parse("apply", "--secret-scope", "kafka")
    with pytest.raises(NoTargetError) as raised:
        resolve_clusters(args, sources=False, secrets=ScopeKeys(["kafka.sasl.jaas.config"]))
    message = str(raised.value)
    assert "\n" not in message and "make up" not in message
    assert "--target-bootstrap-servers" in message and "'kafka'" in message


def test_locally_with_no_clusters_file_the_error_says_how_to_start_them(
    offsetlake_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(RUNTIME_ENV, raising=False)
    monkeypatch.delenv(PROPERTIES_ENV, raising=False)
    with pytest.raises(ClustersFileError, match="make up"):
        resolve_clusters(parse("plan"), sources=False)


def test_another_flag_can_name_the_cluster(local_pair: Path) -> None:
    args = parse("plan")
    assert resolve_clusters(args, sources=False, target_flag="syncs:9092").target == "syncs:9092"
