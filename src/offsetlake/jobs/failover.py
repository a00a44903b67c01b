"""``run_failover``: the one call an operator makes during an outage, typed.

A best-effort refresh bounded in time (an unreachable cluster costs at most its timeout and adds
no rows; a refresh that fails or runs out of time leaves gold as it was), then ``apply`` with every
guard it has, verified by reading the offsets back. It asks nothing interactively: it is meant
for the moment the source cluster is gone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from offsetlake.apply.job import ApplyRequest, ApplyResult, run_apply
from offsetlake.kafka.secrets import SecretsProvider
from offsetlake.local.pipeline_run import PipelineRunResult, run_pipeline
from offsetlake.pipeline.settings import PipelineSettings

DEFAULT_REFRESH_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class FailoverRequest:
    apply: ApplyRequest
    settings: PipelineSettings | None
    """The clusters to refresh from; None skips the refresh and fails over from gold as it is."""
    home: Path
    refresh_timeout_s: float = DEFAULT_REFRESH_TIMEOUT_S
    kafka_properties: Path | None = None


@dataclass(frozen=True)
class FailoverResult:
    refresh: PipelineRunResult | None
    apply: ApplyResult

    @property
    def exit_code(self) -> int:
        """The apply's status: 0 everything selected is in place, 1 failed or nothing could be
        applied, 3 refused because groups are active on the target."""
        return int(self.apply.status)


def run_failover(
    request: FailoverRequest,
    *,
    echo: Callable[[str], None] | None = None,
    secrets: SecretsProvider | None = None,
) -> FailoverResult:
    refresh = None
    if request.settings is not None:
        refresh = run_pipeline(
            request.settings,
            request.home,
            echo=echo,
            timeout_s=request.refresh_timeout_s,
            kafka_properties=request.kafka_properties,
        )
    return FailoverResult(refresh=refresh, apply=run_apply(request.apply, secrets=secrets))
