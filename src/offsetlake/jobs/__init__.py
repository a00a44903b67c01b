"""Job-level entry points: the failover, and the Spark session a job task uses."""
