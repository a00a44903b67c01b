"""The Python streaming data source API across the PySpark versions offsetlake runs on.

PySpark 4.2 gave Python streaming sources admission control (``pyspark.sql.streaming.datasource``:
``ReadLimit``, ``SupportsTriggerAvailableNow``, ``latestOffset(start, limit)``). Databricks runs
Spark 4.0 (pipelines' CURRENT channel: Databricks Runtime 17.3 LTS; serverless environment 4:
Databricks Connect 17.2), whose runner calls ``latestOffset()`` without arguments, never asks
for a read limit, and wraps a source itself for Trigger.AvailableNow. The readers therefore
declare ``latestOffset(start=None, limit=None)``: 4.2 sees parameters and passes both, 4.0 passes
neither, and ``start is None`` is how a reader knows it was not told where its stream stands.
"""

from __future__ import annotations

from dataclasses import dataclass

try:
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadLimit,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )

    ADMISSION_CONTROL = True
except ImportError:  # PySpark before 4.2
    ADMISSION_CONTROL = False

    class ReadLimit:  # type: ignore[no-redef]
        """Stands in for 4.2's class; Spark 4.0 never passes one."""

    @dataclass
    class ReadAllAvailable(ReadLimit):  # type: ignore[no-redef]
        pass

    @dataclass
    class ReadMaxRows(ReadLimit):  # type: ignore[no-redef]
        max_rows: int

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        """Spark 4.0 has no such interface for Python sources and never calls this."""

        def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802 (Spark API)
            raise NotImplementedError


__all__ = ["ADMISSION_CONTROL", "ReadAllAvailable", "ReadLimit", "ReadMaxRows", "SupportsTriggerAvailableNow"]
