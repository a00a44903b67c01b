"""One cluster endpoint type and one ``alias=bootstrap`` parser, whichever way a cluster arrives:
the pipeline's ``offsetlake.sources``, the command line's ``--source``, the local clusters file."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from offsetlake.cli.clusters import ResolvedClusters
from offsetlake.cli.failover import endpoints
from offsetlake.cli.options import parse_source
from offsetlake.contract.settings import SOURCES, TARGET_BOOTSTRAP, PipelineSettings
from offsetlake.errors import InvalidValueError
from offsetlake.local.clusters import local_pipeline_settings, read_local_clusters
from offsetlake.local.home import LocalHome
from offsetlake.mirror.clusters import ClusterEndpoint, parse_endpoint


def test_the_parser_strips_both_sides() -> None:
    assert parse_endpoint(" east = e1:9092,e2:9092 ") == ClusterEndpoint("east", "e1:9092,e2:9092")


@pytest.mark.parametrize("text", ["east", "=e:1", "east=", " = ", ""])
def test_the_parser_refuses_a_missing_side_in_one_line(text: str) -> None:
    with pytest.raises(InvalidValueError, match=r"^expected ALIAS=BOOTSTRAP \(e\.g\. primary=broker1:9092\)"):
        parse_endpoint(text)


def test_settings_flags_and_the_local_file_give_the_same_type(offsetlake_home: Path) -> None:
    (offsetlake_home / "clusters.json").write_text(
        json.dumps({name: {"bootstrap_servers": f"{name}:1"} for name in ("source", "target")}),
        encoding="utf-8",
    )
    settings = PipelineSettings.from_mapping({TARGET_BOOTSTRAP: "t:1", SOURCES: "east=e1:1;e2:1"})
    assert settings.sources == (ClusterEndpoint("east", "e1:1,e2:1"),)
    assert parse_source("east=e1:1,e2:1") == settings.sources[0]
    pair = read_local_clusters(LocalHome(offsetlake_home))
    assert (pair.source, pair.target) == (
        ClusterEndpoint("source", "source:1"),
        ClusterEndpoint("target", "target:1"),
    )
    assert local_pipeline_settings(LocalHome(offsetlake_home)).sources == (pair.source,)


def test_a_bad_source_flag_is_an_argparse_error_and_a_bad_setting_names_its_key() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="expected ALIAS=BOOTSTRAP"):
        parse_source("east")
    with pytest.raises(InvalidValueError, match=rf"^{SOURCES} entry 'east' is not alias=bootstrap$"):
        PipelineSettings.from_mapping({TARGET_BOOTSTRAP: "t:1", SOURCES: "east"})


def test_the_failover_probes_each_resolved_cluster_under_its_alias() -> None:
    clusters = ResolvedClusters("t:1", "backup", (ClusterEndpoint("east", "e:1"),), None)
    probed = [
        (cluster.name, cluster.role, cluster.config["bootstrap.servers"]) for cluster in endpoints(clusters)
    ]
    assert probed == [("backup", "target", "t:1"), ("east", "source", "e:1")]
    assert clusters.pipeline_settings().sources == clusters.sources
