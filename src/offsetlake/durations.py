"""Durations as operators write them (``15m``, ``2h``, ``1d``, ``90s``): one parser, one formatter.

What ``--max-age`` accepts is what every report prints (ages, the keep-alive interval), so a number
read in a report can be pasted back into a flag.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Final

from offsetlake.errors import InvalidValueError

UNIT_SECONDS: Final = {"d": 86400, "h": 3600, "m": 60, "s": 1}
_DURATION = re.compile(r"^(?P<amount>\d+)(?P<unit>[smhd])$")


def parse_duration(text: str) -> timedelta:
    """``15m``, ``2h``, ``1d``, ``90s``: one whole number and one unit."""
    match = _DURATION.match(text.strip())
    if match is None:
        raise InvalidValueError(f"expected a duration like 15m, 2h, 1d, got {text!r}")
    return timedelta(seconds=int(match["amount"]) * UNIT_SECONDS[match["unit"]])


def format_duration(duration: timedelta) -> str:
    """``1d2h``, ``15m``, ``42s``, ``0s``: whole units, largest first (negative counts as zero)."""
    remaining = max(0, int(duration.total_seconds()))
    parts = []
    for unit, size in UNIT_SECONDS.items():
        if remaining >= size:
            parts.append(f"{remaining // size}{unit}")
            remaining %= size
    return "".join(parts) or "0s"
