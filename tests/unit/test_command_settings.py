"""Every command reads the pipeline settings one way (cli/settings.py, contract.settings.settings_of):
`plan`, `apply`, `failback` and `failover --refresh never` read the settings `pipeline run` ran
with, from the same `--set` pairs over the same spec, and refuse what it refuses, the same way."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offsetlake.apply.k2k_search import K2KTracing
from offsetlake.apply.placement import TopicRouting
from offsetlake.cli.apply import request_from_args
from offsetlake.cli.clusters import ResolvedClusters
from offsetlake.cli.main import build_parser
from offsetlake.cli.settings import pipeline_settings, run_settings
from offsetlake.contract.settings import PipelineSettings
from offsetlake.errors import InvalidValueError
from offsetlake.local.home import HOME_ENV, LocalHome
from offsetlake.local.pipeline_spec import write_spec
from offsetlake.mirror.clusters import ClusterEndpoint
from offsetlake.sessions import RUNTIME_ENV

CLUSTERS = ResolvedClusters("t:9092", "west", (ClusterEndpoint("east", "e:9092"),), None)
APPLYING = (
    ["plan", "--target", "t:9092"],
    ["apply", "--target", "t:9092", "--checkpoint-tail"],
    ["failover", "--refresh", "never", "--target", "t:9092"],
    ["failback", "--target", "t:9092", "--target-alias", "west", "--source", "east=e:9092"],
)
"""Every command that reads what the pipeline made (failover's refresh runs the pipeline itself)."""
ASSIGNMENTS = (
    "offsetlake.replication.policy=identity",
    "offsetlake.replication.separator=__",
    "offsetlake.target.alias=dr",
    "offsetlake.k2k.tracing.topics=east=eu.{topic}",
    "offsetlake.k2k.tracing.headers=offset=src.offset",
    "offsetlake.mappings.topics=east",
    "offsetlake.method.precedence=checkpoint",
    "offsetlake.cluster.timeout.ms=5000",
    "offsetlake.groups.include=orders-.*",
)
REFUSED = (
    "offsetlake.cluster.timeout.ms=soon",
    "offsetlake.k2k.tracing.topics=north={topic}",
    "offsetlake.groups.include=(",
    "offsetlake.replication.seperator=_",
    "offsetlake.tables.clustering=zorder",
)
"""Values `pipeline run` refuses: each a setting the apply once read its own way, or not at all."""


@pytest.fixture(autouse=True)
def _local(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(RUNTIME_ENV, raising=False)


def flags(assignments: list[str] | tuple[str, ...]) -> list[str]:
    return [flag for assignment in assignments for flag in ("--set", assignment)]


def pipeline_run(assignments: list[str] | tuple[str, ...]) -> PipelineSettings:
    """What `offsetlake pipeline run --set ...` runs with (and writes into the home's spec)."""
    return run_settings(build_parser().parse_args(["pipeline", "run", *flags(assignments)]), CLUSTERS)


def applying(command: list[str], assignments: list[str] | tuple[str, ...]) -> PipelineSettings:
    return pipeline_settings(build_parser().parse_args([*command, *flags(assignments)]), LocalHome.resolve())


@settings(max_examples=25)
@given(st.lists(st.sampled_from(ASSIGNMENTS), max_size=5))
def test_every_command_reads_the_settings_the_pipeline_ran_with(assignments: list[str]) -> None:
    with tempfile.TemporaryDirectory() as home, pytest.MonkeyPatch.context() as patch:
        patch.setenv(HOME_ENV, home)
        ran = pipeline_run(assignments)
        write_spec(LocalHome(Path(home)), ran)
        for command in APPLYING:
            assert applying(command, assignments) == ran, command
            assert applying(command, []) == ran, f"{command}: the spec alone"


def test_the_applys_pieces_are_read_off_those_settings(offsetlake_home: Path) -> None:
    assignments = ASSIGNMENTS[:5]
    ran = pipeline_run(assignments)
    write_spec(LocalHome(offsetlake_home), ran)
    parsed = build_parser().parse_args([*APPLYING[1], *flags(assignments)])
    request = request_from_args(parsed, CLUSTERS, dry_run=False, home=LocalHome(offsetlake_home))
    assert request.checkpoint_tail == ran.policy
    assert request.routing == TopicRouting(ran.policy, "dr", ran.k2k_tracing_routes)
    assert request.k2k_tracing == K2KTracing(ran.k2k_tracing_routes, ran.k2k_tracing_headers)


@pytest.mark.parametrize("assignment", REFUSED)
def test_what_the_pipeline_refuses_every_command_refuses_in_the_same_words(
    assignment: str, offsetlake_home: Path
) -> None:
    with pytest.raises(InvalidValueError) as pipeline:
        pipeline_run([assignment])
    write_spec(LocalHome(offsetlake_home), pipeline_run([]))
    for command in APPLYING:
        with pytest.raises(InvalidValueError) as refused:
            applying(command, [assignment])
        assert str(refused.value) == str(pipeline.value), command


def test_without_a_spec_the_apply_names_no_cluster_and_takes_the_defaults(offsetlake_home: Path) -> None:
    """Before any pipeline run (or on Databricks without --set pairs) the apply still plans: its view
    names no cluster, and a route's alias has no source list to be checked against."""
    assert applying(APPLYING[0], []) == PipelineSettings("", ())
    routed = applying(APPLYING[0], ["offsetlake.k2k.tracing.topics=north={topic}"])
    assert [route.alias for route in routed.k2k_tracing_routes] == ["north"]
    with pytest.raises(InvalidValueError, match="is required"):
        PipelineSettings.from_mapping({})
