"""A command's pipeline settings, read one way for every command (contract.settings.settings_of).

``--set offsetlake.KEY=VALUE`` (repeatable) goes over a base configuration, the one thing a
command chooses:

- a command that runs the pipeline (``pipeline run``, a refreshing ``failover``): the clusters it
  is given. The home's spec is what such a run writes, never what it reads: a ``--set`` holds for
  the run it is given to.
- a command that reads what the pipeline made (``plan``, ``apply``, ``failback``, ``failover
  --refresh never``): the pipeline's own configuration. Locally that is the home's spec of the last
  ``pipeline run``; on Databricks, the bundle's apply tasks pass the pipeline resource's whole
  configuration as ``--set`` pairs (generated: resources/pipeline_settings.py).

Either way the result is one validated :class:`PipelineSettings`, and the apply's pieces (the
checkpoint tail's policy, the topic routing, the K2K search) are read off it here.
"""

from __future__ import annotations

import argparse

import yaml

from offsetlake.apply.k2k_search import K2KTracing
from offsetlake.apply.placement import TopicRouting
from offsetlake.cli.clusters import ResolvedClusters
from offsetlake.contract.settings import PipelineSettings, settings_of
from offsetlake.errors import InvalidValueError
from offsetlake.local.home import LocalHome


def add_set_option(parser: argparse.ArgumentParser) -> None:
    """``--set offsetlake.KEY=VALUE`` (repeatable), the same flag on every command that reads settings."""
    parser.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="a pipeline setting, e.g. --set offsetlake.replication.separator=_; over the clusters given "
        "for a pipeline update, else over the pipeline's configuration (locally: this home's last "
        "`pipeline run`, else the defaults)",
    )


def run_settings(args: argparse.Namespace, clusters: ResolvedClusters) -> PipelineSettings:
    """The settings of a pipeline update: the resolved clusters' with each ``--set`` applied."""
    return settings_of(clusters.pipeline_settings().to_conf(), args.set or ())


def pipeline_settings(args: argparse.Namespace, home: LocalHome | None) -> PipelineSettings:
    """The settings of the pipeline that made gold, as the apply reads them: each ``--set`` over
    (locally: ``home``; None on Databricks) the home's spec. They may name no cluster: the apply
    reaches none through them."""
    return settings_of({} if home is None else last_run_conf(home), args.set or (), clusters=False)


def last_run_conf(home: LocalHome) -> dict[str, str]:
    """The offsetlake.* configuration of the home's pipeline spec; empty when it never ran."""
    spec = home.pipeline_spec
    if not spec.is_file():
        return {}
    try:
        configuration = (yaml.safe_load(spec.read_text(encoding="utf-8")) or {}).get("configuration") or {}
    except (OSError, yaml.YAMLError, AttributeError) as error:
        raise InvalidValueError(f"cannot read the local pipeline spec {spec}: {error}") from None
    return {
        str(key): str(value) for key, value in configuration.items() if str(key).startswith("offsetlake.")
    }


def topic_routing(settings: PipelineSettings) -> TopicRouting:
    """How the pipeline names each source topic on the target: where a committed partition is planned."""
    return TopicRouting(settings.policy, settings.target_alias, settings.k2k_tracing_routes)


def k2k_tracing(settings: PipelineSettings) -> K2KTracing | None:
    """The K2K routes and tracing-header names; None when the k2k_tracing_headers method is off."""
    if not settings.k2k_tracing_routes:
        return None
    return K2KTracing(settings.k2k_tracing_routes, settings.k2k_tracing_headers)
