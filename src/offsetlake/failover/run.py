"""``run_failover``: the one call an operator makes during an outage, typed.

Every cluster is asked for its metadata at the start, all at once and bounded
(``probe_timeout_s``), so the report says what is reachable *now*. No pipeline update runs by
default (``RefreshMode.AUTO``): with every cluster answering, the apply reads the sources itself
(``ApplyRequest.live_sources``: each selected group's commits and the offset syncs beyond what the
pipeline ingested, translated by the pipeline's rules, apply/live_read.py), which is what an
update of the datasets ``latest_offsets`` is computed from would add, at the cost of the new data
instead of a JVM's start and a streaming update per bronze table (measured: 40-160 s of a failover
whose every other phase took 2-50 s, benchmarks/README.md). With a source down only the target's
newest checkpoints can be added, and the apply reads those itself (``ApplyRequest.checkpoint_tail``).
``RefreshMode.ALWAYS`` runs the update first (the selection of contract/refresh_selection.py), so
gold holds what the failover used before it is applied. Then ``apply`` with every guard it has,
verified by reading the offsets back. It asks nothing interactively.

A dead source costs no waiting of its own: its probe answers only at ``probe_timeout_s``. Clusters
that answer do so within ``PROBE_GRACE_S``; when the probes have not decided by then, the apply
reads gold, the checkpoint tail and the target and plans beside them, and waits for their decision
before its first write (``run_apply``'s ``before_writes``). Should every cluster answer after all,
those reads are dropped and the apply runs again with the sources read now.

A failover goes first: a local sync loop on the same home (``pipeline run --every``) is asked to
stand aside before anything reads the home (local/locks.py), and the failover waits a bounded
time for it (an update in progress is stopped, gold put back); the loop resumes once it is done.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from types import TracebackType
from typing import Final, Self

from offsetlake import cyclic_gc
from offsetlake.apply.live_read import LiveSource, LiveSources
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
PROBE_GRACE_S: Final = 1.0
"""How long a failover waits for its probes to decide before the apply reads and plans beside
them: a cluster that answers does so in a fraction of it (0.0-0.1 s on loopback under load,
benchmarks/README.md), one that does not takes the whole probe timeout."""


class RefreshMode(StrEnum):
    """``auto``: when every cluster answered the probe, read the sources now (each selected group's
    commits, the offset syncs beyond the pipeline's: apply/live_read.py) instead of a pipeline
    update; otherwise gold and the checkpoint tail. ``always``: a pipeline update first (gold then
    holds the refresh in history); ``never``: gold and the checkpoint tail as they are."""

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
    """Where the failover's time went: probe, refresh, then the apply's phases; ``probe`` is the
    time waited for the probes alone, so the phases add up to the failover's time."""
    probe_beside: str | None = None
    """What the probes ran beside when they did (``probe: 10.0s in all, beside ...``)."""

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
    """Probe; refresh first with ``always``; then apply on the store ``gold_store`` opens (on
    ``request.home``; opened after the refresh, as the refresh's Spark must have the home alone),
    reading the sources too when every cluster answered.
    The apply reads and plans beside probes that have not decided within PROBE_GRACE_S."""
    clock = PhaseClock()
    with cyclic_gc.paused(), stand_aside_request(request.home) as aside, _Probes(request) as probes:
        waited = aside.wait(request.stand_aside_timeout_s)  # while the probes ask
        with clock.phase("probe"):
            decided = probes.decided(within_s=PROBE_GRACE_S)
        pending = not probes.all_answered()
        applied, applied_phases, beside = None, PhaseTimes(), "the apply"
        if not decided:
            applied, applied_phases = _apply_beside_probes(request, probes, gold_store, secrets)
            beside = "the apply's reads and plan" + (
                ""
                if applied
                else " (dropped: every cluster answered, so the apply ran again with the sources read)"
            )
        refresh = None
        if applied is None:
            apply_request = request.apply
            if probes.reads_sources() and request.settings is not None:
                if request.refresh is RefreshMode.ALWAYS:
                    beside = "the refresh and the apply" if decided else beside
                    with clock.phase("refresh"):
                        refresh = _refresh(request, request.settings, echo)
                else:
                    apply_request = replace(
                        apply_request, live_sources=live_sources(request, request.settings)
                    )
            applied = _apply(request, clock, gold_store, secrets, apply_request=apply_request)
            applied_phases += applied.phases  # after a dropped attempt's time, if any
        with clock.phase("probe"):
            checks = probes.checks()
    phases = clock.times(expected=("probe", "refresh")) + applied_phases
    return FailoverResult(
        checks=checks,
        refresh=refresh,
        refresh_skipped=_why_no_refresh(request, checks),
        apply=applied,
        phases=phases,
        loop_stood_aside=(
            f"the local sync loop (process {aside.loop}) stood aside in {waited:.1f}s"
            if aside.loop is not None
            else None
        ),
        probe_beside=_probe_beside(checks, beside, phases) if pending else None,
    )


class _DroppedForSourcesError(Exception):
    """Raised at the apply's first write when the probes decided the sources are read."""


def _apply_beside_probes(
    request: FailoverRequest,
    probes: _Probes,
    gold_store: Callable[[], GoldStore],
    secrets: SecretsProvider | None,
) -> tuple[ApplyResult | None, PhaseTimes]:
    """The apply's reads and plan while the probes are out; its writes (the plan's audit, the
    alters) only once they decided the sources are not read. None when they decided they are (a
    plan without them is staler than one with them), with the time the attempt took as ``probe``:
    waiting for the probes is all it came to."""
    kept, dropped = PhaseClock(), PhaseClock()

    def sources_not_read() -> None:
        with kept.phase("probe"):
            if probes.reads_sources():
                raise _DroppedForSourcesError

    with dropped.phase("probe"):
        try:
            applied: ApplyResult | None = _apply(request, kept, gold_store, secrets, sources_not_read)
        except Exception:  # gold empty or refused without the sources may be whole with them
            if not probes.reads_sources():
                raise
            applied = None
        with kept.phase("probe"):  # a run with nothing to plan writes nothing: it never asked
            if applied is not None and probes.reads_sources():
                applied = None
    if applied is None:
        return None, dropped.times()
    return applied, kept.times() + applied.phases


def _apply(
    request: FailoverRequest,
    clock: PhaseClock,
    gold_store: Callable[[], GoldStore],
    secrets: SecretsProvider | None,
    before_writes: Callable[[], None] | None = None,
    *,
    apply_request: ApplyRequest | None = None,
) -> ApplyResult:
    with clock.phase("gold"):  # opening the store is part of reading gold
        store = gold_store()
    with contextlib.closing(store):
        return run_apply(
            apply_request or request.apply, store=store, secrets=secrets, before_writes=before_writes
        )


def live_sources(request: FailoverRequest, settings: PipelineSettings) -> LiveSources:
    """Every source the failover probed, read now with the pipeline's settings (they all answered)."""
    return LiveSources(
        sources=tuple(
            LiveSource(cluster.name, cluster.config)
            for cluster in request.clusters
            if cluster.role == "source"
        ),
        policy=settings.policy,
        target_alias=settings.target_alias,
        offset_syncs_location=settings.offset_syncs_location,
        groups_include=settings.groups_include,
        groups_exclude=settings.groups_exclude or None,
    )


def _refresh(
    request: FailoverRequest, settings: PipelineSettings, echo: Callable[[str], None] | None
) -> PipelineRunResult:
    # A selection only on a home that has every table (contract/refresh_selection.py).
    scope = failover_refresh(settings, existing_tables(request.home))
    return run_pipeline(
        settings,
        request.home,
        refresh=scope.selection,
        echo=echo,
        timeout_s=request.refresh_timeout_s,
        kafka_properties=request.kafka_properties,
    )


class _Probes:
    """Every cluster's probe, in threads from the failover's start, and the decision they settle as
    soon as it is known: a cluster that did not answer means gold and the checkpoint tail alone
    (``auto``), every cluster answering means the sources are read too; ``always`` and ``never``
    are known before any answer."""

    def __init__(self, request: FailoverRequest) -> None:
        self._request = request
        self._pool = ThreadPoolExecutor(max_workers=max(1, len(request.clusters)), thread_name_prefix="probe")
        self._settled = threading.Event()
        self._futures: list[Future[ClusterProbe]] = [
            self._pool.submit(probe_cluster, cluster.config, timeout_s=request.probe_timeout_s)
            for cluster in request.clusters
        ]
        for future in self._futures:
            future.add_done_callback(lambda _: self._settle())
        self._settle()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._pool.shutdown(wait=True)  # the probes are bounded by the probe timeout

    def _settle(self) -> None:
        answered = [future for future in self._futures if future.done()]
        if (
            self._decided_by_mode()
            or len(answered) == len(self._futures)
            or any(future.exception() is None and not future.result().reachable for future in answered)
        ):
            self._settled.set()

    def _decided_by_mode(self) -> bool:
        return self._request.settings is None or self._request.refresh is not RefreshMode.AUTO

    def decided(self, *, within_s: float) -> bool:
        return self._settled.wait(within_s)

    def all_answered(self) -> bool:
        return all(future.done() for future in self._futures)

    def reads_sources(self) -> bool:
        """Whether the failover reads the sources (a pipeline update with ``always``, the apply's own
        reads with ``auto``), once the probes decided (waits for that)."""
        self._settled.wait()
        if self._decided_by_mode():
            return self._request.settings is not None and self._request.refresh is RefreshMode.ALWAYS
        return all(future.done() and future.result().reachable for future in self._futures)

    def checks(self) -> tuple[ClusterCheck, ...]:
        """Every probe's answer (waits for the last one)."""
        return tuple(
            ClusterCheck(cluster.name, cluster.role, future.result())
            for cluster, future in zip(self._request.clusters, self._futures, strict=True)
        )


def _probe_beside(checks: tuple[ClusterCheck, ...], beside: str, phases: PhaseTimes) -> str:
    """``probe: 10.0s in all, beside ...; 0.4s of it waited for alone (probe in the time by phase)``."""
    longest = max((check.probe.seconds for check in checks), default=0.0)
    alone = dict(phases.phases).get("probe") or 0.0
    return (
        f"probe: {longest:.1f}s in all, beside {beside}; {alone:.1f}s of it waited for alone "
        "(probe in the time by phase)"
    )


def _why_no_refresh(request: FailoverRequest, checks: tuple[ClusterCheck, ...]) -> str | None:
    if request.settings is None or request.refresh is RefreshMode.NEVER:
        return "--refresh never"
    if request.refresh is RefreshMode.ALWAYS:
        return None
    down = [f"{check.role} {check.name}" for check in checks if not check.probe.reachable]
    if down:
        return f"{', '.join(down)} did not answer: the target's newest checkpoints are read directly"
    return (
        "every cluster answered: the sources' group commits and offset syncs are read directly, "
        "without a pipeline update (--refresh always runs one first)"
    )
