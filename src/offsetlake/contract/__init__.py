"""The contract between the pipeline and its readers, below every engine: no Spark, no Kafka client.

What the pipeline writes and the apply reads, named once: every table's spec (``tables``: name,
columns, lineage, its Arrow and Spark schemas), the pipeline's settings (``settings``), the datasets
a failover refreshes (``refresh_selection``), and the apply's view of gold (``gold``: GoldOffset,
LastApplied, ClusterHealth, GroupDataLoss, the table naming and time helpers, GoldTableError).
The Spark pipeline, the data sources, both gold stores, the features and the bundle's Python
resources import it; it imports only the pure models (errors, mirror, k2k).
"""
