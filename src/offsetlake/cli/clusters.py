"""Which Kafka clusters a command talks to, decided once, here, at the edge.

Every command makes one call, :func:`resolve_clusters`, and hands the runs it starts explicit
endpoints; no run looks anywhere for a cluster. The target is the ``--target`` flag, else the
``kafka.bootstrap.servers`` of the client settings (the secret scope, or the properties file),
else, in a local command only, the target of the local clusters file (``make up``). The sources
are the ``--source`` flags, else the local source. On Databricks there is no local clusters file:
a missing target is an operator mistake, reported in one line naming both ways to give it.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from offsetlake.contract.settings import PipelineSettings
from offsetlake.errors import UsageError
from offsetlake.kafka.secrets import (
    BOOTSTRAP_OPTION,
    PROPERTIES_ENV,
    DatabricksSecrets,
    SecretsProvider,
    kafka_options_from_properties,
)
from offsetlake.local.clusters import read_local_clusters
from offsetlake.local.home import LocalHome
from offsetlake.mirror.clusters import ClusterEndpoint
from offsetlake.sessions import on_databricks


class NoTargetError(UsageError):
    """No target cluster was named, and none can be found where this command runs."""


@dataclass(frozen=True)
class ResolvedClusters:
    """What one command talks to. ``target`` is None only when the client settings name it (the
    run reads it there, with the credentials); ``sources`` is empty for commands without them."""

    target: str | None
    target_alias: str
    sources: tuple[ClusterEndpoint, ...]
    kafka_properties: Path | None
    kafka_options: Mapping[str, str] = field(default_factory=dict, repr=False)
    """The properties file's client settings (values are secrets: never printed)."""

    def pipeline_settings(self) -> PipelineSettings:
        """The clusters as pipeline settings (a pipeline needs both ends by address)."""
        if self.target is None or not self.sources:
            raise UsageError("a pipeline run needs --target and --source, or the local clusters")
        return PipelineSettings(
            target_bootstrap_servers=self.target,
            target_alias=self.target_alias,
            sources=self.sources,
        )


def resolve_clusters(
    args: argparse.Namespace,
    *,
    sources: bool,
    secrets: SecretsProvider | None = None,
    home: LocalHome | None = None,
    target_flag: str | None = None,
) -> ResolvedClusters:
    """The clusters of one command; with no cluster named, the local pair ``home`` records (the
    command's). ``target_flag`` replaces ``--target`` for a command whose cluster is named by another
    flag (``mm2 reset-offsets --offset-syncs-bootstrap``)."""
    properties = _properties_file(args)
    options = kafka_options_from_properties(properties) if properties else {}
    flag = target_flag or args.target_bootstrap_servers
    named_sources = tuple(getattr(args, "sources", None) or ())
    if sources and bool(args.target_bootstrap_servers) != bool(named_sources):
        raise UsageError(
            "--target and --source go together (give neither to use the local clusters of `make up`)"
        )
    if flag and (named_sources or not sources):
        alias = getattr(args, "target_alias", None) or ""
        return ResolvedClusters(flag, alias, named_sources, properties, options)
    if not sources and _client_settings_name_target(args, options, secrets):
        return ResolvedClusters(None, "", (), properties, options)
    if on_databricks():
        raise NoTargetError(_no_target_line(args))
    pair = read_local_clusters(home)
    return ResolvedClusters(
        pair.target.bootstrap_servers,
        pair.target.alias if sources else "",
        (pair.source,) if sources else (),
        properties,
        options,
    )


def _properties_file(args: argparse.Namespace) -> Path | None:
    """The Kafka properties file to use (read, so checked, by the caller now: a typo costs
    seconds, not a Spark start)."""
    from_environment = os.environ.get(PROPERTIES_ENV)
    return args.kafka_properties or (Path(from_environment) if from_environment else None)


def _client_settings_name_target(
    args: argparse.Namespace, options: Mapping[str, str], secrets: SecretsProvider | None
) -> bool:
    """Whether the properties file's options or the secret scope hold ``kafka.bootstrap.servers``
    (the scope's key names only: no secret value is read here)."""
    if _names_bootstrap(options):
        return True
    scope = getattr(args, "secret_scope", None)
    if not scope:
        return False
    return _names_bootstrap((secrets or DatabricksSecrets()).list_keys(scope))


def _names_bootstrap(keys: Iterable[str]) -> bool:
    return any(key.lower() == BOOTSTRAP_OPTION for key in keys)


def _no_target_line(args: argparse.Namespace) -> str:
    scope = getattr(args, "secret_scope", None)
    where = f"in secret scope {scope!r}" if scope else "in the secret scope (--secret-scope)"
    return (
        f"no target cluster: pass --target-bootstrap-servers, or store {BOOTSTRAP_OPTION} {where}; "
        "the local clusters file does not exist on Databricks"
    )
