"""Run ids: one per run of a command that writes an audit table (``apply_audit``, ``mm2_reset_audit``)."""

from __future__ import annotations

import uuid
from datetime import datetime


def new_run_id(started_at: datetime) -> str:
    """``20250101T120000Z-1a2b3c4d``: the run's start (UTC), then 8 random hex digits."""
    return f"{started_at:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"
