"""One plan or apply run as a typed function: ``run_apply(ApplyRequest) -> ApplyResult``.

Both read gold, read the target, and build the same plan; a dry run (``offsetlake plan``) stops
there and records the plan in the audit with action ``dry_run``; an apply carries it out and
verifies it. The command line, the demo and the Databricks job task all call this function; what
is printed is decided by the caller from the result (offsetlake.cli.render).

Status, decided by :func:`verdict` (pure; the reasons it gives are typed values in
offsetlake.apply.reasons): ``OK`` when everything planned was applied and verified (skips are not
failures), ``FAILED`` when anything failed (an alter, a read-back, or writing the results to the
audit), or the run stopped early because the target stopped answering or the overall deadline
passed, ``REFUSED`` when the ``fail`` active-group policy fired: up front, before anything was
altered, or for a group that became active during the run (the others were applied). Errors
before any plan exists (gold, the target, settings) are raised as OffsetlakeError, secrets masked.
SIGINT or SIGTERM during the alters still records a result for every planned row, then raises.

The steps of a run (:func:`_run`): read gold, read the target, the keep-alive interval, plan and
audit the plan, execute and audit the results; every Kafka client is built by
offsetlake.kafka.clients. Gold and the audit are read and written through the GoldStore
(offsetlake.apply.store) the caller opened and passes in: the entry point knows where it runs
(cli/stores.py: Spark on Databricks, the local home's warehouse without a JVM elsewhere); a run
never asks, and never looks for a home.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from enum import IntEnum
from pathlib import Path
from typing import Any, Final

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from offsetlake import cyclic_gc
from offsetlake.apply import audit
from offsetlake.apply.executor import Execution, Outcome, PartitionResult, execute_plan
from offsetlake.apply.k2k_search import METHOD as K2K_METHOD
from offsetlake.apply.k2k_search import K2KTracing, SearchedNow, merge_searched, search_newest_snapshots
from offsetlake.apply.live_read import LiveRead, LiveSources, SourceReads
from offsetlake.apply.live_syncs import METHOD as LIVE_METHOD
from offsetlake.apply.phases import PhaseClock, PhaseTimes
from offsetlake.apply.placement import METHOD as PLACEMENT_METHOD
from offsetlake.apply.placement import (
    KnownPartition,
    TopicRouting,
    partial_groups,
    plan_untranslated,
    untranslated_partitions,
)
from offsetlake.apply.plan_columns import build_plan
from offsetlake.apply.planner import (
    K2K_GUARD_PREFIX,
    Action,
    ActiveGroupPolicy,
    Guards,
    MultipleTargetsPolicy,
    PlanRow,
    Selection,
    TargetState,
    Untranslated,
    invalid_reason,
    refused_by_active_policy,
    select_offsets,
)
from offsetlake.apply.reasons import (
    ActiveDuringRun,
    AllStale,
    Interrupted,
    NotPlaced,
    NoTranslation,
    PartitionsFailed,
    Problem,
    RefusedActiveGroups,
    ResultsNotRecorded,
    StoppedEarly,
    Tally,
)
from offsetlake.apply.store import GoldStore
from offsetlake.apply.tail_gaps import unread_sources
from offsetlake.apply.tail_merge import TailMerge, merge_tail
from offsetlake.apply.target_state import read_target_state
from offsetlake.audit_ids import new_run_id
from offsetlake.contract.gold import ClusterHealth, GoldOffset, GoldTableError, GroupDataLoss, table_name
from offsetlake.contract.tables import LATEST_OFFSETS
from offsetlake.durations import format_duration
from offsetlake.errors import InvalidValueError, OffsetlakeError
from offsetlake.kafka import clients
from offsetlake.kafka.admin import KafkaAdminError, describe_error, read_offsets_retention
from offsetlake.kafka.checkpoint_tail import CheckpointTailError, read_checkpoint_tail
from offsetlake.kafka.group_offsets import GroupOffset
from offsetlake.kafka.secrets import (
    DatabricksSecrets,
    SecretScrubber,
    SecretsProvider,
    kafka_options_from_properties,
    kafka_options_from_scope,
    target_client_config,
)
from offsetlake.kafka.tracing_reader import SearchLimits
from offsetlake.mirror.policy import ReplicationPolicy
from offsetlake.mirror.precedence import METHODS

TAIL_NOTES: Final = {
    "checkpoint": "from a checkpoint newer than gold, read from the target; in history after the next update",
    LIVE_METHOD: "from the source group's commit read now, translated by the offset syncs; in history "
    "after the next update",
    K2K_METHOD: "from the newest group snapshot searched on the target now on K2K's tracing headers",
}
"""Why a row the run read from the target itself (``GoldOffset.from_tail``) is not gold's, per method."""
DEFAULT_MAX_AGE = timedelta(hours=1)
DEFAULT_CONCURRENCY = 8
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_DEADLINE_S = 600.0
DEFAULT_KEEP_ALIVE_FRACTION = 0.5
FALLBACK_OFFSETS_RETENTION = timedelta(days=1)
"""Assumed when the target's offsets.retention.minutes cannot be read: Kafka's default before 2.0
(KIP-186 raised it to 7 days), so a cluster still on the short setting is refreshed in time."""


class ApplyStatus(IntEnum):
    """The run's verdict; the value is the command line's exit status."""

    OK = 0
    FAILED = 1
    REFUSED = 3
    INCOMPLETE = 4
    """Applied and verified what it could, but some partition a source group committed is not
    placed (refused, or left without an offset): its consumer would start where
    ``auto.offset.reset`` says."""


@dataclass(frozen=True)
class ApplyRequest:
    """Everything one run needs, validated by whoever builds it (the CLI parses into it)."""

    dry_run: bool
    selection: Selection = field(default_factory=Selection)
    as_of: datetime | None = None
    method_precedence: tuple[str, ...] = METHODS
    allow_rewind: bool = False
    active_group_policy: ActiveGroupPolicy = ActiveGroupPolicy.FAIL
    max_age: timedelta | None = DEFAULT_MAX_AGE
    target_bootstrap_servers: str | None = None
    catalog: str | None = None
    schema: str | None = None
    secret_scope: str | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    timeout_s: float = DEFAULT_TIMEOUT_S
    deadline_s: float | None = DEFAULT_DEADLINE_S
    """No new group is started this many seconds after the run began (None: no overall deadline)."""
    keep_alive_fraction: float | None = DEFAULT_KEEP_ALIVE_FRACTION
    """Commit an unchanged offset again once offsetlake's last commit of it is older than this
    fraction of the target's offsets.retention.minutes (None: never)."""
    kafka_properties: Path | None = None
    """A Java properties file of Kafka client settings (local runs); values are masked like secrets."""
    checkpoint_tail: ReplicationPolicy | None = None
    """Also read the target's checkpoint records, every one its checkpoints topics (the names this
    policy, the pipeline's, gives) still hold, and plan from gold plus them
    (offsetlake.apply.tail_merge); not with ``as_of``."""
    k2k_guard_prefix: str = K2K_GUARD_PREFIX
    """Skip target groups whose commit metadata starts with this (K2K's offset mapper's); empty: off."""
    ignore_k2k_guard: bool = False
    """Apply to those groups anyway (their plan rows say so)."""
    on_multiple_targets: MultipleTargetsPolicy = MultipleTargetsPolicy.FAIL
    """What to do with translations resting on a source record K2K mapped to several target topics."""
    k2k_tracing: K2KTracing | None = None
    """Also search each selected group's newest snapshot on the target on K2K's tracing headers (the
    routed sources of this K2KTracing) and plan from gold plus the answers (apply/k2k_search.py);
    not with ``as_of``."""
    tail_only: bool = False
    """With ``checkpoint_tail``: plan from the target's checkpoint records when gold's latest_offsets
    is empty while bronze_checkpoints holds checkpoint records (an update that truncated gold), which
    is otherwise refused: the tail alone lacks what gold held. Gold's rows, if any, still compete
    (tail_merge.tail_replaces): a fresher gold row is never dropped for an older checkpoint."""
    routing: TopicRouting | None = None
    """How the pipeline names a source topic on the target: with it, every partition gold's newest
    group snapshots say a source group committed is planned, translated or not (apply/placement.py);
    None: translations only (--as-of restores read history, not snapshots)."""
    untranslated: Untranslated = Untranslated.EARLIEST
    """What a known partition without a translation gets: the log start, or a refusal."""
    accept_gold_without_tail: bool = False
    """Plan a source's partitions from gold even when its newest checkpoints could not be read."""
    as_failover: bool = False
    """This run is a failover's (the command, or the failover job's apply task): recorded as such,
    and the groups it places are held from every later run until an operator resumes them."""
    resume_sync: bool = False
    """An operator hands the selected groups a failover placed back to the sync (recorded as a
    resume: later runs move them again)."""
    direction: audit.Direction = audit.Direction.FAILOVER
    """Recorded in apply_audit: ``failback`` when offsetlake.failback plans the groups' way back."""
    live_sources: LiveSources | None = None
    """Source clusters that answer: read each selected group's commits and the offset syncs beyond
    the pipeline's now, and plan from gold plus their translations (apply/live_read.py); the
    partitions those snapshots name are the ones placed. Not with ``as_of``."""


@dataclass(frozen=True)
class ApplyResult:
    """What a run planned and did, and why its status is what it is (``reasons``)."""

    request: ApplyRequest
    run_id: str
    status: ApplyStatus
    target: str
    audit_table: str
    started_at: datetime
    gold_rows: int = 0
    """Translations read from gold, before the selection's regexes (the literal names it gives are
    read alone); 0 only when gold holds none: the pipeline has translated nothing yet."""
    health: tuple[ClusterHealth, ...] = ()
    plan: tuple[PlanRow, ...] = ()
    results: tuple[PartitionResult, ...] = ()
    refusing_groups: tuple[str, ...] = ()
    keep_alive: str = ""
    """How the keep-alive interval was set (printed with the plan)."""
    tail_merge: TailMerge | None = None
    """What the checkpoint tail added to gold (``request.checkpoint_tail``)."""
    k2k_search: SearchedNow | None = None
    """What the K2K search added to gold (``request.k2k_tracing``)."""
    live: LiveRead | None = None
    """What reading the sources now added to gold (``request.live_sources``)."""
    data_loss: tuple[GroupDataLoss, ...] = ()
    """What failing over now would cost each selected group (not for --as-of restores)."""
    reasons: tuple[Problem, ...] = ()
    """Why the status is what it is, typed (offsetlake.apply.reasons); empty when all went well."""
    phases: PhaseTimes = field(default_factory=PhaseTimes)
    """Where the run's time went: gold, tail, source, k2k, target, plan, apply+verify, audit."""
    unread_sources: tuple[tuple[str, str], ...] = ()
    """Sources whose newest checkpoints the run could not read, with why (apply/tail_gaps.py)."""
    snapshots: int | None = None
    """Partitions gold's newest group snapshots say source groups committed (None: not read, as in
    --as-of restores); 0: the source was never read, only checkpoints say what groups committed."""
    untranslated: int = 0
    """Of those, the partitions no method translates (planned by --untranslated)."""
    partial_groups: int = 0
    """Groups translated on only some partitions of a topic (reported when there is no snapshot)."""
    scrubber: SecretScrubber = field(default_factory=SecretScrubber, repr=False)

    @property
    def problems(self) -> tuple[str, ...]:
        """The lines an operator must read: the reasons rendered."""
        return tuple(reason.render() for reason in self.reasons)

    @property
    def nothing_selected(self) -> bool:
        return self.gold_rows > 0 and not self.plan

    @property
    def not_placed(self) -> tuple[PlanRow, ...]:
        return not_placed(self.plan, self.results)

    @property
    def reference_time(self) -> datetime:
        """What translation ages are measured to: the --as-of time of a restore, else the start."""
        return self.request.as_of or self.started_at


def not_placed(plan: Sequence[PlanRow], results: Sequence[PartitionResult]) -> tuple[PlanRow, ...]:
    """Plan rows whose partition did not end at a position that skips nothing: refused by the plan,
    or altered without a verified read-back."""
    verified = {outcome.row.key for outcome in results if outcome.verified}
    return tuple(
        row for row in plan if not row.action.places or (row.action.alters and row.key not in verified)
    )


def run_apply(
    request: ApplyRequest,
    *,
    store: GoldStore,
    secrets: SecretsProvider | None = None,
    before_writes: Callable[[], None] | None = None,
) -> ApplyResult:
    """One plan or apply run on ``store`` (the caller opens and closes it: while it is open no local
    pipeline update rewrites gold under it); ``secrets`` replaces the Databricks secret scope;
    ``before_writes`` is called once the plan is built, before the run writes anything (the plan's
    audit, then the alters): a failover waits there for its probes and may raise to drop the run."""
    scrubber = SecretScrubber()
    try:
        secret_options = (
            kafka_options_from_properties(request.kafka_properties) if request.kafka_properties else {}
        )
        if request.secret_scope:
            secret_options.update(
                kafka_options_from_scope(secrets or DatabricksSecrets(), request.secret_scope)
            )
        scrubber = SecretScrubber(secret_options)
        config = _target_config(request, secret_options)
        with cyclic_gc.paused():  # the run's heap only grows: collecting it found nothing to free
            return _run(request, config=config, scrubber=scrubber, store=store, before_writes=before_writes)
    except OffsetlakeError as error:
        raise error.rewritten(scrubber.scrub) from error
    except KafkaException as error:
        raise KafkaAdminError(scrubber.scrub(describe_error(error))) from error


def _target_config(request: ApplyRequest, secret_options: dict[str, str]) -> dict[str, str]:
    """The target as the caller resolved it (offsetlake.cli.clusters): the request's bootstrap
    servers, else the secret scope's or properties file's; never looked for anywhere else."""
    return target_client_config(request.target_bootstrap_servers, secret_options)


@dataclass(frozen=True)
class _Run:
    """What every step of one run shares: the request, where it runs, and who it is."""

    request: ApplyRequest
    config: dict[str, str]
    scrubber: SecretScrubber
    store: GoldStore
    info: audit.RunInfo
    started: float
    """``time.monotonic()`` at the start: the overall deadline counts from it."""
    clock: PhaseClock = field(default_factory=PhaseClock)
    """Each step times its phases on it (``ApplyResult.phases``)."""
    before_writes: Callable[[], None] | None = None
    """``run_apply``'s hook, called between the plan and its audit."""

    @property
    def schema(self) -> str:
        return self.request.schema or self.store.schema

    @property
    def audit_table(self) -> str:
        return audit.audit_table_name(self.schema, self.request.catalog)

    @property
    def target(self) -> str:
        return self.config["bootstrap.servers"]


def _run(
    request: ApplyRequest,
    *,
    config: dict[str, str],
    scrubber: SecretScrubber,
    store: GoldStore,
    before_writes: Callable[[], None] | None = None,
) -> ApplyResult:
    """Read gold; read the target and its keep-alive interval; plan and audit the plan; then, for an
    apply the verdict does not stop first, execute and audit the results. The request names the
    schema it reads from here on: the store's when it named none."""
    request = replace(request, schema=request.schema or store.schema)
    run, result = _begin(request, config, scrubber, store)
    done = _steps(replace(run, before_writes=before_writes), result)
    return replace(done, phases=run.clock.times(expected=_EVERY_RUNS_PHASES))


_EVERY_RUNS_PHASES: Final = ("gold", "target", "plan", "apply+verify", "audit")
"""Printed ``-`` when a run stops before them (a dry run never applies)."""


def _steps(run: _Run, result: ApplyResult) -> ApplyResult:
    """The steps after ``_begin``, each timing its phases on ``run.clock``."""
    request = run.request
    result, offsets = _read_gold(run, result)
    with run.clock.phase("gold"):
        result, known = _untranslated(run, result, offsets)
    if not offsets and not known:
        return _judged(result)
    with run.clock.phase("target"), clients.admin(run.config) as admin:  # the admin client too
        target = _read_target(run, admin, [*offsets, *known])
        keep_alive_after, keep_alive = _keep_alive(request, admin)
    result = replace(result, keep_alive=keep_alive)
    if result.snapshots == 0:
        result = replace(result, partial_groups=partial_groups(offsets, target))
    planned = _plan_and_audit(run, result, offsets, target, keep_alive_after, known=known)
    if request.dry_run or verdict(planned).status is not ApplyStatus.OK:
        return _judged(planned)
    return _execute_and_audit(run, planned)


def _begin(
    request: ApplyRequest, config: dict[str, str], scrubber: SecretScrubber, store: GoldStore
) -> tuple[_Run, ApplyResult]:
    """The run's identity, and its result before anything is read but the clusters' health."""
    started_at = datetime.now(UTC)
    run = _Run(
        request=request,
        config=config,
        scrubber=scrubber,
        store=store,
        info=audit.RunInfo(
            run_id=new_run_id(started_at),
            mode=_mode(request),
            started_at=started_at,
            as_of=request.as_of,
            direction=request.direction,
        ),
        started=time.monotonic(),
    )
    with run.clock.phase("gold"):
        health = store.cluster_health()
    return run, ApplyResult(
        request=request,
        run_id=run.info.run_id,
        status=ApplyStatus.OK,
        target=run.target,
        audit_table=run.audit_table,
        scrubber=scrubber,
        started_at=started_at,
        health=tuple(health),
    )


def _mode(request: ApplyRequest) -> audit.Mode:
    if request.dry_run:
        return audit.Mode.DRY_RUN
    if request.as_failover:
        return audit.Mode.FAILOVER
    return audit.Mode.RESUME if request.resume_sync else audit.Mode.APPLY


def _read_gold(run: _Run, result: ApplyResult) -> tuple[ApplyResult, list[GoldOffset]]:
    """The selected translations (latest, or as of --as-of), how many gold holds, and what failing
    over now would lose per selected group."""
    request, store = run.request, run.store
    if request.tail_only and request.checkpoint_tail is None:
        raise InvalidValueError(
            "--tail-only plans from the target's checkpoint records alone: it needs them read "
            "(--checkpoint-tail; `failover` reads them), and --as-of reads history instead"
        )
    if request.as_of:
        with run.clock.phase("gold"):
            offsets = store.offsets_as_of(
                request.as_of, precedence=request.method_precedence, selection=request.selection
            )
    else:
        with _source_reads(run) as reads:  # beside gold and the checkpoint tail
            with run.clock.phase("gold"):
                offsets = store.latest_offsets(request.selection)  # --tail-only too: the fresher row wins
            if request.checkpoint_tail is not None:
                with run.clock.phase("gold"):
                    _refuse_truncated_gold(run, offsets)
                with run.clock.phase("tail"):
                    result = _merged_tail(run, result, offsets, request.checkpoint_tail)
                offsets = list(result.tail_merge.offsets) if result.tail_merge else offsets
            if reads is not None:
                with run.clock.phase("source"):  # what is left of them after gold and the tail
                    live = reads.merged(run.store, offsets, request.method_precedence)
                result, offsets = replace(result, live=live), list(live.merge.offsets)
        if request.k2k_tracing is not None:
            with run.clock.phase("k2k"):
                result = _searched_now(run, result, offsets, request.k2k_tracing)
            offsets = list(result.k2k_search.offsets) if result.k2k_search else offsets
    gold_rows = len(offsets)
    with run.clock.phase("gold"):
        if not offsets and request.selection.narrows:
            # Only the literal names were read: is gold empty, or did the selection match nothing?
            gold_rows = store.count_translations(request.as_of)
        if gold_rows and request.as_of is None:
            loss = store.failover_data_loss(request.selection)
            result = replace(result, data_loss=tuple(loss))
    if not gold_rows:
        return replace(result, gold_rows=0), []
    return replace(result, gold_rows=gold_rows), select_offsets(offsets, request.selection)


def _untranslated(
    run: _Run, result: ApplyResult, offsets: Sequence[GoldOffset]
) -> tuple[ApplyResult, list[KnownPartition]]:
    """The selected partitions gold's newest group snapshots say a source group committed that no
    translation covers (none without a routing: an --as-of restore plans history only)."""
    request = run.request
    if request.routing is None or request.as_of is not None:
        return result, []
    snapshots = _newest_snapshots(run, result)
    known = untranslated_partitions(snapshots, request.routing, offsets, request.selection)
    count = sum(len(found) for found in snapshots.values())
    return replace(result, snapshots=count, untranslated=len(known)), known


def _refuse_truncated_gold(run: _Run, offsets: Sequence[GoldOffset]) -> None:
    """An empty latest_offsets is a pipeline that has translated nothing yet, unless bronze holds
    checkpoint records: then an update emptied gold and did not rebuild it, and the tail alone
    would plan without what gold held (offset syncs, mappings, the checkpoints it ingested). That
    is refused unless the operator asks for the tail alone (``tail_only``)."""
    request = run.request
    if request.tail_only or offsets or run.store.count_translations():
        return
    ingested = run.store.checkpoint_positions()
    if ingested:
        raise GoldTableError(
            f"gold table {table_name(LATEST_OFFSETS.name, run.schema, request.catalog)} is empty "
            f"while bronze_checkpoints holds the checkpoint records of {len(ingested)} checkpoint "
            "topic-partition(s): a pipeline update emptied gold and did not rebuild it; run `offsetlake "
            "pipeline run` to rebuild it, or pass --tail-only to plan from the target's checkpoint "
            "records alone, without gold's translations"
        )


def _merged_tail(
    run: _Run, result: ApplyResult, offsets: list[GoldOffset], policy: ReplicationPolicy
) -> ApplyResult:
    """Gold plus every checkpoint record the target holds, each checkpoints topic read from its log
    start: no high-water mark decides what is seen (bronze commits before gold, so records past
    gold may be behind bronze's)."""
    try:
        tail = read_checkpoint_tail(run.config, policy, timeout_s=run.request.timeout_s)
    except CheckpointTailError as error:
        raise CheckpointTailError(f"target cluster {run.target}: {error}") from error
    ingested = run.store.checkpoint_positions()  # records past it postdate gold's snapshots
    merged = replace(
        merge_tail(offsets, tail.records, run.request.method_precedence, ingested=ingested),
        topics=tail.topics,
        unreadable=tail.unreadable,
    )
    unread = unread_sources(merged, policy, offsets)
    return replace(result, tail_merge=merged, unread_sources=tuple(sorted(unread.items())))


@contextlib.contextmanager
def _source_reads(run: _Run) -> Iterator[SourceReads | None]:
    """The sources' reads (``request.live_sources``), started now; None without them."""
    live = run.request.live_sources
    if live is None:
        yield None
        return
    with SourceReads(
        live, target=run.config, selection=run.request.selection, timeout_s=run.request.timeout_s
    ) as reads:
        yield reads


def _newest_snapshots(run: _Run, result: ApplyResult) -> dict[str, list[GroupOffset]]:
    """Per source alias, the newest snapshot of each selected group: read now from a source that
    was (``result.live``), else gold's latest_group_offsets."""
    snapshots = run.store.newest_group_offsets(run.request.selection)
    if result.live is not None:
        snapshots.update(result.live.snapshots)
    return snapshots


def _searched_now(
    run: _Run, result: ApplyResult, offsets: list[GoldOffset], tracing: K2KTracing
) -> ApplyResult:
    """Gold with each selected group's newest snapshot searched on the target now (K2K's tracing
    headers): no source cluster, no JVM; one target partition's positions searched together, the
    whole search bounded by --timeout (measured: 3.4 ms a group-partition at 10,000 of them on
    100,000-record partitions, benchmarks/README.md); a group not searched keeps gold's translation."""
    snapshots = _newest_snapshots(run, result)
    limits = SearchLimits(timeout_s=run.request.timeout_s, budget_s=run.request.timeout_s)
    lookups = search_newest_snapshots(run.config, snapshots, tracing, limits)
    return replace(result, k2k_search=merge_searched(offsets, lookups, run.request.method_precedence))


def _read_target(
    run: _Run, admin: AdminClient, offsets: Sequence[GoldOffset | KnownPartition]
) -> TargetState:
    """The target's groups and logs for every valid gold row and known partition; an error names
    the target."""
    keys = {
        offset.key
        for offset in offsets
        if not isinstance(offset, GoldOffset) or invalid_reason(offset) is None
    }
    try:
        return read_target_state(admin, keys, timeout_s=run.request.timeout_s)
    except KafkaAdminError as error:
        raise KafkaAdminError(f"target cluster {run.target}: {error}") from error


def _keep_alive(request: ApplyRequest, admin: AdminClient) -> tuple[timedelta | None, str]:
    """The keep-alive interval (a fraction of the target's offsets retention) and how it was set."""
    if request.keep_alive_fraction is None or request.as_of is not None:
        return None, "keep-alive: off" + (" (restoring --as-of)" if request.as_of else "")
    retention = read_offsets_retention(admin, timeout_s=request.timeout_s)
    source = "read from the target"
    if retention is None:
        retention, source = (
            FALLBACK_OFFSETS_RETENTION,
            "the target's configuration could not be read; assumed",
        )
    interval = retention * request.keep_alive_fraction
    minutes = int(retention.total_seconds() // 60)
    return interval, (
        "keep-alive: unchanged offsets offsetlake committed are committed again after "
        f"{format_duration(interval)} "
        f"({request.keep_alive_fraction:g} x offsets.retention.minutes={minutes}, {source})"
    )


def _plan_and_audit(
    run: _Run,
    result: ApplyResult,
    offsets: Sequence[GoldOffset],
    target: TargetState,
    keep_alive_after: timedelta | None,
    *,
    known: Sequence[KnownPartition],
) -> ApplyResult:
    """The plan, under the guards the request, the audit's memory and gold's K2K mapping conflicts
    set (a table absent without K2K mappings: cheap to find empty), recorded before any alter."""
    with run.clock.phase("plan"):
        plan, guards = _planned(run, result, offsets, target, keep_alive_after, known=known)
    if run.before_writes is not None:
        run.before_writes()
    with run.clock.phase("audit"):
        _append_audit(run, audit.plan_records(plan, run.info))
    return replace(result, plan=plan, refusing_groups=tuple(refused_by_active_policy(plan, guards)))


def _planned(
    run: _Run,
    result: ApplyResult,
    offsets: Sequence[GoldOffset],
    target: TargetState,
    keep_alive_after: timedelta | None,
    *,
    known: Sequence[KnownPartition],
) -> tuple[tuple[PlanRow, ...], Guards]:
    """The plan (translations, then the known partitions without one, in key order) and the guards
    it was built under."""
    request = run.request
    applied_before = run.store.last_applied(request.selection)
    guards = Guards(
        reference_time=result.reference_time,
        max_age=request.max_age,
        allow_rewind=request.allow_rewind,
        active_group_policy=request.active_group_policy,
        last_applied={key: last.source_timestamp for key, last in applied_before.items()},
        keep_alive_after=keep_alive_after,
        last_committed_at={key: last.committed_at for key, last in applied_before.items()},
        k2k_guard_prefix=request.k2k_guard_prefix,
        ignore_k2k_guard=request.ignore_k2k_guard,
        mapping_conflicts=run.store.mapping_conflicts(request.selection),
        on_multiple_targets=request.on_multiple_targets,
        last_verified_offset={
            key: last.offset for key, last in applied_before.items() if last.offset is not None
        },
        unread_sources={} if request.accept_gold_without_tail else dict(result.unread_sources),
        untranslated=request.untranslated,
        failover_holds={}
        if request.as_failover or request.resume_sync
        else run.store.failover_holds(request.selection),
    )
    plan = build_plan(offsets, target, guards)
    if known:
        plan = sorted([*plan, *plan_untranslated(known, target, guards)], key=lambda row: row.key)
    return _marked_tail(tuple(plan), offsets), guards


def _marked_tail(plan: tuple[PlanRow, ...], offsets: Sequence[GoldOffset]) -> tuple[PlanRow, ...]:
    """Rows the apply translated itself (the checkpoint tail, the K2K search) say so, in the report
    and in the audit: ``checkpoint (tail)``, ``k2k_tracing_headers (tail)``."""
    from_tail = {offset.key for offset in offsets if offset.from_tail}
    if not from_tail:
        return plan
    return tuple(
        replace(row, method=f"{row.method} (tail)", reason=f"{row.reason} ({TAIL_NOTES[row.method]})")
        if row.key in from_tail
        else row
        for row in plan
    )


def _execute_and_audit(run: _Run, planned: ApplyResult) -> ApplyResult:
    """Alter and verify the plan, record one result per plan row, then judge; SIGINT/SIGTERM is
    raised again once the results are recorded."""
    request = run.request
    with run.clock.phase("apply+verify"):
        execution = execute_plan(
            functools.partial(clients.new_admin, run.config),
            planned.plan,
            timeout_s=request.timeout_s,
            concurrency=request.concurrency,
            deadline=None if request.deadline_s is None else run.started + request.deadline_s,
        )
    done = replace(planned, results=execution.results)
    try:
        with run.clock.phase("audit"):
            _append_audit(run, audit.result_records(done.plan, done.results, run.info))
    except Exception as error:
        if execution.interrupted:
            raise execution.interrupted from error
        return _judged(done, execution, unrecorded=run.scrubber.scrub(str(error)))
    if execution.interrupted:
        tally = _tally(done.results)
        raise execution.interrupted.rewritten(
            lambda message: Interrupted(message, run.info.run_id, tally, run.audit_table).render()
        )
    return _judged(done, execution)


@dataclass(frozen=True)
class Verdict:
    status: ApplyStatus
    reasons: tuple[Problem, ...] = ()


def verdict(
    result: ApplyResult, execution: Execution | None = None, *, unrecorded: str | None = None
) -> Verdict:
    """The status of a run and why, from what it read and planned (``result``), what executing the
    plan did (None: nothing was executed, e.g. a dry run) and, if writing the results to the audit
    failed, its error (``unrecorded``). Pure: no Spark, no Kafka, no clock.

    Before executing, a status other than OK means the plan must not be executed."""
    request, run_id = result.request, result.run_id
    if not result.gold_rows and not result.untranslated:
        problem = NoTranslation(run_id, request.schema or "", request.as_of)
        return Verdict(ApplyStatus.OK if request.dry_run else ApplyStatus.FAILED, (problem,))
    if request.dry_run or not result.plan:
        return Verdict(ApplyStatus.OK)
    if result.refusing_groups:
        return Verdict(ApplyStatus.REFUSED, (RefusedActiveGroups(run_id, result.refusing_groups),))
    if _all_older_than(result.plan, request.max_age, result.reference_time):
        newest = max(row.last_observed_at for row in result.plan if row.last_observed_at is not None)
        return Verdict(ApplyStatus.FAILED, (AllStale(run_id, newest),))
    if execution is None:
        return Verdict(ApplyStatus.OK)
    if unrecorded is not None:
        return Verdict(ApplyStatus.FAILED, (ResultsNotRecorded(run_id, result.audit_table, unrecorded),))
    if execution.stopped_because:
        tally = _tally(execution.results)
        stopped = StoppedEarly(run_id, execution.stopped_because, tally, result.target, result.audit_table)
        return Verdict(ApplyStatus.FAILED, (stopped,))
    outcomes = Counter(partition.outcome for partition in execution.results)
    failed = outcomes[Outcome.FAILED] + outcomes[Outcome.VERIFY_FAILED]
    if failed:
        return Verdict(ApplyStatus.FAILED, (PartitionsFailed(run_id, failed, result.target),))
    if outcomes[Outcome.SKIPPED_ACTIVE_GROUP] and request.active_group_policy is ActiveGroupPolicy.FAIL:
        return Verdict(ApplyStatus.REFUSED, (ActiveDuringRun(run_id),))
    unplaced = not_placed(result.plan, execution.results)
    if not unplaced:
        return Verdict(ApplyStatus.OK)
    keys = tuple((row.consumer_group, row.topic, row.partition, row.action.value) for row in unplaced)
    # Exit 3 stays the word for groups someone consumes (left alone under the skip policy too).
    active = outcomes[Outcome.SKIPPED_ACTIVE_GROUP] or any(
        row.action is Action.SKIP_ACTIVE_GROUP for row in unplaced
    )
    status = ApplyStatus.REFUSED if active else ApplyStatus.INCOMPLETE
    return Verdict(status, (NotPlaced(run_id, keys, result.audit_table),))


def _judged(
    result: ApplyResult, execution: Execution | None = None, *, unrecorded: str | None = None
) -> ApplyResult:
    judged = verdict(result, execution, unrecorded=unrecorded)
    return replace(result, status=judged.status, reasons=judged.reasons)


def _append_audit(run: _Run, records: Sequence[tuple[Any, ...]]) -> None:
    run.store.append_audit(_scrubbed(records, run.scrubber))


def _tally(results: Sequence[PartitionResult]) -> Tally:
    return Tally.of(result.outcome.value for result in results)


def _all_older_than(plan: Sequence[PlanRow], max_age: timedelta | None, now: datetime) -> bool:
    """Every translated row refused because its translation is older than --max-age (not for other
    reasons; the partitions placed without a translation have none to age)."""
    translated = [row for row in plan if row.method != PLACEMENT_METHOD]
    return (
        max_age is not None
        and bool(translated)
        and all(
            row.action is Action.SKIP_STALE and (age := row.age(now)) is not None and age > max_age
            for row in translated
        )
    )


def _scrubbed(records: Sequence[tuple[Any, ...]], scrubber: SecretScrubber) -> list[tuple[Any, ...]]:
    return [
        tuple(scrubber.scrub(value) if isinstance(value, str) else value for value in record)
        for record in records
    ]
