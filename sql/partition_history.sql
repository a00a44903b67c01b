-- Every translated offset one group had on one target partition, oldest first, per method.
-- Replace group, topic (the TARGET-cluster name, e.g. us-east.orders) and partition.
SELECT method, valid_from, valid_to, upstream_offset, downstream_offset, metadata
FROM offset_history
WHERE consumer_group = 'orders-consumer' AND topic = 'us-east.orders' AND `partition` = 0
ORDER BY method, valid_from
