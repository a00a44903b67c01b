"""`make demo`: the end-to-end failover scenario on two local clusters, verified by real consumers.

It starts a fresh source and target cluster, lets the MM2 simulator replicate two topics over a
few commit intervals (records already on the target, transaction markers and filtered records make
target offsets diverge), and positions four consumer groups on the source:

- one far behind (older than the latest offset sync: MM2's sparse sync store translates it
  imprecisely),
- one caught up,
- one that is active on the target during the apply (it must be refused and left alone),
- one excluded by the default group filter (``console-consumer-*``: never translated, never touched).

Then it runs the pipeline, prints the plan, applies it with ``--active-group-policy skip``, and
proves the failover: a consumer joins each applied group on the target, starts from the committed
position and reads on; every record the group had not processed on the source must be read (none
skipped), and the records read again are counted.

Then the round trip back: the applied groups consume on the target, producers that failed over
write the target's own topic (``refunds``), the source comes back with a reverse flow
``dr -> primary`` (replicating ``refunds`` to ``dr.refunds`` and checkpointing the groups there),
and ``offsetlake failback`` moves every group home; each group's committed positions on the source
must be at or before its first unprocessed record. Exit status 1 if any check fails.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import TextIO

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from offsetlake.apply.k2k_search import K2KTracing
from offsetlake.apply.planner import ActiveGroupPolicy
from offsetlake.apply.run import ApplyRequest, ApplyStatus, run_apply
from offsetlake.cli import render
from offsetlake.cli.failback import report_lines
from offsetlake.cli.stores import gold_store_for
from offsetlake.contract.settings import MappingTopic, PipelineSettings
from offsetlake.errors import OffsetlakeError, StopSignalError, UsageError
from offsetlake.failback.run import FailbackRequest, run_failback
from offsetlake.k2k.routing import TOPIC_PLACEHOLDER, TracingRoute
from offsetlake.kafka import admin as kafka_admin
from offsetlake.local.audit_journal import fold_journal
from offsetlake.local.home import HOME_ENV, LOCAL_SCHEMA, LocalHome, local_home
from offsetlake.local.pipeline_update import run_pipeline
from offsetlake.local.spark import get_local_spark
from offsetlake.local.update_progress import is_progress
from offsetlake.mirror.clusters import ClusterEndpoint
from offsetlake_dev.local_cluster import ClusterPair, running_clusters
from offsetlake_dev.simulate import DEFAULT_MAPPING_TOPIC, MirrorSettings, MirrorSimulator
from offsetlake_dev.simulate.target_consumers import active_member, resume_group

SOURCE_ALIAS = "primary"
TARGET_ALIAS = "dr"
ORDERS = "orders"
PAYMENTS = "payments"
ORDERS_PARTITIONS = 3
PAYMENTS_PARTITIONS = 2
REFUNDS = "refunds"
"""The target's own topic, written by producers that failed over; the reverse flow copies it back."""
REFUNDS_RECORDS = 20
PREEXISTING_TARGET_RECORDS = 5
MAPPING_TOPIC = DEFAULT_MAPPING_TOPIC
"""K2K's documented default mapping topic (``offsetMapping.topic``)."""
MAPPING_PARTITIONS = 6
"""As K2K's sample configuration creates it: mappings are ordered across partitions by timestamp."""
HISTORY_TOPIC_PARTITION = (f"{SOURCE_ALIAS}.{ORDERS}", 0)
DEMO_HOME_MARKER = ".offsetlake-demo"
EXIT_OK = 0
EXIT_FAILED = 1
_TIMEOUT_S = 30.0


class DemoError(UsageError):
    """The demo cannot run as asked (the message says why); nothing was changed."""


class Expectation(StrEnum):
    APPLIED = "applied, then resumed without skipping"
    REFUSED_ACTIVE = "refused: active on the target"
    EXCLUDED = "excluded by the group filter"


@dataclass(frozen=True)
class DemoGroup:
    name: str
    role: str
    expectation: Expectation


FAR_BEHIND = DemoGroup("billing-far-behind", "far behind the latest offset sync", Expectation.APPLIED)
CAUGHT_UP = DemoGroup("analytics-caught-up", "caught up with the source", Expectation.APPLIED)
ACTIVE = DemoGroup("fulfillment-active", "mid-topic, consumer live on the target", Expectation.REFUSED_ACTIVE)
EXCLUDED = DemoGroup("console-consumer-1234", "a console consumer", Expectation.EXCLUDED)
GROUPS: tuple[DemoGroup, ...] = (FAR_BEHIND, CAUGHT_UP, ACTIVE, EXCLUDED)


@dataclass(frozen=True)
class ReplicationRound:
    """One MM2 commit interval: what the source receives before MM2 commits and checkpoints."""

    orders_per_partition: int
    payments_per_partition: int
    transaction_size: int
    filter_every: int
    description: str


ROUNDS: tuple[ReplicationRound, ...] = (
    ReplicationRound(150, 60, 10, 0, "orders in transactions of 10 (a commit marker after each)"),
    ReplicationRound(150, 60, 0, 9, "every 9th order dropped by a filtering SMT"),
    ReplicationRound(150, 60, 25, 0, "orders in transactions of 25"),
)


class Progress:
    """One line per step with the seconds elapsed, so a reader sees where the time goes."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._started = time.monotonic()

    def step(self, message: str) -> None:
        print(f"[{time.monotonic() - self._started:6.1f}s] {message}", file=self._out, flush=True)

    def block(self, text: str) -> None:
        for line in text.splitlines():
            print(f"          {line}", file=self._out)
        self._out.flush()


@dataclass(frozen=True)
class PartitionVerdict:
    group: str
    topic: str
    partition: int
    source_committed: int
    owed: str
    mm2_checkpoint: int | None
    """Where MM2's own checkpoint would have put the group, for comparison."""
    mm2_re_reads: int | None
    """Records the group would have re-read from MM2's checkpoint."""
    resumed_at: int | None
    records_read: int
    re_reads: int
    skipped: int
    ok: bool


def handle_demo(home: Path | None) -> int:
    """``python -m offsetlake_dev demo``: the scenario in ``home`` (default $OFFSETLAKE_HOME/demo)."""
    home = (home or local_home() / "demo").resolve()
    try:
        return run_demo(home, sys.stdout)
    except StopSignalError:
        raise
    except (OffsetlakeError, KafkaException) as error:
        # The clusters are already stopped: running_clusters stops them on the way out.
        print(f"offsetlake_dev demo: error: {error}", file=sys.stderr)
        return EXIT_FAILED


def run_demo(home: Path, out: TextIO) -> int:
    """The whole scenario; clusters are stopped at the end whatever happens."""
    progress = Progress(out)
    _fresh_home(home)
    progress.step(f"demo home {home} (fresh); starting local source and target clusters")
    with _local_home(home), running_clusters(home, preferred_ports=None) as clusters:
        progress.step(
            f"clusters up: {SOURCE_ALIAS} (source) {clusters.source.bootstrap_servers}, "
            f"{TARGET_ALIAS} (target) {clusters.target.bootstrap_servers}"
        )
        outcome = _run_scenario(home, clusters, progress)
        progress.step("stopping the clusters")
    return outcome


def _fresh_home(home: Path) -> None:
    """Empty the demo home, but only one this command created: --home must never wipe a real directory."""
    if home.exists() and any(home.iterdir()):
        if not (home / DEMO_HOME_MARKER).exists():
            raise DemoError(f"{home} is not empty and was not created by `make demo`; choose another --home")
        shutil.rmtree(home)
    home.mkdir(parents=True, exist_ok=True)
    (home / DEMO_HOME_MARKER).write_text("created by `make demo`; emptied by its next run\n")


@contextmanager
def _local_home(home: Path) -> Iterator[None]:
    """Point $OFFSETLAKE_HOME at the demo home so the pipeline, apply and SQL share its warehouse."""
    previous = os.environ.get(HOME_ENV)
    os.environ[HOME_ENV] = str(home)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(HOME_ENV, None)
        else:
            os.environ[HOME_ENV] = previous


def _run_scenario(home: Path, clusters: ClusterPair, progress: Progress) -> int:
    source, target = clusters.source.bootstrap_servers, clusters.target.bootstrap_servers
    settings = MirrorSettings(
        source_alias=SOURCE_ALIAS,
        target_alias=TARGET_ALIAS,
        source_bootstrap=source,
        target_bootstrap=target,
        mapping_topic=MAPPING_TOPIC,
        mapping_partitions=MAPPING_PARTITIONS,
        mapped_topics=frozenset({PAYMENTS}),
        traced_topics=frozenset({ORDERS, PAYMENTS}),
    )
    with MirrorSimulator(settings) as simulator:
        committed = _replicate(simulator, progress)
    _show_groups(committed, progress)

    pipeline_ok = _run_pipeline(home, source, target, progress)
    if not pipeline_ok:
        progress.step("RESULT: FAIL (the pipeline failed; nothing was applied)")
        return EXIT_FAILED

    progress.step("starting the local Spark session the plan and apply jobs read gold with")
    # Started here so its log level is lowered before the apply job logs through it.
    get_local_spark(LocalHome(home)).sparkContext.setLogLevel("ERROR")
    _show_replication_lag(home, progress)

    remote_topics = [settings.remote_topic(ORDERS), settings.remote_topic(PAYMENTS)]
    progress.step(
        f"joining a live consumer to {ACTIVE.name} on the target (it keeps running during the apply)"
    )
    with active_member(target, ACTIVE.name, remote_topics):
        apply_ok = _plan_and_apply(home, target, progress)

    progress.step("verifying: one real consumer per applied group joins it on the target and reads on")
    verdicts = _verify_resumed_groups(target, simulator, committed, remote_topics)
    progress.block(_verdict_table(verdicts))
    untouched = _verify_untouched_groups(target, remote_topics, progress)
    _show_methods(home, progress)
    _show_history(home, progress)

    re_reads = sum(verdict.re_reads for verdict in verdicts)
    failed = [verdict for verdict in verdicts if not verdict.ok]
    if verdicts and not failed:
        progress.step(
            "no record skipped: every applied group resumed at or before its first unprocessed record "
            f"({re_reads} records re-read in total; resuming from MM2's own checkpoints would re-read "
            f"{sum(verdict.mm2_re_reads or 0 for verdict in verdicts)})"
        )
    else:
        uncommitted = sum(1 for verdict in failed if verdict.resumed_at is None)
        progress.step(
            f"FAIL: {sum(verdict.skipped for verdict in failed)} records skipped; "
            f"{uncommitted} partitions without a committed offset"
        )
    back_ok = _fail_back(home, clusters, simulator, committed, progress)
    passed = apply_ok and untouched and bool(verdicts) and not failed and back_ok
    progress.step(f"RESULT: {'PASS' if passed else 'FAIL'}")
    return EXIT_OK if passed else EXIT_FAILED


SourcePositions = dict[str, dict[tuple[str, int], int]]
"""Per group: its committed offset per source (topic, partition)."""


def _replicate(simulator: MirrorSimulator, progress: Progress) -> SourcePositions:
    """Replicate over the rounds while the groups move on the source; returns their final positions."""
    simulator.create_topic(ORDERS, ORDERS_PARTITIONS, preexisting_target_records=PREEXISTING_TARGET_RECORDS)
    simulator.create_topic(PAYMENTS, PAYMENTS_PARTITIONS)
    progress.step(
        f"topics: {ORDERS} ({ORDERS_PARTITIONS} partitions; the target copy already holds "
        f"{PREEXISTING_TARGET_RECORDS} records per partition), {PAYMENTS} ({PAYMENTS_PARTITIONS} partitions; "
        f"K2K record mappings to {MAPPING_TOPIC}); both carry K2K's record-tracing headers "
        "(k2k_topic, k2k_partition, k2k_offset)"
    )
    partitions = [(ORDERS, p) for p in range(ORDERS_PARTITIONS)] + [
        (PAYMENTS, p) for p in range(PAYMENTS_PARTITIONS)
    ]
    positions: SourcePositions = {group.name: {} for group in GROUPS}
    for number, replication_round in enumerate(ROUNDS, start=1):
        produced = simulator.produce(
            ORDERS,
            replication_round.orders_per_partition,
            transaction_size=replication_round.transaction_size,
            filter_every=replication_round.filter_every,
        )
        produced += simulator.produce(PAYMENTS, replication_round.payments_per_partition)
        report = simulator.replicate()
        promoted = simulator.commit()

        ends = {key: simulator.source_log_end(*key) for key in partitions}
        moves: dict[str, dict[tuple[str, int], int]] = {CAUGHT_UP.name: ends}
        if number == 1:
            moves[FAR_BEHIND.name] = {key: end * 3 // 10 for key, end in ends.items()}
        if number == 2:
            moves[ACTIVE.name] = {key: end // 2 for key, end in ends.items()}
        if number == len(ROUNDS):
            moves[EXCLUDED.name] = ends
        for group, offsets in moves.items():
            simulator.commit_source_group(group, offsets)
            positions[group] = dict(offsets)
        checkpoints = simulator.emit_checkpoints(group.name for group in GROUPS)
        progress.step(
            f"commit interval {number}/{len(ROUNDS)}: {replication_round.description}; "
            f"produced {produced}, replicated {report.replicated} ({report.filtered} filtered), "
            f"offset syncs {len(report.offset_syncs)} immediate + {len(promoted)} at commit, "
            f"checkpoints {len(checkpoints)}, K2K mappings {report.mappings}"
        )
    truth = simulator.ground_truth
    rows = []
    for topic, partition in partitions:
        records = truth.records(topic, partition)
        rows.append(
            (
                f"{topic}[{partition}]",
                simulator.source_log_end(topic, partition),
                len(records),
                records[-1].target_offset + 1 if records else None,
                len(simulator.retained_offset_syncs(topic, partition)),
                sum(
                    1 for sync in simulator.offset_syncs if (sync.topic, sync.partition) == (topic, partition)
                ),
            )
        )
    progress.step("source and target offsets now diverge (ground truth recorded for every record):")
    progress.block(
        render.table(
            (
                "partition",
                "source log end",
                "replicated",
                "target log end",
                "syncs MM2 holds",
                "syncs written",
            ),
            rows,
        )
    )
    return positions


def _show_groups(positions: SourcePositions, progress: Progress) -> None:
    progress.step("consumer groups on the source:")
    rows = [
        (
            group.name,
            group.role,
            " ".join(str(positions[group.name][(ORDERS, p)]) for p in range(ORDERS_PARTITIONS)),
            " ".join(str(positions[group.name][(PAYMENTS, p)]) for p in range(PAYMENTS_PARTITIONS)),
            group.expectation.value,
        )
        for group in GROUPS
    ]
    progress.block(
        render.table(("group", "role", f"{ORDERS} p0 p1 p2", f"{PAYMENTS} p0 p1", "expected"), rows)
    )


_EXPECTED_REFUSED = frozenset(
    group.name for group in GROUPS if group.expectation is Expectation.REFUSED_ACTIVE
)


def _plan_and_apply(home: Path, target: str, progress: Progress) -> bool:
    """`offsetlake plan`, then `offsetlake apply --active-group-policy skip`; True if apply succeeded.
    Their audit, written without Spark, is then folded into apply_audit (the demo's session is open)."""
    ok = True
    layout = LocalHome(home)
    for command in ("plan", "apply"):
        request = ApplyRequest(
            dry_run=command == "plan",
            target_bootstrap_servers=target,
            active_group_policy=ActiveGroupPolicy.SKIP,
        )
        progress.step(f"offsetlake {command} --target-bootstrap-servers {target} --active-group-policy skip")
        with contextlib.closing(gold_store_for(request, layout)) as store:
            result = run_apply(request, store=store)
        out, err = render.apply_report(result)
        progress.block("\n".join(out + err))
        refused = {row.consumer_group for row in result.not_placed}
        expected = result.status is ApplyStatus.OK or (
            result.status is ApplyStatus.REFUSED and refused <= _EXPECTED_REFUSED
        )
        if not expected:
            progress.step(f"offsetlake {command} exited with status {int(result.status)}")
            ok = False
        elif result.status is not ApplyStatus.OK:
            progress.step(
                f"offsetlake {command} exited with status {int(result.status)}, as expected: it names the "
                f"partitions it left alone ({', '.join(sorted(refused))})"
            )
    fold_journal(get_local_spark(layout), layout)
    return ok


def _verify_resumed_groups(
    target: str,
    simulator: MirrorSimulator,
    positions: SourcePositions,
    remote_topics: Sequence[str],
) -> list[PartitionVerdict]:
    """Resume every applied group with a real consumer (concurrently: each join takes seconds)."""
    truth = simulator.ground_truth
    source_topic = {simulator.settings.remote_topic(topic): topic for topic in (ORDERS, PAYMENTS)}
    mm2_checkpoints = {(c.group, c.topic, c.partition): c.downstream_offset for c in simulator.checkpoints}
    applied = [group for group in GROUPS if group.expectation is Expectation.APPLIED]
    with ThreadPoolExecutor(max_workers=len(applied)) as pool:
        resumed = dict(
            zip(
                [group.name for group in applied],
                pool.map(lambda group: resume_group(target, group.name, remote_topics), applied),
                strict=True,
            )
        )
    verdicts = []
    for group in applied:
        for (topic, partition), read in sorted(resumed[group.name].items()):
            upstream_topic = source_topic[topic]
            source_committed = positions[group.name][(upstream_topic, partition)]
            owed = truth.first_unprocessed(upstream_topic, partition, source_committed)
            checkpoint = mm2_checkpoints.get((group.name, topic, partition))
            assessment = (
                None
                if read.committed_offset is None
                else truth.assess_resume(
                    upstream_topic, partition, source_committed, read.committed_offset, read.values
                )
            )
            verdicts.append(
                PartitionVerdict(
                    group=group.name,
                    topic=topic,
                    partition=partition,
                    source_committed=source_committed,
                    owed="none (caught up)"
                    if owed is None
                    else f"{owed.source_offset} -> {owed.target_offset}",
                    mm2_checkpoint=checkpoint,
                    mm2_re_reads=None
                    if checkpoint is None
                    else sum(
                        1
                        for record in truth.records(upstream_topic, partition)
                        if record.source_offset < source_committed and record.target_offset >= checkpoint
                    ),
                    resumed_at=read.committed_offset,
                    records_read=assessment.records_read if assessment else 0,
                    re_reads=assessment.re_reads if assessment else 0,
                    skipped=len(assessment.skipped) if assessment else 0,
                    ok=assessment is not None and assessment.ok,
                )
            )
    return verdicts


def _fail_back(
    home: Path, clusters: ClusterPair, forward: MirrorSimulator, before: SourcePositions, progress: Progress
) -> bool:
    """The round trip: the applied groups consume on the target and commit there, producers write
    its own topic, the source comes back with a reverse flow, ``offsetlake failback``; then a real
    group's committed positions on the source must be at or before its first unprocessed record:
    the later of where it stood on the source before the outage and the source record of the first
    replicated record it had not read on the target (the simulators' ground truth)."""
    source, target = clusters.source.bootstrap_servers, clusters.target.bootstrap_servers
    applied = [group for group in GROUPS if group.expectation is Expectation.APPLIED]
    remote = {forward.settings.remote_topic(topic): topic for topic in (ORDERS, PAYMENTS)}
    on_target = _consume_on_target(target, forward, applied, list(remote))
    reverse_settings = MirrorSettings(TARGET_ALIAS, SOURCE_ALIAS, target, source)
    with MirrorSimulator(reverse_settings) as reverse:
        reverse.create_topic(REFUNDS, 1)
        reverse.produce(REFUNDS, REFUNDS_RECORDS)
        for index, group in enumerate(applied):  # the first reads part of it, the others all of it
            read = REFUNDS_RECORDS * 3 // 5 if index == 0 else REFUNDS_RECORDS
            reverse.commit_source_group(group.name, {(REFUNDS, 0): read})
            on_target[group.name][(REFUNDS, 0)] = read
        reverse.replicate()
        reverse.commit()
        checkpoints = reverse.emit_checkpoints(group.name for group in applied)
        progress.step(
            f"the outage ends: a reverse flow {TARGET_ALIAS} -> {SOURCE_ALIAS} replicates {REFUNDS} "
            f"({REFUNDS_RECORDS} records written on the target during the outage) to "
            f"{reverse_settings.remote_topic(REFUNDS)} and checkpoints the groups ({len(checkpoints)}); "
            f"MM2 never copies {SOURCE_ALIAS}.<topic> back"
        )
    settings = pipeline_settings(source, target)
    request = FailbackRequest(
        # A group still at its pre-outage position on the source, ahead of where its records on the
        # target lead back (the offset syncs bound the way back from below), is moved back to that
        # position: a re-read, counted; without it the rewind is refused and the failback INCOMPLETE.
        apply=ApplyRequest(dry_run=False, target_bootstrap_servers=source, allow_rewind=True),
        source_alias=SOURCE_ALIAS,
        source_config={"bootstrap.servers": source},
        target_alias=TARGET_ALIAS,
        target_config={"bootstrap.servers": target},
        tracing=K2KTracing(settings.k2k_tracing_routes, settings.k2k_tracing_headers),
    )
    progress.step(
        f"offsetlake failback --target {target} --target-alias {TARGET_ALIAS} "
        f"--source {SOURCE_ALIAS}={source}"
    )
    with contextlib.closing(gold_store_for(request.apply, LocalHome(home))) as store:
        result = run_failback(request, store=store)
    out, err = render.apply_report(result.apply)
    progress.block("\n".join(report_lines(result) + out + err))
    fold_journal(get_local_spark(LocalHome(home)), LocalHome(home))
    progress.step("verifying each group's committed positions on the source against the ground truth")
    admin = AdminClient({"bootstrap.servers": source})
    rows, ok = [], result.status is ApplyStatus.OK
    for group in applied:
        listed = kafka_admin.list_committed_offsets(admin, group.name, timeout_s=_TIMEOUT_S)
        for (topic, partition), resumed in sorted(listed.items()):
            if topic in (ORDERS, PAYMENTS):
                committed = on_target[group.name][(forward.settings.remote_topic(topic), partition)]
                owed = max(
                    before[group.name][(topic, partition)], _origin(forward, topic, partition, committed)
                )
            elif topic == reverse_settings.remote_topic(REFUNDS):
                committed = on_target[group.name][(REFUNDS, partition)]
                record = reverse.ground_truth.first_unprocessed(REFUNDS, partition, committed)
                owed = REFUNDS_RECORDS if record is None else record.target_offset
            else:
                continue
            good = resumed.offset <= owed
            ok = ok and good
            rows.append((group.name, topic, partition, committed, owed, resumed.offset, owed - resumed.offset,
                         "ok" if good else "FAIL"))  # fmt: skip
    ok = ok and len(rows) == len(applied) * (ORDERS_PARTITIONS + PAYMENTS_PARTITIONS + 1)
    headers = ("group", "source topic", "partition", "committed on target", "first unprocessed on source",
               "resumed at", "offsets re-read", "verdict")  # fmt: skip
    progress.block(render.table(headers, rows))
    progress.step(
        "failback: every group resumed on the source at or before its first unprocessed record"
        if ok
        else f"FAIL: failback exited with status {int(result.status)} or a group would skip"
    )
    return ok


def _consume_on_target(
    target: str, forward: MirrorSimulator, applied: Sequence[DemoGroup], remote_topics: Sequence[str]
) -> SourcePositions:
    """The applied groups read on during the outage: each commits two thirds of the way from where
    the failover put it to the log end (its positions on the target, per target topic)."""
    admin = AdminClient({"bootstrap.servers": target})
    positions: SourcePositions = {}
    for group in applied:
        listed = kafka_admin.list_committed_offsets(admin, group.name, timeout_s=_TIMEOUT_S)
        moved = {}
        for (topic, partition), committed in listed.items():
            if topic in remote_topics:
                records = forward.ground_truth.records(_source_topic(forward, topic), partition)
                end = records[-1].target_offset + 1
                moved[(topic, partition)] = replace(
                    committed, offset=committed.offset + (end - committed.offset) * 2 // 3
                )
        errors = kafka_admin.alter_committed_offsets(admin, group.name, moved, timeout_s=_TIMEOUT_S)
        if errors:
            raise DemoError(f"{group.name} could not commit on the target: {errors}")
        positions[group.name] = {key: committed.offset for key, committed in moved.items()}
    return positions


def _source_topic(forward: MirrorSimulator, remote: str) -> str:
    return next(topic for topic in (ORDERS, PAYMENTS) if forward.settings.remote_topic(topic) == remote)


def _origin(forward: MirrorSimulator, topic: str, partition: int, committed: int) -> int:
    """The source offset of the first replicated record at or after ``committed`` on the target;
    past them all, the last one's + 1."""
    records = forward.ground_truth.records(topic, partition)
    after = [record.source_offset for record in records if record.target_offset >= committed]
    return after[0] if after else records[-1].source_offset + 1


def _verdict_table(verdicts: Sequence[PartitionVerdict]) -> str:
    rows = [
        (
            verdict.group,
            verdict.topic,
            verdict.partition,
            verdict.source_committed,
            verdict.owed,
            verdict.mm2_checkpoint,
            verdict.resumed_at,
            verdict.records_read,
            verdict.re_reads,
            verdict.skipped,
            "ok"
            if verdict.ok
            else ("FAIL: no committed offset" if verdict.resumed_at is None else "FAIL: skipped"),
        )
        for verdict in verdicts
    ]
    headers = (
        "group",
        "topic",
        "partition",
        "source committed",
        "first unprocessed (source -> target)",
        "MM2 checkpoint",
        "resumed at",
        "read",
        "re-read",
        "skipped",
        "verdict",
    )
    return render.table(headers, rows)


def _verify_untouched_groups(target: str, remote_topics: Sequence[str], progress: Progress) -> bool:
    """The refused and the excluded group must have no offsets on the target: apply left them alone."""
    admin = AdminClient({"bootstrap.servers": target})
    ok = True
    for group in (ACTIVE, EXCLUDED):
        listed = kafka_admin.list_committed_offsets(admin, group.name, timeout_s=_TIMEOUT_S)
        committed = {key: offset for key, offset in listed.items() if key[0] in remote_topics}
        if committed:
            ok = False
            shown = ", ".join(
                f"{topic}[{partition}]={c.offset}" for (topic, partition), c in committed.items()
            )
            progress.step(
                f"FAIL {group.name}: {group.expectation.value}, yet it has offsets on the target: {shown}"
            )
        else:
            progress.step(
                f"{group.name}: {group.expectation.value}; its target offsets are untouched (none committed)"
            )
    return ok


def _show_methods(home: Path, progress: Progress) -> None:
    """Every method's current translation of one partition per topic, side by side: checkpoints and
    offset syncs (MM2), record mappings and tracing headers (K2K)."""
    query = (
        "SELECT consumer_group, topic, `partition`, method, upstream_offset, downstream_offset "
        f"FROM {LOCAL_SCHEMA}.offset_history WHERE valid_to IS NULL AND `partition` = 0 "
        "ORDER BY consumer_group, topic, method"
    )
    progress.step(f'every method\'s current translation of partition 0: offsetlake sql "{query}"')
    rows = get_local_spark(LocalHome(home)).sql(query).collect()
    progress.block(
        render.table(list(rows[0].asDict()) if rows else ["(no rows)"], [tuple(row) for row in rows])
    )


def _show_history(home: Path, progress: Progress) -> None:
    """One offset-history query: how the translations of one partition changed over the run."""
    topic, partition = HISTORY_TOPIC_PARTITION
    query = (
        "SELECT consumer_group, method, upstream_offset, downstream_offset, "
        "date_format(valid_from, 'HH:mm:ss.SSS') AS valid_from, "
        "date_format(valid_to, 'HH:mm:ss.SSS') AS valid_to "
        f"FROM {LOCAL_SCHEMA}.offset_history WHERE topic = '{topic}' AND `partition` = {partition} "
        "ORDER BY consumer_group, method, valid_from"
    )
    progress.step(f'offset history of {topic}[{partition}]: offsetlake sql "{query}"')
    rows = get_local_spark(LocalHome(home)).sql(query).collect()
    progress.block(
        render.table(list(rows[0].asDict()) if rows else ["(no rows)"], [tuple(row) for row in rows])
    )


def _show_replication_lag(home: Path, progress: Progress) -> None:
    """How far MM2 is behind per source partition (gold replication_progress): the figure MM2 itself
    cannot give, since it has no consumer group."""
    query = (
        "SELECT source_cluster, topic, `partition`, status, upstream_offset, log_end_offset, lag_records, "
        "lag_seconds, date_format(last_progress_at, 'HH:mm:ss') AS last_progress "
        f"FROM {LOCAL_SCHEMA}.replication_progress ORDER BY source_cluster, topic, `partition`"
    )
    progress.step(f'replication lag (MM2 has no consumer group, so no lag metric): offsetlake sql "{query}"')
    rows = get_local_spark(LocalHome(home)).sql(query).collect()
    progress.block(
        render.table(list(rows[0].asDict()) if rows else ["(no rows)"], [tuple(row) for row in rows])
    )


def pipeline_settings(source: str, target: str) -> PipelineSettings:
    """The demo's pipeline over the two clusters (also what bench_update times)."""
    return PipelineSettings(
        target_bootstrap_servers=target,
        target_alias=TARGET_ALIAS,
        sources=(ClusterEndpoint(SOURCE_ALIAS, source),),
        mappings_topics=(MappingTopic(SOURCE_ALIAS, MAPPING_TOPIC),),
        # MM2's default policy names the copies <alias>.<topic>; the simulated K2K writes its tracing
        # headers on those same records.
        k2k_tracing_routes=(TracingRoute(SOURCE_ALIAS, f"{SOURCE_ALIAS}.{TOPIC_PLACEHOLDER}"),),
    )


def _run_pipeline(home: Path, source: str, target: str, progress: Progress) -> bool:
    """One pipeline update over both clusters (spark-pipelines in a subprocess); True if it succeeded."""
    settings = pipeline_settings(source, target)
    progress.step("running the pipeline (spark-pipelines: bronze -> silver -> gold); progress lines follow")

    shown: set[str] = set()

    def echo(line: str) -> None:
        # Only run-level events, failures and progress (spark-pipelines may print an event twice).
        run_level = "Run is" in line or "Run has" in line or "FAILED" in line
        if (run_level or is_progress(line)) and line not in shown:
            shown.add(line)
            progress.step(f"pipeline: {line}")

    result = run_pipeline(settings, LocalHome(home), echo=echo)
    rows = [(flow.name, flow.state, f"{flow.seconds:.1f}") for flow in result.flows]
    progress.block(render.table(("flow", "state", "seconds"), rows))
    verdict = "succeeded" if result.succeeded else "FAILED"
    progress.step(
        f"pipeline {verdict} in {result.seconds:.1f}s: {result.explanation} (log: {result.log_path})"
    )
    return result.succeeded
