"""offsetlake: Kafka consumer-group offset translation and failover as a lakehouse pipeline."""

__version__ = "0.1.0"
