"""The partition Kafka's Java producer picks for a keyed record: murmur2, then modulo.

Kafka Connect writes its offsets with a plain Java ``KafkaProducer`` and no partitioner setting
(``KafkaOffsetBackingStore``), so a key's partition is ``BuiltInPartitioner.partitionForKey``:
``Utils.toPositive(Utils.murmur2(keyBytes)) % numPartitions``. librdkafka's default partitioner
(``consistent_random``, CRC32) picks differently, so a tombstone for a Connect offset must name
its partition explicitly. Checked against apache/kafka ``clients/.../common/utils/Utils.java``
(``murmur2``, ``toPositive``) and ``UtilsTest.testMurmur2``'s vectors.
"""

from __future__ import annotations

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Java's ``Utils.murmur2``: a signed 32-bit hash."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = (h * _M) & _MASK
        h ^= k
    tail = length % 4
    if tail == 3:
        h ^= data[whole + 2] << 16
    if tail >= 2:
        h ^= data[whole + 1] << 8
    if tail >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def java_partition(key: bytes, partitions: int) -> int:
    """``toPositive(murmur2(key)) % partitions``: where the Java producer (and Connect) puts ``key``."""
    if partitions < 1:
        raise ValueError(f"partitions must be >= 1, got {partitions}")
    return (murmur2(key) & 0x7FFFFFFF) % partitions
