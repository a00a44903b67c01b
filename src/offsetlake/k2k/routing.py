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
