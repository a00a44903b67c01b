"""A pipeline update's progress while it runs: flows done of those planned, by layer, and the time.

Why: an update takes a minute or more locally, and its event lines (``Flow x is RUNNING.``) do not
say how far it is. ``UpdateProgress`` reads the same events ``update_log`` judges and, each time a flow
completes or fails, says ``progress: 7/21 flows done (bronze 5/5, silver 2/8, gold 0/8), 41 s``.
The flows counted are those the run QUEUED or PLANNED, or any other it reports (an EXCLUDED flow
is not run); the time is counted from the run's first event. The events carry no row counts, and
our data sources log none, so records read are not reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Final

from offsetlake.contract.tables import ALL_TABLES, TableSpec
from offsetlake.local.update_log import parse_flow_event

PROGRESS_PREFIX: Final = "progress: "
_ENDED: Final = frozenset({"COMPLETED", "FAILED"})
_LAYERS: Final = ("bronze", "silver", "gold")


def _depth(spec: TableSpec) -> int:
    return 1 + max((_depth(table) for table in spec.inputs), default=-1)


def _layer(spec: TableSpec) -> str:
    """bronze reads the clusters (no pipeline input); gold is every materialized view and what is
    built beyond silver (translation_observations); silver is the decoding between them."""
    depth = _depth(spec)
    if depth == 0:
        return "bronze"
    return "gold" if spec.kind == "materialized_view" or depth >= 3 else "silver"


FLOW_LAYERS: Final[Mapping[str, str]] = {spec.name: _layer(spec) for spec in ALL_TABLES}


def is_progress(line: str) -> bool:
    """A line ``UpdateProgress`` made, for echo filters that pass only some lines."""
    return line.startswith(PROGRESS_PREFIX)


class UpdateProgress:
    """Fed every line of a run; ``feed`` returns a progress line when a flow has just ended."""

    def __init__(self, layers: Mapping[str, str] = FLOW_LAYERS) -> None:
        self._layers = layers
        self._states: dict[str, str] = {}
        self._started_at: datetime | None = None

    def feed(self, line: str) -> str | None:
        event = parse_flow_event(line)
        if event is None:
            return None
        at, flow, state = event
        if self._started_at is None:
            self._started_at = at
        if flow is None or state == "EXCLUDED":
            return None
        previous = self._states.get(flow)
        self._states[flow] = state
        if state not in _ENDED or previous == state:
            return None  # spark-pipelines may print an event twice
        return self._line(at)

    def _line(self, at: datetime) -> str:
        done = {flow for flow, state in self._states.items() if state == "COMPLETED"}
        failed = sum(1 for state in self._states.values() if state == "FAILED")
        by_layer = []
        for layer in _LAYERS:
            flows = [flow for flow in self._states if self._layers.get(_table(flow)) == layer]
            if flows:
                by_layer.append(f"{layer} {len(done.intersection(flows))}/{len(flows)}")
        started = self._started_at or at
        text = f"{PROGRESS_PREFIX}{len(done)}/{len(self._states)} flows done"
        if failed:
            text += f", {failed} failed"
        if by_layer:
            text += f" ({', '.join(by_layer)})"
        return f"{text}, {(at - started).total_seconds():.0f} s"


def _table(flow: str) -> str:
    """``spark_catalog.offsetlake.bronze_checkpoints`` -> ``bronze_checkpoints``."""
    return flow.rsplit(".", 1)[-1]
