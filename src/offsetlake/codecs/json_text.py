"""Strict JSON parsing shared by the JSON-based codecs (Connect offsets, K2K mappings).

Strict means what Kafka's Jackson would not produce is an error, not a value: NaN and Infinity
are rejected, and every failure is a CodecError naming the record part.
"""

from __future__ import annotations

import json
from typing import Any

from offsetlake.codecs import CodecError


def parse_json(data: bytes, part: str) -> Any:
    """The JSON document in ``data`` (UTF-8); CodecError naming ``part`` when it is not one."""
    try:
        return json.loads(bytes(data).decode("utf-8"), parse_constant=_reject_constant)
    except UnicodeDecodeError as error:
        raise CodecError(f"{part}: invalid UTF-8 at byte {error.start}") from None
    except ValueError as error:
        raise CodecError(f"{part}: malformed JSON: {error}") from None
    except RecursionError:
        raise CodecError(f"{part}: malformed JSON: nested too deeply") from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")
