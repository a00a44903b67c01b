"""Which Kafka clusters a local command talks to: the ones named on the command line, else the local pair.

``python -m offsetlake_dev local up`` (the development harness) records the two local brokers in
``$OFFSETLAKE_HOME/clusters.json``; this module owns that file's contract and only reads it, so the
product needs nothing from the harness to find them. ``--source ALIAS=BOOTSTRAP`` and ``--target
BOOTSTRAP`` point any command at any Kafka pair instead.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

from offsetlake.contract.settings import PipelineSettings
from offsetlake.errors import UsageError
from offsetlake.local.home import LocalHome
from offsetlake.mirror.clusters import ClusterEndpoint

SOURCE: Final = "source"
TARGET: Final = "target"
START_HINT: Final = "start them with `make up` (python -m offsetlake_dev local up)"


class ClustersFileError(UsageError):
    """No local clusters are recorded, or their record is unreadable."""


@dataclass(frozen=True)
class LocalClusters:
    source: ClusterEndpoint
    target: ClusterEndpoint


def read_local_clusters(home: LocalHome | None = None) -> LocalClusters:
    """The recorded local pair (not checked for being alive); ``home`` by default: the one
    ``$OFFSETLAKE_HOME`` names (a caller outside a command: the harness, a benchmark)."""
    path = (home or LocalHome.resolve()).clusters_file
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
        endpoints = {
            name: ClusterEndpoint(name, str(state[name]["bootstrap_servers"])) for name in (SOURCE, TARGET)
        }
    except FileNotFoundError:
        raise ClustersFileError(f"no local clusters recorded in {path}: {START_HINT}") from None
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ClustersFileError(f"cannot read {path} ({error!r}): {START_HINT}") from error
    return LocalClusters(source=endpoints[SOURCE], target=endpoints[TARGET])


def local_pipeline_settings(home: LocalHome | None = None) -> PipelineSettings:
    """Pipeline settings for the recorded local pair (aliases = cluster names): the development
    harness's and benchmarks' default; a command gets its clusters from offsetlake.cli.clusters."""
    pair = read_local_clusters(home)
    return PipelineSettings(
        target_bootstrap_servers=pair.target.bootstrap_servers,
        target_alias=pair.target.alias,
        sources=(pair.source,),
    )
