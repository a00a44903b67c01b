"""murmur2 and the Java producer's partition choice, against apache/kafka's own test vectors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsetlake.kafka.java_partitioner import java_partition, murmur2


# clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java, testMurmur2
@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"21", -973932308),
        (b"foobar", -790332482),
        (b"a-little-bit-long-string", -985981536),
        (b"a-little-bit-longer-string", -1486304829),
        (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        (b"abc", 479470107),
    ],
)
def test_murmur2_equals_java(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


def test_partition_is_to_positive_modulo() -> None:
    # toPositive(-973932308) = -973932308 & 0x7fffffff = 1173551340; % 25 = 15
    assert java_partition(b"21", 25) == 1173551340 % 25 == 15
    assert java_partition(b"abc", 7) == 479470107 % 7


@given(st.binary(max_size=64), st.integers(1, 100))
def test_partition_is_in_range(key: bytes, partitions: int) -> None:
    assert 0 <= java_partition(key, partitions) < partitions
    assert -(2**31) <= murmur2(key) < 2**31
