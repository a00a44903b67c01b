"""Where a command's run reads gold and keeps its audit, decided where the command runs.

The command line is every entry point, the Databricks job tasks' included, so the choice lives
here and nowhere below: ``run_apply``, ``run_failover`` and ``run_reset`` take the store or the
session they are given and never ask where they run or look for a home.

- On Databricks: the runtime's Spark session (never a local JVM there), Unity Catalog's tables.
- Elsewhere: the local home's warehouse read without a JVM (offsetlake.local.warehouse_gold), unless
  the request names a catalog, which only Spark resolves (the local session then, the home's audit
  journal folded into ``apply_audit`` first, so the Spark store reads every audited run).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from offsetlake.apply.store import GoldStore, SparkGoldStore
from offsetlake.cli.context import Context
from offsetlake.local.home import LOCAL_SCHEMA, LocalHome
from offsetlake.local.locks import check_home_free
from offsetlake.sessions import get_spark, on_databricks

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from offsetlake.apply.run import ApplyRequest


def command_home(context: Context) -> LocalHome | None:
    """The local home of this command; None on Databricks, where nothing local is used."""
    return None if on_databricks() else context.home


def gold_store_for(request: ApplyRequest, home: LocalHome | None) -> GoldStore:
    """The store one run of ``request`` reads and audits through (closing it is the caller's)."""
    from offsetlake.local.warehouse_gold import LocalGoldStore  # pyarrow: after a failover's probes start

    schema = request.schema or LOCAL_SCHEMA
    if home is None or request.catalog:
        return SparkGoldStore(spark_for_audit(home), schema, request.catalog)
    check_home_free(home)  # an update rewriting gold, or a Spark session on it: one line, who holds it
    return LocalGoldStore(home, schema)


def spark_for_audit(home: LocalHome | None) -> SparkSession:
    """A session whose audit tables hold every audited run: locally, the home's journal is folded
    in first (an explicit step: opening a session writes nothing); on Databricks every run appends
    to ``apply_audit`` itself and there is nothing to fold."""
    from offsetlake.local.audit_journal import fold_journal  # pyarrow: after a failover's probes start

    spark = get_spark(home=home)
    if home is not None:
        fold_journal(spark, home)
    return spark
