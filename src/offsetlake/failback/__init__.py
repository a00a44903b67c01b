"""Failback (`offsetlake failback`): a feature beside failover/, above apply/ and the kafka layer it
drives: every group that ran on the target during an outage, back to the source."""
