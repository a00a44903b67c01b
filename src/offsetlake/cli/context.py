"""What a command handler may use besides its parsed flags: where to print, and injected services."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TextIO

from offsetlake.kafka.secrets import SecretsProvider


@dataclass(frozen=True)
class Context:
    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)
    secrets: SecretsProvider | None = None
    """Replaces the Databricks secret scope (tests)."""
    owns_process: bool = False
    """The command is the process (``main``): it configures logging, and after SIGINT/SIGTERM it
    ends every process it started. False when a test runs commands inside its own process."""
