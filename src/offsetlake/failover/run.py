"""``run_failover``: the one call an operator makes during an outage, typed.

Every cluster is asked for its metadata first, all at once and bounded (``probe_timeout_s``), so
the report says what is reachable *now*. A refresh runs only when it can add something: with every
cluster answering, an update of the datasets ``latest_offsets`` is computed from
(contract/refresh_selection.py) adds the offset-sync and mapping translations of the newest group
snapshots. With a source down it could add only the target's newest checkpoints, and the apply
reads those itself (``ApplyRequest.checkpoint_tail``) without a JVM, so no refresh is started:
measured, that is most of a failover's time, and the part a busy machine breaks. Then ``apply``
with every guard it has, verified by reading the offsets back. It asks nothing interactively.

A failover goes first: a local sync loop on the same home (``pipeline run --every``) is asked to
stand aside before anything reads the home (local/locks.py), and the failover waits a bounded
time for it (an update in progress is stopped, gold put back); the loop resumes once it is done.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from offsetlake.apply.phases import PhaseClock, PhaseTimes
from offsetlake.apply.run import ApplyRequest, ApplyResult, run_apply
from offsetlake.apply.store import GoldStore
from offsetlake.contract.refresh_selection import failover_refresh
from offsetlake.contract.settings import PipelineSettings
from offsetlake.kafka.admin import ClusterProbe, probe_cluster
from offsetlake.kafka.secrets import SecretsProvider
from offsetlake.local.home import LocalHome
from offsetlake.local.locks import DEFAULT_STAND_ASIDE_WAIT_S, stand_aside_request
from offsetlake.local.pipeline_update import PipelineRunResult, existing_tables, run_pipeline

DEFAULT_REFRESH_TIMEOUT_S = 300.0
DEFAULT_PROBE_TIMEOUT_S = 10.0


class RefreshMode(StrEnum):
    """``auto``: refresh when every cluster answered the probe (otherwise a refresh could add only
    the checkpoint tail the apply reads itself); ``always``: refresh anyway; ``never``: gold as it is."""

    AUTO = "auto"
    ALWAYS = "always"
    NEVER = "never"


@dataclass(frozen=True)
class ClusterToProbe:
    """One cluster to probe: its role in the report and its client settings (never printed)."""

    name: str
    role: str
    config: Mapping[str, str] = field(repr=False)


@dataclass(frozen=True)
class ClusterCheck:
    name: str
    role: str
    probe: ClusterProbe


@dataclass(frozen=True)
class FailoverRequest:
    apply: ApplyRequest
    settings: PipelineSettings | None
    """The clusters to refresh from; None only with ``RefreshMode.NEVER`` (no sources needed)."""
    home: LocalHome
    """The one home of the failover: the loop asked to stand aside, the refresh and the apply's gold."""
    refresh: RefreshMode = RefreshMode.AUTO
    clusters: tuple[ClusterToProbe, ...] = ()
    refresh_timeout_s: float = DEFAULT_REFRESH_TIMEOUT_S
    probe_timeout_s: float = DEFAULT_PROBE_TIMEOUT_S
    kafka_properties: Path | None = None
    stand_aside_timeout_s: float = DEFAULT_STAND_ASIDE_WAIT_S
    """How long a local sync loop on the home has to stand aside (local/locks.py)."""


@dataclass(frozen=True)
class FailoverResult:
    checks: tuple[ClusterCheck, ...]
    refresh: PipelineRunResult | None
    refresh_skipped: str | None
    """Why no refresh ran (None when one did)."""
    apply: ApplyResult
    loop_stood_aside: str | None = None
    """``the local sync loop (process N) stood aside in 2.1s``, when one ran on the home."""
    phases: PhaseTimes = field(default_factory=PhaseTimes)
    """Where the failover's time went: probe, refresh, then the apply's phases."""

    @property
    def exit_code(self) -> int:
        """The apply's status: 0 everything selected is in place, 1 failed or nothing could be
        applied, 3 refused because groups are active on the target."""
        return int(self.apply.status)


def run_failover(
    request: FailoverRequest,
    *,
    gold_store: Callable[[], GoldStore],
    echo: Callable[[str], None] | None = None,
    secrets: SecretsProvider | None = None,
) -> FailoverResult:
    """Probe, refresh if it can add anything, then apply on the store ``gold_store`` opens (on
    ``request.home``; opened after the refresh, as the refresh's Spark must have the home alone)."""
    clock = PhaseClock()
    with stand_aside_request(request.home.root) as aside:
        with clock.phase("probe"):
            checks = probe_all(request.clusters, timeout_s=request.probe_timeout_s)  # while the loop stops
        waited = aside.wait(request.stand_aside_timeout_s)
        skipped = _why_no_refresh(request, checks)
        refresh = None
        if skipped is None and request.settings is not None:
            with clock.phase("refresh"):
                # A selection only on a home that has every table (contract/refresh_selection.py).
                scope = failover_refresh(request.settings, existing_tables(request.home.root))
                refresh = run_pipeline(
                    request.settings,
                    request.home.root,
                    refresh=scope.selection,
                    echo=echo,
                    timeout_s=request.refresh_timeout_s,
                    kafka_properties=request.kafka_properties,
                )
        with clock.phase("gold"):  # opening the store is part of reading gold
            store = gold_store()
        with contextlib.closing(store):
            applied = run_apply(request.apply, store=store, secrets=secrets)
    return FailoverResult(
        checks=checks,
        refresh=refresh,
        refresh_skipped=skipped,
        apply=applied,
        phases=clock.times(expected=("probe", "refresh")) + applied.phases,
        loop_stood_aside=(
            f"the local sync loop (process {aside.loop}) stood aside in {waited:.1f}s"
            if aside.loop is not None
            else None
        ),
    )


def probe_all(clusters: tuple[ClusterToProbe, ...], *, timeout_s: float) -> tuple[ClusterCheck, ...]:
    """Every cluster asked at once: the probes cost one timeout in all, not one each."""
    if not clusters:
        return ()
    with ThreadPoolExecutor(max_workers=len(clusters), thread_name_prefix="probe") as pool:
        probes = list(pool.map(lambda cluster: probe_cluster(cluster.config, timeout_s=timeout_s), clusters))
    return tuple(
        ClusterCheck(cluster.name, cluster.role, probe)
        for cluster, probe in zip(clusters, probes, strict=True)
    )


def _why_no_refresh(request: FailoverRequest, checks: tuple[ClusterCheck, ...]) -> str | None:
    if request.settings is None or request.refresh is RefreshMode.NEVER:
        return "--refresh never"
    if request.refresh is RefreshMode.ALWAYS:
        return None
    down = [f"{check.role} {check.name}" for check in checks if not check.probe.reachable]
    if down:
        return f"{', '.join(down)} did not answer: the target's newest checkpoints are read directly"
    return None
