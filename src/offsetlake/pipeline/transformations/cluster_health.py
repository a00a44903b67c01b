"""cluster_health: one reachability check of the target and of each source cluster per update
(see offsetlake.pipeline.landing)."""

from __future__ import annotations

from pyspark import pipelines as dp
from pyspark.sql import DataFrame

from offsetlake.contract.tables import CLUSTER_HEALTH
from offsetlake.pipeline.kafka_readers import cluster_health_stream
from offsetlake.pipeline.landing import bronze_session, bronze_table, union

spark, settings = bronze_session()


@bronze_table(dp, CLUSTER_HEALTH, settings)
def cluster_health() -> DataFrame:
    target_alias = settings.target_alias or "target"
    checks = [
        cluster_health_stream(spark, settings, target_alias, "target", settings.target_bootstrap_servers)
    ]
    checks += [
        cluster_health_stream(spark, settings, source.alias, "source", source.bootstrap_servers)
        for source in settings.sources
    ]
    return union(checks)
