-- What could not be decoded, by source table, kind and reason: counts, first/last occurrence and
-- one example's Kafka coordinates to fetch the raw record (its bytes are in quarantine.key/value).
SELECT source_table, kind, source_cluster, reason,
       COUNT(*) AS records,
       MIN(ingested_at) AS first_seen,
       MAX(ingested_at) AS last_seen,
       MIN_BY(CONCAT(kafka_topic, '/', kafka_partition, '@', kafka_offset), ingested_at) AS example
FROM quarantine
GROUP BY source_table, kind, source_cluster, reason
ORDER BY records DESC, source_table, reason
