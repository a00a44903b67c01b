"""The pipeline's configuration keys (docs/architecture.md), parsed and validated once.

The same keys arrive three ways: the local runner writes them into the spark-pipeline.yml
``configuration``, the bundle sets them on the Databricks pipeline, and tests build settings
directly. Each way ends in :meth:`PipelineSettings.from_conf`, so a bad value fails the same way
(a ``ValueError`` naming the key) before any flow starts, instead of deep inside a Spark job.

A command reads them one way too (:func:`settings_of`): ``--set offsetlake.KEY=VALUE`` pairs over
a base configuration (the clusters a pipeline run is given, or the pipeline's own configuration:
the home's spec locally, the bundle's ``--set`` pairs on Databricks), so a setting the apply needs
is a field here and nothing else.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from enum import Enum
from typing import Any, Final, Literal

from offsetlake.contract.tables import APPLY_CLUSTER_KEY
from offsetlake.errors import InvalidValueError
from offsetlake.k2k.routing import TOPIC_PLACEHOLDER, TracingRoute, shared_target
from offsetlake.k2k.tracing import TracingHeaderNames
from offsetlake.mirror.clusters import ClusterEndpoint, parse_endpoint
from offsetlake.mirror.filters import DEFAULT_GROUPS_EXCLUDE, DEFAULT_GROUPS_INCLUDE, DEFAULT_TOPICS_INCLUDE
from offsetlake.mirror.policy import DEFAULT_TOPICS_EXCLUDE, POLICY_KINDS, ReplicationPolicy
from offsetlake.mirror.precedence import METHODS, parse_method_precedence

TARGET_BOOTSTRAP: Final = "offsetlake.target.bootstrap.servers"
TARGET_ALIAS: Final = "offsetlake.target.alias"
SOURCES: Final = "offsetlake.sources"
REPLICATION_POLICY: Final = "offsetlake.replication.policy"
REPLICATION_SEPARATOR: Final = "offsetlake.replication.separator"
OFFSET_SYNCS_LOCATION: Final = "offsetlake.offset_syncs.location"
GROUPS_INCLUDE: Final = "offsetlake.groups.include"
GROUPS_EXCLUDE: Final = "offsetlake.groups.exclude"
MAPPINGS_TOPICS: Final = "offsetlake.mappings.topics"
MAPPINGS_FORMAT: Final = "offsetlake.mappings.format"
K2K_TRACING_TOPICS: Final = "offsetlake.k2k.tracing.topics"
K2K_TRACING_HEADERS: Final = "offsetlake.k2k.tracing.headers"
METHOD_PRECEDENCE: Final = "offsetlake.method.precedence"
KAFKA_READER: Final = "offsetlake.kafka.reader"
SECRET_SCOPE: Final = "offsetlake.secret_scope"
CLUSTER_TIMEOUT_MS: Final = "offsetlake.cluster.timeout.ms"
BRONZE_FLOWS: Final = "offsetlake.bronze.flows"
CONNECT_OFFSETS_TOPICS: Final = "offsetlake.connect_offsets.topics"
TOPICS_INCLUDE: Final = "offsetlake.topics.include"
TOPICS_EXCLUDE: Final = "offsetlake.topics.exclude"
GOLD_INCREMENTAL: Final = "offsetlake.gold.incremental"
TABLE_CLUSTERING: Final = "offsetlake.tables.clustering"


DEFAULT_CONNECT_OFFSETS_TOPICS: Final = r"mm2-offsets\..+\.internal|connect-offsets"
"""Kafka Connect offset topics on the target: dedicated MM2's ``mm2-offsets.<source>.internal``
(``MirrorMakerConfig.workerConfig``) and ``connect-offsets``, the name Kafka's
``connect-distributed.properties`` gives a Connect cluster's ``offset.storage.topic``."""
DEFAULT_CLUSTER_TIMEOUT_MS: Final = 30_000
"""How long one cluster may take to answer before it counts as unreachable for this update; also
every data source's ``timeoutMs`` default (data_sources/options.py)."""
DEFAULT_MAPPINGS_TOPIC: Final = "__k2k_offset_mappings"
"""K2K's documented default ``offsetMapping.topic`` (Lenses K2K offset-mapping configuration)."""
SUPPORTED_MAPPING_FORMATS: Final[tuple[str, ...]] = ("k2k-json-v1",)
"""Formats pipeline/decoding/ can decode with Spark expressions (a subset of codecs.mappings' registry)."""

OffsetSyncsLocation = Literal["source", "target"]
KafkaReader = Literal["offsetlake", "builtin"]
BronzeFlows = Literal["union", "per_source"]
BRONZE_FLOW_MODES: Final[tuple[str, ...]] = ("union", "per_source")
GoldIncremental = Literal["recompute", "auto_cdc"]
GOLD_INCREMENTAL_MODES: Final[tuple[str, ...]] = ("recompute", "auto_cdc")
TableClustering = Literal["none", "liquid"]
TABLE_CLUSTERING_MODES: Final[tuple[str, ...]] = ("none", "liquid")
_ALIAS = re.compile(r"^[A-Za-z0-9_-]+$")


class Blank(Enum):
    """What an empty value of a key means."""

    DEFAULT = "default"
    """Empty or blank: the default (most keys)."""
    KEEP = "keep"
    """Empty: the default; anything else verbatim, never stripped (a separator may be ``__``)."""
    OFF = "off"
    """Unset: the default; set but blank: empty, i.e. off or nothing excluded."""

    def read(self, found: str | None) -> str | None:
        """The text to parse, or None for the default."""
        if self is Blank.KEEP:
            return found or None
        if found is None or (self is Blank.DEFAULT and not found.strip()):
            return None
        return found.strip()


@dataclass(frozen=True)
class Setting:
    """One configuration key: how its text becomes the field's value and back."""

    key: str
    parse: Callable[[str], Any] = str
    text: Callable[[Any], str] = str
    blank: Blank = Blank.DEFAULT


SETTING: Final = "offsetlake.setting"


def _setting(
    key: str,
    default: Any = MISSING,
    *,
    parse: Callable[[str], Any] = str,
    text: Callable[[Any], str] = str,
    blank: Blank = Blank.DEFAULT,
) -> Any:
    """A settings field bound to its key: ALL_KEYS, from_conf and to_conf are generated from these."""
    return field(default=default, metadata={SETTING: Setting(key, parse, text, blank)})


def _milliseconds(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise InvalidValueError(
            f"{CLUSTER_TIMEOUT_MS} must be a whole number of milliseconds, got {text!r}"
        ) from None


def parse_sources(text: str) -> tuple[ClusterEndpoint, ...]:
    """``alias=host:port[;host:port],alias2=…``; a bootstrap list inside one source uses ``;``."""
    sources: list[ClusterEndpoint] = []
    for entry in filter(None, (part.strip() for part in text.split(","))):
        try:
            source = parse_endpoint(entry)
        except InvalidValueError:
            raise InvalidValueError(f"{SOURCES} entry {entry!r} is not alias=bootstrap") from None
        sources.append(ClusterEndpoint(source.alias, source.bootstrap_servers.replace(";", ",")))
    return tuple(sources)


def format_sources(sources: tuple[ClusterEndpoint, ...]) -> str:
    """The inverse of :func:`parse_sources`."""
    return ",".join(f"{source.alias}={source.bootstrap_servers.replace(',', ';')}" for source in sources)


@dataclass(frozen=True)
class MappingTopic:
    """A record-level mapping topic on the target and the source cluster its mappings describe:
    K2K's mapping records name topics, never clusters, so the binding is configuration."""

    alias: str
    topic: str = DEFAULT_MAPPINGS_TOPIC


def parse_mapping_topics(text: str) -> tuple[MappingTopic, ...]:
    """``alias[=topic],…``: a bare alias reads K2K's default topic ``__k2k_offset_mappings``."""
    bound: list[MappingTopic] = []
    for entry in filter(None, (part.strip() for part in text.split(","))):
        alias, sep, topic = (part.strip() for part in entry.partition("="))
        if not alias or (sep and not topic):
            raise InvalidValueError(f"{MAPPINGS_TOPICS} entry {entry!r} is not alias[=topic]")
        bound.append(MappingTopic(alias, topic) if sep else MappingTopic(alias))
    return tuple(bound)


def format_mapping_topics(bound: tuple[MappingTopic, ...]) -> str:
    return ",".join(f"{entry.alias}={entry.topic}" for entry in bound)


def parse_tracing_routes(text: str) -> tuple[TracingRoute, ...]:
    """``alias=template,…``: where K2K writes each source topic of that source cluster; two sources'
    routes that can meet in one target topic are refused (k2k.routing.shared_target)."""
    routes: list[TracingRoute] = []
    for entry in filter(None, (part.strip() for part in text.split(","))):
        alias, sep, template = (part.strip() for part in entry.partition("="))
        if not sep or not alias or not template:
            raise InvalidValueError(
                f"{K2K_TRACING_TOPICS} entry {entry!r} is not alias=target-topic template "
                f"(e.g. east={TOPIC_PLACEHOLDER} or east=eu.{TOPIC_PLACEHOLDER}.copy)"
            )
        routes.append(TracingRoute(alias, template))
    for index, first in enumerate(routes):
        for second in routes[index + 1 :]:
            if first.alias != second.alias and (topic := shared_target(first, second)) is not None:
                raise InvalidValueError(
                    f"{K2K_TRACING_TOPICS} routes {first.alias}={first.template} and "
                    f"{second.alias}={second.template} can write both sources' records into one target "
                    f"topic (e.g. {topic}); K2K's tracing headers name no cluster, so the search could not "
                    f"tell them apart: give each source its own prefix or suffix (e.g. "
                    f"{first.alias}={first.alias}.{TOPIC_PLACEHOLDER})"
                )
    return tuple(routes)


def format_tracing_routes(routes: tuple[TracingRoute, ...]) -> str:
    return ",".join(f"{route.alias}={route.template}" for route in routes)


def _comma_list(text: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in text.split(","))


@dataclass(frozen=True)
class PipelineSettings:
    """Everything the transformations need to know about the clusters and MM2's naming.

    A pipeline needs both cluster ends (:meth:`from_conf` refuses a configuration without them);
    the apply's view may name neither (``clusters=False``): it reads gold and names topics."""

    target_bootstrap_servers: str = _setting(TARGET_BOOTSTRAP)
    sources: tuple[ClusterEndpoint, ...] = _setting(SOURCES, parse=parse_sources, text=format_sources)
    target_alias: str = _setting(TARGET_ALIAS, "")
    replication_policy: str = _setting(REPLICATION_POLICY, "default")
    separator: str = _setting(REPLICATION_SEPARATOR, ".", blank=Blank.KEEP)
    offset_syncs_location: OffsetSyncsLocation = _setting(OFFSET_SYNCS_LOCATION, "source")
    groups_include: str = _setting(GROUPS_INCLUDE, DEFAULT_GROUPS_INCLUDE)
    groups_exclude: str = _setting(GROUPS_EXCLUDE, DEFAULT_GROUPS_EXCLUDE)
    mappings_topics: tuple[MappingTopic, ...] = _setting(
        MAPPINGS_TOPICS, (), parse=parse_mapping_topics, text=format_mapping_topics
    )
    """Record-level mapping topics, each bound to its source alias; empty: mappings off."""
    mappings_format: str = _setting(MAPPINGS_FORMAT, "k2k-json-v1")
    k2k_tracing_routes: tuple[TracingRoute, ...] = _setting(
        K2K_TRACING_TOPICS, (), parse=parse_tracing_routes, text=format_tracing_routes
    )
    """Per source alias, the target topic K2K writes each source topic to, whose records carry K2K's
    record-tracing headers; empty: the k2k_tracing_headers method is off."""
    k2k_tracing_headers: TracingHeaderNames = _setting(
        K2K_TRACING_HEADERS,
        TracingHeaderNames(),
        parse=TracingHeaderNames.parse,
        text=TracingHeaderNames.text,
    )
    """K2K's ``tracing.headers`` names (defaults k2k_topic, k2k_partition, k2k_offset)."""
    method_precedence: tuple[str, ...] = _setting(
        METHOD_PRECEDENCE, METHODS, parse=_comma_list, text=",".join
    )
    kafka_reader: KafkaReader = _setting(KAFKA_READER, "offsetlake")
    secret_scope: str = _setting(SECRET_SCOPE, "")
    cluster_timeout_ms: int = _setting(CLUSTER_TIMEOUT_MS, DEFAULT_CLUSTER_TIMEOUT_MS, parse=_milliseconds)
    bronze_flows: BronzeFlows = _setting(BRONZE_FLOWS, "union")
    """``per_source`` (Databricks): one append flow per source cluster, so adding a cluster needs no
    full refresh and bronze refuses one. ``union`` (local default): one streaming query per table,
    because concurrent appends race on a Parquet table's sink log; adding a cluster then needs a
    full refresh of bronze, which is therefore allowed."""
    connect_offsets_topics: str = _setting(
        CONNECT_OFFSETS_TOPICS, DEFAULT_CONNECT_OFFSETS_TOPICS, blank=Blank.OFF
    )
    """Regex of Connect offset topics on the target; empty turns their ingestion off."""
    topics_include: str = _setting(TOPICS_INCLUDE, DEFAULT_TOPICS_INCLUDE)
    topics_exclude: str = _setting(TOPICS_EXCLUDE, DEFAULT_TOPICS_EXCLUDE, blank=Blank.OFF)
    gold_incremental: GoldIncremental = _setting(GOLD_INCREMENTAL, "recompute")
    """How offset_versions is kept. ``auto_cdc`` (Databricks): AUTO CDC SCD type 2 applies only the
    new observations to the Delta table. ``recompute`` (local default): a materialized view computes
    the same table from every observation, because the open-source engine cannot MERGE into
    Parquet (and has no SCD type 2 before Spark 4.3)."""
    table_clustering: TableClustering = _setting(TABLE_CLUSTERING, "none")
    """``liquid`` (Databricks): silver_group_offsets and the gold tables the apply reads are
    liquid-clustered by ``APPLY_CLUSTER_KEY``. ``none`` (local default): a Parquet table only records
    the columns (no layout), and an existing streaming table refuses a clustering it was not
    created with (CANNOT_UPDATE_PARTITION_COLUMNS), so an upgraded local home would fail."""

    def __post_init__(self) -> None:
        aliases = [source.alias for source in self.sources]
        if len(set(aliases)) != len(aliases):
            raise InvalidValueError(f"{SOURCES} lists an alias twice: {', '.join(aliases)}")
        for alias in [*aliases, *([self.target_alias] if self.target_alias else [])]:
            if not _ALIAS.match(alias):
                raise InvalidValueError(f"cluster alias {alias!r} must match {_ALIAS.pattern}")
        if self.replication_policy not in POLICY_KINDS:
            raise InvalidValueError(
                f"{REPLICATION_POLICY} must be one of {', '.join(POLICY_KINDS)}, "
                f"got {self.replication_policy!r}"
            )
        if not self.separator:
            raise InvalidValueError(f"{REPLICATION_SEPARATOR} must not be empty")
        if self.offset_syncs_location not in ("source", "target"):
            raise InvalidValueError(
                f"{OFFSET_SYNCS_LOCATION} must be 'source' or 'target', got {self.offset_syncs_location!r}"
            )
        if self.kafka_reader not in ("offsetlake", "builtin"):
            raise InvalidValueError(f"{KAFKA_READER} must be 'offsetlake' or 'builtin'")
        if self.bronze_flows not in BRONZE_FLOW_MODES:
            raise InvalidValueError(f"{BRONZE_FLOWS} must be one of {', '.join(BRONZE_FLOW_MODES)}")
        if self.gold_incremental not in GOLD_INCREMENTAL_MODES:
            raise InvalidValueError(f"{GOLD_INCREMENTAL} must be one of {', '.join(GOLD_INCREMENTAL_MODES)}")
        if self.table_clustering not in TABLE_CLUSTERING_MODES:
            raise InvalidValueError(f"{TABLE_CLUSTERING} must be one of {', '.join(TABLE_CLUSTERING_MODES)}")
        if self.mappings_format not in SUPPORTED_MAPPING_FORMATS:
            raise InvalidValueError(
                f"{MAPPINGS_FORMAT} {self.mappings_format!r} has no Spark decoder; "
                f"supported: {', '.join(SUPPORTED_MAPPING_FORMATS)}"
            )
        try:
            complete = parse_method_precedence(",".join(self.method_precedence))
        except InvalidValueError as error:
            raise InvalidValueError(f"{METHOD_PRECEDENCE} {error}") from None
        object.__setattr__(self, "method_precedence", complete)
        if self.cluster_timeout_ms < 1:
            raise InvalidValueError(f"{CLUSTER_TIMEOUT_MS} must be a positive number of milliseconds")
        self._check_k2k_bindings(aliases)
        for key, pattern in (
            (GROUPS_INCLUDE, self.groups_include),
            (GROUPS_EXCLUDE, self.groups_exclude),
            (CONNECT_OFFSETS_TOPICS, self.connect_offsets_topics),
            (TOPICS_INCLUDE, self.topics_include),
            (TOPICS_EXCLUDE, self.topics_exclude),
        ):
            try:
                re.compile(pattern)
            except re.error as error:
                raise InvalidValueError(f"{key} is not a valid regex: {error}") from None

    def _check_k2k_bindings(self, aliases: list[str]) -> None:
        for key, bound in (
            (MAPPINGS_TOPICS, [entry.alias for entry in self.mappings_topics]),
            (K2K_TRACING_TOPICS, [route.alias for route in self.k2k_tracing_routes]),
        ):
            # A view naming no source (the apply's, from --set alone) has no alias to bind against.
            unknown = sorted(set(bound) - set(aliases)) if aliases else []
            if unknown:
                raise InvalidValueError(
                    f"{key} names source aliases not in {SOURCES}: {', '.join(unknown)} "
                    f"(known: {', '.join(aliases)})"
                )
        topics = [entry.topic for entry in self.mappings_topics]
        twice = sorted({topic for topic in topics if topics.count(topic) > 1})
        if twice:
            raise InvalidValueError(
                f"{MAPPINGS_TOPICS} binds {', '.join(twice)} to more than one source alias: a mapping "
                "record names no cluster, so each mapping topic belongs to exactly one source"
            )
        routed = [route.alias for route in self.k2k_tracing_routes]
        if len(set(routed)) != len(routed):
            raise InvalidValueError(f"{K2K_TRACING_TOPICS} names a source alias twice")

    @property
    def mapping_topic_sources(self) -> dict[str, str]:
        """Mapping topic -> the source alias its mappings describe."""
        return {entry.topic: entry.alias for entry in self.mappings_topics}

    @property
    def bronze_table_properties(self) -> dict[str, str]:
        """Bronze is the only history beyond Kafka's retention: where no full refresh is ever
        needed (per-source flows) the pipeline refuses one (``pipelines.reset.allowed``)."""
        return {"pipelines.reset.allowed": "false"} if self.bronze_flows == "per_source" else {}

    @property
    def apply_cluster_by(self) -> list[str] | None:
        """``cluster_by`` for the tables the apply reads: its keys, or None (not clustered)."""
        return list(APPLY_CLUSTER_KEY) if self.table_clustering == "liquid" else None

    @property
    def policy(self) -> ReplicationPolicy:
        return ReplicationPolicy(kind=self.replication_policy, separator=self.separator)  # type: ignore[arg-type]

    def source(self, alias: str) -> ClusterEndpoint:
        for source in self.sources:
            if source.alias == alias:
                return source
        raise KeyError(alias)

    @classmethod
    def from_conf(cls, get: Callable[[str], str | None], *, clusters: bool = True) -> PipelineSettings:
        """Parse from a key lookup (``spark.conf.get(key, None)``, ``dict.get``); unset keys -> defaults.

        ``clusters=False`` reads a configuration that may name no cluster: the apply's view, which
        reads gold and names topics by these settings, and never reaches a cluster through them."""
        values = {}
        for spec in fields(cls):
            setting: Setting = spec.metadata[SETTING]
            text = setting.blank.read(get(setting.key))
            if text is not None:
                values[spec.name] = setting.parse(text)
            elif spec.default is MISSING:  # the two cluster ends: refused below when required
                values[spec.name] = setting.parse("")
        if clusters and not values["target_bootstrap_servers"]:
            raise InvalidValueError(f"{TARGET_BOOTSTRAP} is required")
        if clusters and not values["sources"]:
            raise InvalidValueError(f"{SOURCES} needs at least one alias=bootstrap entry")
        return cls(**values)

    @classmethod
    def from_mapping(cls, conf: Mapping[str, str], *, clusters: bool = True) -> PipelineSettings:
        return cls.from_conf(conf.get, clusters=clusters)

    def to_conf(self) -> dict[str, str]:
        """The configuration entries that reproduce these settings (for a pipeline spec)."""
        return {
            spec.metadata[SETTING].key: spec.metadata[SETTING].text(getattr(self, spec.name))
            for spec in fields(self)
        }


ALL_KEYS: Final[tuple[str, ...]] = tuple(spec.metadata[SETTING].key for spec in fields(PipelineSettings))
"""Every configuration key, in declaration order (``--set`` checks against it)."""


def assign(conf: Mapping[str, str], assignments: Iterable[str]) -> dict[str, str]:
    """``conf`` with each ``offsetlake.KEY=VALUE`` (``--set``) applied over it, in order. An unknown
    key is refused, with the nearest known one: a mistyped key must never leave a default in place."""
    assigned = dict(conf)
    for assignment in assignments:
        key, sep, value = assignment.partition("=")
        if not sep or not key.startswith("offsetlake."):
            raise InvalidValueError(f"--set wants offsetlake.KEY=VALUE, got {assignment!r}")
        if key not in ALL_KEYS:
            nearest = difflib.get_close_matches(key, ALL_KEYS, n=1)
            hint = f"; did you mean {nearest[0]}?" if nearest else f"; known keys: {', '.join(ALL_KEYS)}"
            raise InvalidValueError(f"--set: unknown setting {key!r}{hint}")
        assigned[key] = value
    return assigned


def settings_of(
    conf: Mapping[str, str], assignments: Iterable[str] = (), *, clusters: bool = True
) -> PipelineSettings:
    """The one reading of a command's settings: the ``--set`` pairs over ``conf``, validated once
    (``clusters``: as :meth:`PipelineSettings.from_conf`)."""
    return PipelineSettings.from_mapping(assign(conf, assignments), clusters=clusters)
