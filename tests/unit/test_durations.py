"""One duration language: what --max-age accepts is what every report prints."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsetlake.durations import format_duration, parse_duration
from offsetlake.errors import InvalidValueError


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (42, "42s"), (900, "15m"), (3600, "1h"), (93784, "1d2h3m4s"), (43200, "12h"), (-5, "0s")],
)
def test_format(seconds: int, text: str) -> None:
    assert format_duration(timedelta(seconds=seconds)) == text


@given(st.integers(min_value=0, max_value=10**8))
def test_every_printed_part_parses_back_and_the_parts_add_up(seconds: int) -> None:
    parts = re.findall(r"\d+[dhms]", format_duration(timedelta(seconds=seconds)))
    assert sum((parse_duration(part) for part in parts), timedelta()) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "15", "m", "1.5h", "-1m", "1w", "1h30m"])
def test_parse_refuses_what_is_not_one_number_and_one_unit(text: str) -> None:
    with pytest.raises(InvalidValueError, match="expected a duration"):
        parse_duration(text)
