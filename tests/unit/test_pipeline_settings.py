"""Pipeline settings: parsing the configuration keys, defaults, and clear errors for bad values."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from offsetlake.cli import settings as cli_settings
from offsetlake.contract.settings import (
    ALL_KEYS,
    K2K_TRACING_TOPICS,
    MAPPINGS_TOPICS,
    METHOD_PRECEDENCE,
    SOURCES,
    TARGET_BOOTSTRAP,
    MappingTopic,
    PipelineSettings,
    parse_sources,
)
from offsetlake.errors import InvalidValueError
from offsetlake.k2k.routing import TracingRoute
from offsetlake.k2k.tracing import TracingHeaderNames
from offsetlake.mirror.clusters import ClusterEndpoint
from offsetlake.pipeline.kafka_readers import pipeline_settings


def test_defaults_match_the_documented_contract() -> None:
    settings = PipelineSettings.from_mapping({TARGET_BOOTSTRAP: "t:9092", SOURCES: "east=e:9092"})
    assert settings.sources == (ClusterEndpoint("east", "e:9092"),)
    assert (settings.replication_policy, settings.separator, settings.offset_syncs_location) == (
        "default",
        ".",
        "source",
    )
    assert settings.method_precedence == ("mapping", "k2k_tracing_headers", "offset_sync", "checkpoint")
    assert (settings.kafka_reader, settings.mappings_topics, settings.secret_scope) == ("offsetlake", (), "")
    assert settings.k2k_tracing_routes == ()
    assert settings.groups_exclude == "console-consumer-.*|connect-.*|__.*"


def test_settings_survive_a_round_trip_through_the_pipeline_configuration() -> None:
    settings = PipelineSettings(
        target_bootstrap_servers="t1:9092,t2:9092",
        target_alias="west",
        sources=(ClusterEndpoint("east", "e1:9092,e2:9092"), ClusterEndpoint("north", "n:9092")),
        separator="__",
        offset_syncs_location="target",
        mappings_topics=(MappingTopic("east"), MappingTopic("north", "north-maps")),
        k2k_tracing_routes=(TracingRoute("east", "eu.{topic}.copy"),),
        k2k_tracing_headers=TracingHeaderNames(offset="src.offset"),
        method_precedence=("checkpoint", "offset_sync", "mapping", "k2k_tracing_headers"),
    )
    assert PipelineSettings.from_mapping(settings.to_conf()) == settings


def test_several_brokers_of_one_source_are_separated_by_semicolons() -> None:
    assert parse_sources("east=a:1;b:2, west=c:3") == (
        ClusterEndpoint("east", "a:1,b:2"),
        ClusterEndpoint("west", "c:3"),
    )


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        ({SOURCES: "east=e:1"}, TARGET_BOOTSTRAP),
        ({TARGET_BOOTSTRAP: "t:1"}, SOURCES),
        ({TARGET_BOOTSTRAP: "t:1", SOURCES: "east"}, "alias=bootstrap"),
        ({TARGET_BOOTSTRAP: "t:1", SOURCES: "east=a:1,east=b:1"}, "twice"),
        ({TARGET_BOOTSTRAP: "t:1", SOURCES: "e.ast=a:1"}, "alias"),
        (
            {TARGET_BOOTSTRAP: "t:1", SOURCES: "east=a:1", METHOD_PRECEDENCE: "mapping,mapping"},
            "at most once",
        ),
        (
            {TARGET_BOOTSTRAP: "t:1", SOURCES: "east=a:1", METHOD_PRECEDENCE: "mapping,guess"},
            "at most once",
        ),
        (
            {TARGET_BOOTSTRAP: "t:1", SOURCES: "east=a:1", MAPPINGS_TOPICS: "west"},
            "not in offsetlake.sources",
        ),
        (
            {TARGET_BOOTSTRAP: "t:1", SOURCES: "east=a:1,west=b:1", MAPPINGS_TOPICS: "east=m,west=m"},
            "more than one source alias",
        ),
        ({TARGET_BOOTSTRAP: "t:1", SOURCES: "east=a:1", MAPPINGS_TOPICS: "east="}, "alias\\[=topic\\]"),
        ({TARGET_BOOTSTRAP: "t:1", SOURCES: "east=a:1", K2K_TRACING_TOPICS: "east"}, "template"),
        ({TARGET_BOOTSTRAP: "t:1", SOURCES: "east=a:1", K2K_TRACING_TOPICS: "west={topic}"}, "west"),
        ({TARGET_BOOTSTRAP: "t:1", SOURCES: "east=a:1", "offsetlake.groups.include": "("}, "regex"),
        (
            {TARGET_BOOTSTRAP: "t:1", SOURCES: "east=a:1", "offsetlake.mappings.format": "avro"},
            "no Spark decoder",
        ),
        ({TARGET_BOOTSTRAP: "t:1", SOURCES: "east=a:1", "offsetlake.kafka.reader": "jdbc"}, "builtin"),
    ],
)
def test_bad_configuration_fails_naming_the_key(conf: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PipelineSettings.from_mapping(conf)


def test_bronze_refuses_a_full_refresh_only_with_one_flow_per_source() -> None:
    """Databricks (per_source) never needs a full refresh to add a cluster, so bronze, the only
    history beyond Kafka's retention, refuses one; locally (union) adding a cluster needs one."""
    base = PipelineSettings.from_mapping(
        {"offsetlake.target.bootstrap.servers": "t:1", "offsetlake.sources": "a=s:1"}
    )
    assert base.bronze_flows == "union"
    assert base.bronze_table_properties == {}
    per_source = PipelineSettings.from_mapping(base.to_conf() | {"offsetlake.bronze.flows": "per_source"})
    assert per_source.bronze_table_properties == {"pipelines.reset.allowed": "false"}
    with pytest.raises(InvalidValueError, match=r"offsetlake\.bronze\.flows"):
        PipelineSettings.from_mapping(base.to_conf() | {"offsetlake.bronze.flows": "each"})


def test_the_bundle_sets_every_key_to_its_variable_whose_default_is_the_settings_default() -> None:
    """The bundle passes pipeline keys through variables; a variable's default that drifted from
    the settings table would make Databricks and a local run disagree without an error."""
    import re
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parents[2]
    variables = yaml.safe_load((root / "databricks.yml").read_text(encoding="utf-8"))["variables"]
    pipeline = yaml.safe_load((root / "resources" / "offsetlake.pipeline.yml").read_text(encoding="utf-8"))
    configuration = pipeline["resources"]["pipelines"]["offsetlake_pipeline"]["configuration"]
    defaults = PipelineSettings(target_bootstrap_servers="t:1", sources=(ClusterEndpoint("a", "b:1"),))
    defaults_conf = defaults.to_conf()
    checked = []
    for key, value in configuration.items():
        variable = re.fullmatch(r"\$\{var\.(\w+)\}", str(value))
        if variable and "default" in variables[variable[1]] and key not in (TARGET_BOOTSTRAP, SOURCES):
            assert str(variables[variable[1]]["default"]) == defaults_conf[key], key
            checked.append(key)
    assert "offsetlake.groups.exclude" in checked and len(checked) >= 8, checked


def test_a_mapping_topic_is_bound_to_its_source_and_defaults_to_k2ks_topic_name() -> None:
    settings = PipelineSettings.from_mapping(
        {TARGET_BOOTSTRAP: "t:1", SOURCES: "east=a:1,west=b:1", MAPPINGS_TOPICS: "east, west=west-maps"}
    )
    assert settings.mapping_topic_sources == {"__k2k_offset_mappings": "east", "west-maps": "west"}


def test_a_precedence_written_before_a_method_existed_keeps_its_order_and_gains_the_rest() -> None:
    settings = PipelineSettings.from_mapping(
        {TARGET_BOOTSTRAP: "t:1", SOURCES: "east=a:1", METHOD_PRECEDENCE: "checkpoint,offset_sync,mapping"}
    )
    assert settings.method_precedence == ("checkpoint", "offset_sync", "mapping", "k2k_tracing_headers")


def test_a_tracing_route_names_the_target_topic_of_each_source_topic() -> None:
    settings = PipelineSettings.from_mapping(
        {
            TARGET_BOOTSTRAP: "t:1",
            SOURCES: "east=a:1,west=b:1",
            K2K_TRACING_TOPICS: "east=us.{topic},west=eu.{topic}.copy",
        }
    )
    east, west = settings.k2k_tracing_routes
    assert (east.target_topic("orders"), west.target_topic("orders")) == ("us.orders", "eu.orders.copy")
    assert TracingRoute("east", "all-orders").target_topic("orders") == "all-orders"


class _Conf:
    """spark.conf as a Spark Connect session answers it, counting the round trips."""

    def __init__(self, listed: dict[str, str], known: dict[str, str]) -> None:
        self._listed, self._known, self.calls = listed, known, 0

    @property
    def getAll(self) -> dict[str, str]:  # noqa: N802 (PySpark's name)
        self.calls += 1
        return dict(self._listed)

    def get(self, key: str, default: str | None = None) -> str | None:
        self.calls += 1
        return self._known.get(key, default)


def test_the_transformations_read_their_settings_in_one_round_trip() -> None:
    conf = {TARGET_BOOTSTRAP: "target:9092", SOURCES: "east=e:9092", "offsetlake.groups.include": "orders-.*"}
    conf["spark.other"] = "x"
    listing = _Conf(conf, conf)
    settings = pipeline_settings(SimpleNamespace(conf=listing))  # type: ignore[arg-type]
    assert (settings.target_bootstrap_servers, settings.groups_include) == ("target:9092", "orders-.*")
    assert listing.calls == 1
    # A runtime that leaves the pipeline's settings out of getAll is read key by key.
    hiding = _Conf({"spark.other": "x"}, conf)
    assert pipeline_settings(SimpleNamespace(conf=hiding)) == settings  # type: ignore[arg-type]
    assert hiding.calls == 1 + len(ALL_KEYS)


@pytest.mark.parametrize(
    ("routes", "example"),
    [
        ("east={topic},west={topic}", "orders"),  # issue 46: east's group at 10 was committed at 30
        ("east={topic},west=eu.{topic}.copy", "eu.orders.copy"),  # east's own eu.orders.copy
        ("east=all-orders,west=all-orders", "all-orders"),
        ("east=us.{topic},west=us.orders", "us.orders"),
    ],
)
def test_routes_of_two_sources_that_can_meet_in_one_target_topic_are_refused_in_one_line(
    routes: str, example: str
) -> None:
    conf = {TARGET_BOOTSTRAP: "t:1", SOURCES: "east=a:1,west=b:1", K2K_TRACING_TOPICS: routes}
    with pytest.raises(InvalidValueError) as refused:
        PipelineSettings.from_mapping(conf)
    message = str(refused.value)
    assert message.startswith(f"{K2K_TRACING_TOPICS} routes east=") and f"(e.g. {example})" in message
    assert "name no cluster" in message and "\n" not in message


def test_routes_that_cannot_meet_are_accepted() -> None:
    for routes in ("east=us.{topic},west=eu.{topic}", "east={topic}.us,west={topic}.eu", "east=a,west=b"):
        conf = {TARGET_BOOTSTRAP: "t:1", SOURCES: "east=a:1,west=b:1", K2K_TRACING_TOPICS: routes}
        assert len(PipelineSettings.from_mapping(conf).k2k_tracing_routes) == 2


def test_the_applys_reading_of_the_routes_refuses_fan_in() -> None:
    """`apply`/`failover` read the routes through the one reading (cli/settings.pipeline_settings),
    with no source named: the same refusal."""
    fan_in = SimpleNamespace(set=[f"{K2K_TRACING_TOPICS}=east={{topic}},west={{topic}}"])
    with pytest.raises(InvalidValueError, match="can write both sources' records into one target topic"):
        cli_settings.pipeline_settings(fan_in, None)  # type: ignore[arg-type]
    apart = SimpleNamespace(set=[f"{K2K_TRACING_TOPICS}=east=east.{{topic}},west=west.{{topic}}"])
    tracing = cli_settings.k2k_tracing(cli_settings.pipeline_settings(apart, None))  # type: ignore[arg-type]
    assert tracing is not None and [route.alias for route in tracing.routes] == ["east", "west"]
