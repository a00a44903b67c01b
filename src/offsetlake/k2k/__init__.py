"""The pure Lenses K2K model: routing, record-tracing headers, the search over a target partition
(no Spark, no Kafka client; what rests on K2K's documentation is in docs/k2k-reference.md)."""
