"""Where offsetlake keeps its local state (clusters, warehouse, pipeline storage).

Everything local lives under one directory so `make clean` and tests can isolate it:
``$OFFSETLAKE_HOME``, or ``.offsetlake`` in the current directory.
"""

from __future__ import annotations

import os
from pathlib import Path

HOME_ENV = "OFFSETLAKE_HOME"


def local_home() -> Path:
    """The root of all local state; created on first use."""
    home = Path(os.environ.get(HOME_ENV) or Path.cwd() / ".offsetlake").resolve()
    home.mkdir(parents=True, exist_ok=True)
    return home
