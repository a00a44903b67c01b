"""The gold contract's choice rule as Spark expressions, for latest_offsets and --as-of reads.

offsetlake.mirror.precedence states the rule and holds its pure twin, ``choose`` (the failover's
merge uses it; tests/integration/test_precedence_parity.py holds the two equal)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from offsetlake.contract.tables import GROUP_PARTITION_KEY

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def choose_translation(current: DataFrame, precedence: Sequence[str], freshness: str) -> DataFrame:
    """One row per group-partition key from ``current`` (at most one per key and method), by the
    rule in offsetlake.mirror.precedence.

    Adds ``_precedence`` (1 = first) and ``_disagree``; ``freshness`` names the timestamp column.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as sf

    from offsetlake.pipeline.frames import add_columns

    precedence_rank = sf.array_position(sf.array(*[sf.lit(m) for m in precedence]), sf.col("method"))
    ranked = add_columns(current, {"_precedence": precedence_rank})
    per_key = Window.partitionBy(*GROUP_PARTITION_KEY)
    freshest_first = per_key.orderBy(sf.col(freshness).desc(), sf.col("_precedence"))
    freshest_upstream = sf.first("upstream_offset").over(
        freshest_first.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    )
    eligible = add_columns(
        ranked, {"_eligible": sf.col("upstream_offset").eqNullSafe(freshest_upstream)}
    ).where("_eligible")
    return add_columns(
        eligible,
        {
            "_disagree": sf.size(sf.collect_set("downstream_offset").over(per_key)) > 1,
            "_choice": sf.row_number().over(per_key.orderBy("_precedence", sf.col(freshness).desc())),
        },
    ).where(sf.col("_choice") == 1)
