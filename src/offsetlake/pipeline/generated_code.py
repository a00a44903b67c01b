"""Spark's generated code for the flows that read every record, where the pipeline interprets.

The local runtime runs its pipeline with expressions interpreted (``NO_CODEGEN``, written into the
spec by local/pipeline_spec.py): most flows plan a few projections over a few thousand rows, and
compiling them cost more than running them. The decode and gold's window steps read every record;
interpreted, 1,000,000 checkpoints took 31-36% longer (benchmarks/README.md, issue 36), so their
flows ask for Spark's default back. Where the pipeline generates code already (Databricks), they
ask for nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

FACTORY_MODE: Final = "spark.sql.codegen.factoryMode"
INTERPRETED: Final = {FACTORY_MODE: "NO_CODEGEN"}
"""The local pipeline's configuration: projections, predicates and orderings evaluated interpreted."""
GENERATED: Final = {FACTORY_MODE: "FALLBACK"}
"""Spark's default: generated code, interpreted only where generating fails."""


def every_record_conf(pipeline_conf: Mapping[str, str]) -> dict[str, str]:
    """The ``spark_conf`` of a flow over every record: generated code where the pipeline interprets."""
    if pipeline_conf.get(FACTORY_MODE) == INTERPRETED[FACTORY_MODE]:
        return dict(GENERATED)
    return {}
