"""A MirrorMaker 2 replication simulator for demos, tests and benchmarks, against real brokers.

:class:`MirrorSimulator` replicates source topics to the target and writes offset syncs and
checkpoints exactly as MM2 would, optionally also K2K mappings and record-tracing headers;
:class:`GroundTruth` records where every record landed so a resumed target consumer can be judged;
:mod:`.target_consumers` runs real consumers on the target.
"""

from __future__ import annotations

from offsetlake_dev.simulate.ground_truth import GroundTruth, ReplicatedRecord, ResumeAssessment, record_id
from offsetlake_dev.simulate.mirror import (
    DEFAULT_MAPPING_TOPIC,
    FILTER_HEADER,
    TRACING_HEADERS,
    MirrorSettings,
    MirrorSimulator,
    ReplicationReport,
    SimulationError,
)

__all__ = [
    "DEFAULT_MAPPING_TOPIC",
    "FILTER_HEADER",
    "TRACING_HEADERS",
    "GroundTruth",
    "MirrorSettings",
    "MirrorSimulator",
    "ReplicatedRecord",
    "ReplicationReport",
    "ResumeAssessment",
    "SimulationError",
    "record_id",
]
