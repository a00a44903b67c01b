"""Python's cyclic garbage collector, paused for a run whose heap only grows.

A failover at 46,000 group-partitions holds gold's rows, the checkpoint tail's records, the target's
state and the plan for the whole run, and makes little cyclic garbage (2,000 objects in all). The
collector still ran: it walked that heap again and again and collected almost nothing, 3.6 s of a
20 s failover with the source dead and 6.1 s of 29 s with it up (benchmarks/README.md, "Issue 50,
the fifth session"). Reference counting frees everything else as before, the Kafka clients a run
drops included (kafka/admin.py keeps their errors out of cycles for that reason).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """No automatic collection inside the block (every thread: the collector is the process's);
    afterwards the collector is as it was. Nested blocks leave it to the outermost."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
