"""k2k_tracing_lookups (when ``offsetlake.k2k.tracing.topics`` routes a source): each snapshot
searched on the target through K2K's tracing headers, on the driver (the data source's planning);
a live read like the snapshots, so it is bronze's to keep (see offsetlake.pipeline.landing)."""

from __future__ import annotations

from pyspark import pipelines as dp

from offsetlake.contract.tables import K2K_TRACING_LOOKUPS
from offsetlake.pipeline.kafka_readers import k2k_tracing_stream
from offsetlake.pipeline.landing import bronze_session, per_source_cluster

spark, settings = bronze_session()

if settings.k2k_tracing_routes:
    _routes = {route.alias: route for route in settings.k2k_tracing_routes}
    per_source_cluster(
        dp,
        K2K_TRACING_LOOKUPS,
        settings,
        lambda source: k2k_tracing_stream(spark, settings, _routes[source.alias]),
        tuple(source for source in settings.sources if source.alias in _routes),
    )
