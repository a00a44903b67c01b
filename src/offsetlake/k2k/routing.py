"""Where K2K writes a source topic on the target (its records routing), as a name template.

K2K's ``sink.topic`` routes each source topic to a target topic: the same name (``source``), a
prefix and/or suffix, or one static topic for all (Lenses K2K docs, "Records routing"). A template
says the same thing in one string: ``{topic}`` stands for the source topic's name, so
``{topic}``, ``eu.{topic}.copy`` and ``all-orders`` are the three strategies. The partition is
assumed preserved (``sink.partition: source``, the strategy K2K documents for keeping each
partition's order); with producer-defined partitioning one source partition spreads over several
target partitions and no single committed position can be translated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

TOPIC_PLACEHOLDER: Final = "{topic}"


@dataclass(frozen=True)
class TracingRoute:
    """One source cluster's K2K routing: the target topic each of its source topics is written to."""

    alias: str
    template: str

    def target_topic(self, source_topic: str) -> str:
        return self.template.replace(TOPIC_PLACEHOLDER, source_topic)

    @property
    def parts(self) -> list[str]:
        """The literal text around each placeholder (one part: a static topic name)."""
        return self.template.split(TOPIC_PLACEHOLDER)


EXAMPLE_TOPIC: Final = "orders"


def shared_target(first: TracingRoute, second: TracingRoute) -> str | None:
    """A target topic both routes can write to (a topic of ``first``'s source and one of
    ``second``'s mapping to it), or None when no pair of topic names can meet.

    K2K's tracing headers name the source topic, partition and offset, never the cluster, so records
    two sources wrote into one target topic cannot be told apart (east's ``orders`` at 10 and
    west's at 30 look alike). Templates with a placeholder meet unless their literal prefixes differ
    (neither starts the other) or their suffixes do; a static name meets a template it fits."""
    a, b = first.parts, second.parts
    if len(a) == 1 and len(b) == 1:
        return first.template if first.template == second.template else None
    if len(a) == 1 or len(b) == 1:
        static, template = (first.template, b) if len(a) == 1 else (second.template, a)
        prefix, suffix = template[0], template[-1]
        fits = static.startswith(prefix) and static.endswith(suffix)
        return static if fits and len(static) > len(prefix) + len(suffix) else None
    prefixes, suffixes = sorted((a[0], b[0]), key=len), sorted((a[-1], b[-1]), key=len)
    if not prefixes[1].startswith(prefixes[0]) or not suffixes[1].endswith(suffixes[0]):
        return None
    return prefixes[1] + EXAMPLE_TOPIC + suffixes[1]
