"""What a command handler may use besides its parsed flags: where to print, its local home, and
injected services."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from functools import cached_property
from typing import TextIO

from offsetlake.kafka.secrets import SecretsProvider
from offsetlake.local.home import LocalHome


@dataclass(frozen=True)
class Context:
    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)
    secrets: SecretsProvider | None = None
    """Replaces the Databricks secret scope (tests)."""
    owns_process: bool = False
    """The command is the process (``main``): it configures logging, and after SIGINT/SIGTERM it
    ends every process it started. False when a test runs commands inside its own process."""

    @cached_property
    def home(self) -> LocalHome:
        """The command's local home: resolved at its first use (a command that needs none creates
        none), then the same for the whole command, passed down to everything that uses it."""
        return LocalHome.resolve()
