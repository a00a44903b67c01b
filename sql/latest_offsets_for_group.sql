-- Current translated offsets of one consumer group, as the failover apply job would commit them.
-- Replace the group name. `method` says how each offset was translated; `methods_disagree` flags
-- partitions where checkpoint, offset-sync and mapping translations of the same upstream offset
-- differ; `age_seconds` is how old the newest observation behind the translation is, now.
SELECT source_cluster, topic, `partition`, downstream_offset, upstream_offset, method,
       methods_disagree,
       timestampdiff(SECOND, last_observed_at, current_timestamp()) AS age_seconds, last_observed_at
FROM latest_offsets
WHERE consumer_group = 'orders-consumer'
ORDER BY source_cluster, topic, `partition`
