"""MM2 topic naming: Kafka's ``DefaultReplicationPolicy`` and ``IdentityReplicationPolicy``.

Offsets are only useful under the right topic name: checkpoints carry the downstream name,
offset syncs the upstream one, and the internal topics are named after cluster aliases. This
mirrors the policies in apache/kafka ``connect/mirror-client`` so the pipeline computes the same
names MM2 did, including the custom separator for internal topics (KIP-690) and its opt-out
(``replication.policy.internal.topic.separator.enabled=false``, KAFKA-15102).

Not mirrored: ``IdentityReplicationPolicy``'s optional ``source.cluster.alias`` setting (without
it, as by default, identity topics have no known source) and a custom heartbeats topic name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

PolicyKind = Literal["default", "identity"]
POLICY_KINDS: Final[tuple[str, ...]] = ("default", "identity")
HEARTBEATS_TOPIC: Final = "heartbeats"
"""``ReplicationPolicy.DEFAULT_HEARTBEATS_TOPIC_NAME``; the separator never applies to it."""
_LEGACY_INTERNAL_SEPARATOR: Final = "."
DEFAULT_TOPICS_EXCLUDE: Final = r".*[\-\.]internal|.*\.replica|__.*"
"""MM2's ``topics.exclude`` default (``DefaultTopicFilter``) as one regex: topics MM2 never replicates."""


def _require_non_empty(value: str, what: str) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string, got {value!r}")


@dataclass(frozen=True)
class ReplicationPolicy:
    """How MM2 names remote and internal topics (MM2's ``replication.policy.*`` settings)."""

    kind: PolicyKind = "default"
    separator: str = "."
    internal_separator_enabled: bool = True

    def __post_init__(self) -> None:
        if self.kind not in POLICY_KINDS:
            raise ValueError(
                f"unknown replication policy {self.kind!r}; expected one of {', '.join(POLICY_KINDS)}"
            )
        _require_non_empty(self.separator, "replication policy separator")

    @property
    def internal_separator(self) -> str:
        return self.separator if self.internal_separator_enabled else _LEGACY_INTERNAL_SEPARATOR

    def _applies_default_naming(self, topic: str) -> bool:
        # IdentityReplicationPolicy defers to the default policy for heartbeats topics only.
        return self.kind == "default" or topic.endswith(HEARTBEATS_TOPIC)

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        """The name ``topic`` from ``source_alias`` gets on the target, e.g. ``us-east.orders``."""
        _require_non_empty(source_alias, "source cluster alias")
        _require_non_empty(topic, "topic")
        if not self._applies_default_naming(topic):
            return topic
        return f"{source_alias}{self.separator}{topic}"

    def topic_source(self, topic: str) -> str | None:
        """The alias a remote topic came from, or None when the name does not say (not remote)."""
        _require_non_empty(topic, "topic")
        if not self._applies_default_naming(topic):
            return None
        # Java's String.split(Pattern.quote(separator)): trailing empty parts are dropped.
        parts = topic.split(self.separator)
        while parts and not parts[-1]:
            parts.pop()
        return parts[0] if len(parts) >= 2 else None

    def upstream_topic(self, topic: str) -> str | None:
        """The name one hop upstream (may itself be remote); None when ``topic`` is not remote.

        Under the identity policy every topic may be remote, so the name is returned unchanged.
        """
        _require_non_empty(topic, "topic")
        if not self._applies_default_naming(topic):
            return topic
        source = self.topic_source(topic)
        if source is None:
            return None
        return topic[len(source) + len(self.separator) :]

    def original_topic(self, topic: str) -> str:
        """The name on the cluster where the topic was first written, after any number of hops."""
        current = topic
        while True:
            upstream = self.upstream_topic(current)
            if upstream is None or upstream == current:
                return current
            current = upstream

    def downstream_topic(self, source_alias: str, target_alias: str, upstream_topic: str) -> str:
        """MM2's ``MirrorCheckpointTask.renameTopicPartition``: the target-cluster name of ``upstream_topic``.

        Failback: a topic that came from the target cluster in the first place returns to its
        original name (``us-west.orders`` -> ``orders`` when the target is ``us-west``).
        """
        _require_non_empty(source_alias, "source cluster alias")
        _require_non_empty(target_alias, "target cluster alias")
        if self.topic_source(upstream_topic) == target_alias:
            return self.original_topic(upstream_topic)
        return self.format_remote_topic(source_alias, upstream_topic)

    def checkpoints_topic(self, source_alias: str) -> str:
        """``<source><sep>checkpoints<sep>internal``, on the target cluster."""
        _require_non_empty(source_alias, "source cluster alias")
        sep = self.internal_separator
        return f"{source_alias}{sep}checkpoints{sep}internal"

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        """``mm2-offset-syncs<sep><alias><sep>internal``: named after the *other* cluster of the flow."""
        _require_non_empty(cluster_alias, "cluster alias")
        sep = self.internal_separator
        return f"mm2-offset-syncs{sep}{cluster_alias}{sep}internal"

    def checkpoints_topic_pattern(self) -> str:
        """Regex (Python ``re`` and Java ``Pattern``) matching checkpoints topics; group 1 is the alias."""
        sep = re.escape(self.internal_separator)
        return f"^(.+){sep}checkpoints{sep}internal$"

    def offset_syncs_topic_pattern(self) -> str:
        """Regex (Python ``re`` and Java ``Pattern``) matching offset-syncs topics; group 1 is the alias."""
        sep = re.escape(self.internal_separator)
        return f"^mm2-offset-syncs{sep}(.+){sep}internal$"
