"""Everything the command line prints: tables (one printer, tabulate), plan and apply summaries.

Rendering is kept apart from the runs so the demo, the CLI and the Databricks task print the same
lines from the same typed results.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Final

from tabulate import tabulate

from offsetlake.apply.executor import Outcome, PartitionResult
from offsetlake.apply.phases import PhaseTimes
from offsetlake.apply.placement import METHOD as PLACEMENT_METHOD
from offsetlake.apply.planner import Action, PlanRow, Untranslated
from offsetlake.apply.reasons import Flag
from offsetlake.apply.run import ApplyResult, ApplyStatus
from offsetlake.contract.gold import ClusterHealth, GroupDataLoss
from offsetlake.durations import format_duration
from offsetlake.failover.run import ClusterCheck, FailoverResult
from offsetlake.local.pipeline_update import PipelineRunResult
from offsetlake.mm2_reset.plan import ResetAction, Truncation
from offsetlake.mm2_reset.run import ResetResult, RestReset, TombstoneReset

DETAIL_GROUPS: Final = 20
"""Groups a report lists one by one unless ``--details``: past it, a fleet's report is its summary."""
_SHOWN_REFUSALS: Final = 10

PLAN_HEADERS = (
    "group",
    "type",
    "topic",
    "partition",
    "current",
    "translated",
    "planned",
    "action",
    "re-read",
    "skip",
    "method",
    "age",
    "reason",
)


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], *, missing: str = "-") -> str:
    """Aligned columns under a rule, numbers right-aligned: plans, verdicts, flows, cluster status."""
    return tabulate(list(rows), headers=list(headers), tablefmt="simple", missingval=missing)


def sql_table(columns: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A query result as SQL shells print it (NULL for None), with its row count."""
    body = tabulate(
        [list(row) for row in rows],
        headers=list(columns),
        tablefmt="presto",
        missingval="NULL",
        disable_numparse=True,
    )
    return f"{body}\n({len(rows)} row{'' if len(rows) == 1 else 's'})"


def sql_json(results: Sequence[tuple[Sequence[str], Sequence[Sequence[object]]]]) -> str:
    """Several query results as one JSON document (bytes as hex, timestamps as ISO text)."""
    return json.dumps(
        [
            {"columns": list(columns), "rows": [[_json_value(value) for value in row] for row in rows]}
            for columns, rows in results
        ]
    )


def plan_table(plan: Sequence[PlanRow], now: datetime) -> str:
    """One line per group-partition: where it is, where gold says, what the run does and why."""
    return table(
        PLAN_HEADERS,
        [
            (
                row.consumer_group,
                row.group_type or None,
                row.topic,
                row.partition,
                row.current_offset,
                row.translated_offset,
                row.planned_offset,
                row.action.value,
                row.records_reread,
                row.records_skipped,
                row.method or None,
                _age(row.age(now)),
                row.reason,
            )
            for row in plan
        ],
    )


def apply_report(result: ApplyResult, *, details: bool = False) -> tuple[list[str], list[str]]:
    """(stdout lines, stderr lines) for a plan or apply run, secrets masked; the per-partition plan
    or per-group lines only for a few groups or with ``details``."""
    per_group = details or _group_count(result) <= DETAIL_GROUPS
    scrub = result.scrubber.scrub
    out: list[str] = [cluster_health_line(health, result.reference_time) for health in result.health]
    out += tail_lines(result)
    out += k2k_search_lines(result)
    out += placement_lines(result)
    if result.nothing_selected:
        out.append(f"run {result.run_id}: no gold offsets match the selection; nothing to do")
        if result.data_loss:  # groups with no translation can still lose records
            out.append(data_loss_table(result.data_loss, details=details))
    elif result.gold_rows == 0:
        pass  # the problem line says why
    elif result.request.dry_run:
        out += outcome_summary(result)
        if per_group:
            out.append(plan_table(result.plan, result.reference_time))
        out.append(_plan_totals(result))
        if result.keep_alive:
            out.append(result.keep_alive)
        if result.data_loss:
            out.append(data_loss_table(result.data_loss, details=details))
        if result.refusing_groups:
            refusing = ", ".join(result.refusing_groups)
            out.append(f"note: `apply` would refuse: active groups on the target: {refusing}")
    elif result.status is not ApplyStatus.REFUSED or result.results:
        out += outcome_summary(result)
        if per_group:
            out.extend(group_summaries(result.plan, result.results))
        out.append(_apply_totals(result))
    out.append(phase_line(result.phases))
    return [scrub(line) for line in out], [scrub(line) for line in result.problems]


def failover_report(result: FailoverResult, *, details: bool = False) -> tuple[list[str], list[str]]:
    """The failover's one report: refresh, clusters, the outcome summary, per group (a few groups or
    ``details``), verdict. (stdout, stderr) lines."""
    applied = result.apply
    scrub = applied.scrubber.scrub
    out = ["", "== offsetlake failover report =="]
    out += [probe_line(check) for check in result.checks]
    out += [result.probe_beside] if result.probe_beside else []
    out += refresh_lines(result)
    out += [cluster_health_line(health, applied.reference_time) for health in applied.health]
    out += tail_lines(applied)
    out += live_lines(applied)
    out += k2k_search_lines(applied)
    out += placement_lines(applied)
    if applied.plan:
        out += outcome_summary(applied)
        if details or _group_count(applied) <= DETAIL_GROUPS:
            out.append(group_table(applied))
    if applied.data_loss:
        out.append(data_loss_table(applied.data_loss, details=details))
    elif applied.nothing_selected:
        out.append("no gold offsets match the selection; nothing to do")
    out.append(_apply_totals(applied) if applied.plan else f"run {applied.run_id}: nothing applied")
    out.append(phase_line(result.phases))
    status = ApplyStatus(applied.status)
    label = {
        ApplyStatus.OK: "FAILOVER DONE: every selected partition is in place on the target",
        ApplyStatus.FAILED: "FAILOVER INCOMPLETE: see the errors; a rerun converges",
        ApplyStatus.REFUSED: "FAILOVER REFUSED: groups are active on the target; stop them or use "
        f"{Flag.ACTIVE_GROUP_POLICY} skip",
        ApplyStatus.INCOMPLETE: f"FAILOVER INCOMPLETE: {len(applied.not_placed)} partitions not placed "
        "(listed above, every one in the audit); their consumers would start where auto.offset.reset "
        "says",
    }[status]
    out.append(f"{label} (exit {int(status)})")
    return [scrub(line) for line in out], [scrub(line) for line in applied.problems]


def phase_line(times: PhaseTimes) -> str:
    """``time by phase: probe 5.0s, refresh -, gold 0.2s, ...; total 7.4s``: where the run's time
    went, ``-`` for a phase skipped this time."""
    phases = ", ".join(
        f"{name} {'-' if seconds is None else f'{seconds:.1f}s'}" for name, seconds in times.phases
    )
    return f"time by phase: {phases}; total {times.total:.1f}s"


def probe_line(check: ClusterCheck) -> str:
    """``cluster dr (target): reachable now (0.1s)`` or ``... NOT ANSWERING now (10.0s): <error>``."""
    line = f"cluster {check.name} ({check.role}): "
    if check.probe.reachable:
        return line + f"reachable now ({check.probe.seconds:.1f}s)"
    return line + f"NOT ANSWERING now ({check.probe.seconds:.1f}s): {check.probe.error}"


def refresh_lines(result: FailoverResult) -> list[str]:
    """What the refresh did. Flows that completed after the engine restarted them count as completed
    (with the restarts counted): a restarted stream resumes from its checkpoint."""
    refresh = result.refresh
    if refresh is None:
        return [f"refresh: skipped ({result.refresh_skipped})"]
    if refresh.succeeded:
        restarts = f" after {refresh.restarts} flow restart(s)" if refresh.restarts else ""
        verdict = f"completed{restarts}"
    else:
        verdict = "FAILED"
    lines = [f"refresh: {verdict} in {refresh.seconds:.1f}s: {refresh.explanation} (log: {refresh.log_path})"]
    if refresh.restored_tables:
        lines.append(f"refresh: gold kept as it was before: {', '.join(refresh.restored_tables)}")
    return lines


def live_lines(result: ApplyResult) -> list[str]:
    """What reading the sources now added to gold, and what could not be read."""
    live = result.live
    if live is None:
        return []
    merged, prefix = live.merge, "sources read now"
    read = ", ".join(sorted(live.snapshots)) or "none"
    lines = [
        f"{prefix} ({read}): {merged.snapshots:,} group-partition(s) committed, {merged.translated:,} "
        f"translated by offset syncs ({merged.new_syncs:,} sync record(s) beyond the pipeline's), "
        f"{merged.replaced:,} newer than gold (method `offset_sync (tail)`; in offset_history after the "
        "next pipeline update)"
    ]
    if merged.rejected:
        lines.append(f"{prefix}: {merged.rejected:,} offset-sync record(s) did not decode: not used")
    lines += [f"{prefix}: {alias}: {why}" for alias, why in live.gaps]
    return lines


def k2k_search_lines(result: ApplyResult) -> list[str]:
    """What searching the newest group snapshots on K2K's tracing headers added to gold, the searches
    of snapshots older than gold's row, the searches a bound cut short with what was used instead,
    and the first few searches that gave no translation (gold's row stands for those)."""
    searched = result.k2k_search
    if searched is None:
        return []
    prefix = "K2K tracing headers on the target"
    lines = [
        f"{prefix}: {searched.searched:,} group-partition(s) searched now, "
        f"{searched.replaced:,} translated more freshly than gold (method `k2k_tracing_headers (tail)`)"
    ]
    if searched.older:
        lines.append(
            f"{prefix}: {searched.older:,} searched snapshot(s) older than gold's translation of the same "
            "method: gold's kept"
        )
    cut = searched.cut_short
    if cut.total:
        lines.append(
            f"{prefix}: {cut.total:,} search(es) CUT SHORT by their bounds (--timeout "
            f"{result.request.timeout_s:g} s a partition and in all): {cut.searched:,} use the records "
            f"read so far (safe, may re-read more), {cut.gold:,} gold's translation, {cut.none:,} none"
        )
    shown = searched.unanswered[:_SHOWN_UNANSWERED]
    lines += [f"{prefix}: no translation: {reason}" for reason in shown]
    if len(searched.unanswered) > len(shown):
        lines.append(f"{prefix}: ... and {len(searched.unanswered) - len(shown):,} more")
    return lines


_SHOWN_UNANSWERED = 5


def placement_lines(result: ApplyResult) -> list[str]:
    """Where the partitions source groups committed are known from, those no method translates,
    and the sources whose newest checkpoints could not be read: what DONE rests on."""
    request, lines = result.request, []
    for source, why in result.unread_sources:
        verdict = (
            f"planned from gold as it is ({Flag.ACCEPT_GOLD_WITHOUT_TAIL})"
            if request.accept_gold_without_tail
            else f"its partitions are REFUSED (pass {Flag.ACCEPT_GOLD_WITHOUT_TAIL} to plan from gold)"
        )
        lines.append(f"checkpoint tail: {source}: {why}: {verdict}")
    if result.snapshots == 0 and request.checkpoint_tail is not None:  # an outage's path
        lines.append(
            "known partitions: gold holds no group snapshot (the source was never read): a partition a "
            "group committed without an MM2 checkpoint is unknown and cannot be placed; "
            f"{result.partial_groups} group(s) have checkpoints on only some partitions of a topic"
        )
    if result.untranslated:
        what = (
            "placed at the target partition's log start (re-read, never skipped)"
            if request.untranslated is Untranslated.EARLIEST
            else f"refused ({Flag.UNTRANSLATED} {Untranslated.REFUSE})"
        )
        lines.append(
            f"known partitions: {result.untranslated} partition(s) source groups committed have no "
            f"translation: {what} (method `{PLACEMENT_METHOD}`)"
        )
    return lines


def tail_lines(result: ApplyResult) -> list[str]:
    """What the target's checkpoint topics added to gold: the topics read, the partitions that could
    not be, the records that could not be used, and a plain word when no topic matched the policy
    while gold holds checkpoint translations."""
    merged = result.tail_merge
    if merged is None:
        return []
    topics = ", ".join(merged.topics) if merged.topics else "none"
    lines = [
        f"checkpoint tail: {merged.records} record(s) read from the log start of "
        f"{len(merged.topics)} topic(s) ({topics}), {merged.replaced} group-partition(s) newer than gold "
        "(method `checkpoint (tail)`; in offset_history after the next pipeline update)"
    ]
    policy = result.request.checkpoint_tail
    if not merged.topics and merged.gold_checkpoints and policy is not None:
        example = policy.checkpoints_topic("<alias>")
        lines.append(
            f"checkpoint tail: NO topic named like {example} while gold holds "
            f"{merged.gold_checkpoints} checkpoint translation(s): the replication policy may not be "
            "the pipeline's (--set offsetlake.replication.separator=...); planned from gold alone"
        )
    for part in merged.unreadable:
        where = part.topic if part.partition < 0 else f"{part.topic}-{part.partition}"
        lines.append(f"checkpoint tail: {where} NOT READ, none of its records used: {part.reason}")
    if merged.rejected:
        first = merged.rejected[0]
        lines.append(
            f"checkpoint tail: {len(merged.rejected)} record(s) not decodable, not applied (the "
            f"pipeline quarantines them); first {first.topic}-{first.partition}@{first.offset}: {first.error}"
        )
    return lines


MM2_RESET_HEADERS = ("source partition", "stored offset", "kafka partition", "java partition", "action")
MM2_REST_RESET_HEADERS = ("source partition", "stored offset", "action")
_MM2_RESET_ERROR = "offsetlake mm2 reset-offsets: error:"


def mm2_reset_report(result: ResetResult) -> tuple[list[str], list[str]]:
    """(stdout lines, stderr lines) for ``mm2 reset-offsets``: the reset, then the truncation."""
    request = result.request
    out: list[str] = []
    err: list[str] = []
    if result.tombstones is not None:
        _mm2_tombstone_lines(result, result.tombstones, out, err)
    if result.rest is not None:
        _mm2_rest_lines(result, result.rest, out, err)
    if result.truncation is not None:
        out.append(mm2_truncation_table(result.truncation, executed=result.executed))
        topic = request.truncate_offset_syncs
        if result.error is not None:
            pass  # the caller raises it: the truncation's verdict is not known
        elif result.not_truncated:
            err.append(f"{_MM2_RESET_ERROR} {topic} partitions {result.not_truncated} still hold records")
        else:
            verdict = "deleted and verified" if result.executed else "dry run, nothing deleted"
            records = sum(row.records for row in result.truncation)
            out.append(f"{topic}: {records} offset-sync records; {verdict}")
    return out, err


def mm2_truncation_table(rows: Sequence[Truncation], *, executed: bool) -> str:
    """One line per partition of the offset-syncs topic: its log, and its log start after a truncation."""
    return table(
        ("partition", "log start", "log end", "records deleted" if executed else "records to delete",
         "log start after"),
        [(row.partition, row.log_start, row.log_end, row.records, row.log_start_after) for row in rows],
    )  # fmt: skip


def _mm2_tombstone_lines(result: ResetResult, reset: TombstoneReset, out: list[str], err: list[str]) -> None:
    request = result.request
    out.append(
        table(
            MM2_RESET_HEADERS,
            [
                (
                    row.source_partition_json,
                    row.stored_offset_json,
                    row.stored.partition,
                    row.java_partition,
                    row.action.value,
                )
                for row in reset.rows
            ],
        )
    )
    counts = {action: sum(row.action == action for row in reset.rows) for action in ResetAction}
    summary = ", ".join(f"{action.value} {count}" for action, count in counts.items() if count)
    mode = "executed" if result.executed else "dry run, nothing written"
    keys = f"{len(reset.rows)} keys ({summary or 'none'})"
    out.append(f"{request.connector} in {request.offsets_topic}: {keys}; {mode}")
    if reset.not_verified:
        err.append(f"{_MM2_RESET_ERROR} {len(reset.not_verified)} tombstones did not verify")
    elif result.executed:
        out.append("verified: every tombstoned key's newest record is a tombstone")


def _mm2_rest_lines(result: ResetResult, reset: RestReset, out: list[str], err: list[str]) -> None:
    request = result.request
    rows = [(row.source_partition_json, row.stored_offset_json, row.action.value) for row in reset.rows]
    out.append(table(MM2_REST_RESET_HEADERS, rows))
    mode = "executed through the Connect REST API" if result.executed else "dry run, nothing changed"
    out.append(f"{request.connector} at {request.connect_url}: {len(reset.rows)} source partitions; {mode}")
    if reset.not_verified:
        err.append(f"{_MM2_RESET_ERROR} {len(reset.not_verified)} source partitions still have an offset")
    elif result.executed:
        url = (request.connect_url or "").rstrip("/")
        out.append(
            f"verified: no selected partition has an offset; the connector is STOPPED: resume it with "
            f"PUT {url}/connectors/{request.connector}/resume"
        )


def group_table(result: ApplyResult) -> str:
    """Per group: partitions applied / unchanged / refused, how and how old, records re-read."""
    by_key = {r.row.key: r for r in result.results}
    rows_by_group: dict[str, list[PlanRow]] = defaultdict(list)
    for row in result.plan:
        rows_by_group[row.consumer_group].append(row)
    lines = []
    for group, rows in sorted(rows_by_group.items()):
        verified = [row for row in rows if row.key in by_key and by_key[row.key].verified]
        # A keep-alive re-commit leaves the offset where it was: unchanged, not applied.
        unchanged = [row for row in rows if row.action is Action.NOOP] + [
            row for row in verified if row.action is Action.REFRESH_RETENTION
        ]
        verified = [row for row in verified if row.action is not Action.REFRESH_RETENTION]
        refused = [row for row in rows if row not in verified and row not in unchanged]
        ages = [age for row in rows if (age := row.age(result.reference_time)) is not None]
        problems = [by_key[row.key].error or "" for row in refused if row.key in by_key] + [
            row.reason for row in refused if row.key not in by_key
        ]
        lines.append(
            (
                group,
                len(rows),
                len(verified),
                len(unchanged),
                len(refused),
                ",".join(sorted({row.method for row in rows if row.method})) or None,
                _age(max(ages)) if ages else None,
                _records_reread(verified),
                problems[0] if problems else None,
            )
        )
    return table(
        (
            "group",
            "partitions",
            "applied",
            "unchanged",
            "refused",
            "method",
            "oldest",
            "re-read",
            "first refusal",
        ),
        lines,
    )


def outcome_summary(result: ApplyResult) -> list[str]:
    """Partitions by outcome and method, refusals first, then the first refusals with their reasons:
    what a run over a fleet is read by (the per-group table is ``--details``, every row the audit)."""
    by_key = {r.row.key: r for r in result.results}
    buckets: dict[tuple[bool, str, str], list[PlanRow]] = defaultdict(list)
    for row in result.plan:
        buckets[(_refused(row, by_key), _final_status(row, by_key), row.method or "-")].append(row)
    ordered = sorted(buckets.items(), key=lambda item: (not item[0][0], -len(item[1]), item[0][1:]))
    rows = [
        (
            outcome,
            method,
            len({row.consumer_group for row in rows}),
            len(rows),
            None if refused else _moved_reread(rows),
        )
        for (refused, outcome, method), rows in ordered
    ]
    lines = ["by outcome and method (refusals first):", table(("outcome", "method", "groups",
             "partitions", "re-read"), rows)]  # fmt: skip
    refusals = [row for row in result.plan if _refused(row, by_key)]
    if refusals:
        shown = refusals[:_SHOWN_REFUSALS]
        more = (
            f"; {len(refusals) - len(shown)} more in the audit ({result.audit_table})"
            if refusals[len(shown) :]
            else ""
        )
        lines.append(f"refusals ({len(shown)} of {len(refusals)} partitions shown{more}):")
        lines += [
            f"  {row.consumer_group} {row.topic}[{row.partition}]: {_refusal(row, by_key)}" for row in shown
        ]
    return lines


def _moved_reread(rows: Sequence[PlanRow]) -> int | str | None:
    """Records re-read by the rows that move a committed offset (None: none of them moves one)."""
    moved = [
        row
        for row in rows
        if row.action.alters and row.action is not Action.REFRESH_RETENTION and row.current_offset is not None
    ]
    return _records_reread(moved) if moved else None


def _refused(row: PlanRow, results: dict[tuple[str, str, int], PartitionResult]) -> bool:
    """Left where it was for a reason: the planner refused it or its alter did not verify."""
    result = results.get(row.key)
    if result is not None:
        return not result.verified
    return not row.action.alters and row.action is not Action.NOOP


def _refusal(row: PlanRow, results: dict[tuple[str, str, int], PartitionResult]) -> str:
    result = results.get(row.key)
    return (result.error if result is not None and result.error else None) or row.reason or row.action.value


def _group_count(result: ApplyResult) -> int:
    return len({row.consumer_group for row in result.plan})


def _records_reread(verified: Sequence[PlanRow]) -> int | str:
    """Records the group reads again, or ``unknown`` when a moved partition had no position to
    compare with (nothing to say is not zero)."""
    counts = [row.records_reread for row in verified]
    if any(count is None for count in counts):
        return "unknown"
    return sum(count for count in counts if count is not None)


def data_loss_table(losses: Sequence[GroupDataLoss], *, details: bool = False) -> str:
    """What failing over now costs each group: records it consumed that MM2 has not copied (the
    target never saw them), and records it has not consumed that are not on the target (lost).
    Past DETAIL_GROUPS groups (without ``details``): the totals and the groups that lose the most."""
    title = "data loss if failing over now (gold failover_data_loss)"
    if details or len(losses) <= DETAIL_GROUPS:
        return f"{title}:\n" + _data_loss_rows(losses)
    lost = [loss for loss in losses if loss.unconsumed_lost]
    uncopied = [loss for loss in losses if loss.consumed_not_replicated]
    unknown = [loss for loss in losses if loss.partitions_unknown]
    worst = sorted(
        losses,
        key=lambda loss: (-loss.unconsumed_lost, -loss.consumed_not_replicated, -loss.partitions_unknown,
                          loss.consumer_group, loss.source_cluster),
    )[:_SHOWN_WORST]  # fmt: skip
    return "\n".join(
        [
            f"{title}: {len(losses):,} groups, {sum(loss.partitions for loss in losses):,} partitions; "
            f"{sum(loss.unconsumed_lost for loss in lost):,} records unconsumed, lost "
            f"({len(lost):,} groups); {sum(loss.consumed_not_replicated for loss in uncopied):,} "
            f"consumed, not on target ({len(uncopied):,} groups); "
            f"{sum(loss.partitions_unknown for loss in unknown):,} partitions with their position unknown "
            f"({len(unknown):,} groups)",
            f"the {len(worst)} groups that lose the most (unconsumed lost, then consumed not on target, then "
            f"positions unknown); --details lists all {len(losses):,}:",
            _data_loss_rows(worst),
        ]
    )


_SHOWN_WORST = 10


def _data_loss_rows(losses: Sequence[GroupDataLoss]) -> str:
    rows = [
        (
            loss.consumer_group,
            loss.source_cluster,
            loss.partitions,
            loss.consumed_not_replicated,
            loss.unconsumed_lost,
            loss.partitions_unknown or None,
            loss.as_of.isoformat(timespec="seconds") if loss.as_of else None,
        )
        for loss in losses
    ]
    headers = ("group", "source", "partitions", "consumed, not on target", "unconsumed, lost",
               "position unknown", "as of")  # fmt: skip
    return table(headers, rows)


def cluster_health_line(health: ClusterHealth, now: datetime) -> str:
    """``cluster dr (target): reachable at ...`` or ``... UNREACHABLE since ...: <error>``."""
    checked = health.checked_at.isoformat(timespec="seconds")
    line = f"cluster {health.cluster} ({health.role}): "
    if health.reachable:
        return line + f"reachable at the last refresh ({checked})"
    if health.last_reachable_at is None:
        since = "never reachable so far"
    else:
        since = (
            f"last reachable {health.last_reachable_at.isoformat(timespec='seconds')}, "
            f"{_age(now - health.last_reachable_at)} ago"
        )
    return line + f"UNREACHABLE at the last refresh ({checked}; {since}): {health.error}"


def group_summaries(plan: Sequence[PlanRow], results: Sequence[PartitionResult]) -> list[str]:
    """One line per group: how its partitions ended up, records re-read/skipped, the first error."""
    by_key = {result.row.key: result for result in results}
    rows_by_group: dict[str, list[PlanRow]] = defaultdict(list)
    for row in plan:
        rows_by_group[row.consumer_group].append(row)
    lines = []
    for group, rows in sorted(rows_by_group.items()):
        statuses = Counter(_final_status(row, by_key) for row in rows)
        applied = [
            row
            for row in rows
            if row.key in by_key and by_key[row.key].verified and row.action is not Action.REFRESH_RETENTION
        ]
        moved = [row for row in applied if row.current_offset is not None]
        errors = [by_key[row.key].error for row in rows if row.key in by_key and by_key[row.key].error]
        refusals = [row.reason for row in rows if not row.action.alters and row.action is not Action.NOOP]
        line = f"{group}: " + ", ".join(f"{status} {count}" for status, count in sorted(statuses.items()))
        if moved:
            reread = sum(row.records_reread or 0 for row in moved)
            skipped = sum(row.records_skipped or 0 for row in moved)
            line += f" (re-read {reread}, skipped {skipped} records)"
        if len(moved) < len(applied):
            line += f" ({len(applied) - len(moved)} partitions had no committed offset before)"
        if errors:
            line += f"; error: {errors[0]}"
        elif refusals:
            line += f"; {refusals[0]}"
        lines.append(line)
    return lines


def flow_outcomes(result: PipelineRunResult) -> str:
    """Each flow's final state and seconds, then the verdict line."""
    lines = [f"  {outcome.state:<10} {outcome.seconds:6.1f}s  {outcome.name}" for outcome in result.flows]
    verdict = "succeeded" if result.succeeded else "FAILED"
    lines.append(
        f"pipeline {verdict} in {result.seconds:.1f}s: {result.explanation} (log: {result.log_path})"
    )
    return "\n".join(lines)


def _final_status(row: PlanRow, results: dict[tuple[str, str, int], PartitionResult]) -> str:
    result = results.get(row.key)
    if result is None:
        return row.action.value
    if row.action is Action.REFRESH_RETENTION and result.outcome is Outcome.APPLIED:
        return "refreshed"
    return result.outcome.value


def _plan_totals(result: ApplyResult) -> str:
    actions = Counter(row.action.value for row in result.plan)
    groups = len({row.consumer_group for row in result.plan})
    return f"run {result.run_id} (dry run): {groups} groups, {len(result.plan)} partitions: " + ", ".join(
        f"{action} {count}" for action, count in sorted(actions.items())
    )


def _apply_totals(result: ApplyResult) -> str:
    by_key = {r.row.key: r for r in result.results}
    statuses = Counter(_final_status(row, by_key) for row in result.plan)
    groups = len({row.consumer_group for row in result.plan})
    return (
        f"run {result.run_id}: {groups} groups, {len(result.plan)} partitions: "
        + ", ".join(f"{status} {count}" for status, count in sorted(statuses.items()))
        + f"; audit: {result.audit_table}"
    )


def _age(age: timedelta | None) -> str | None:
    return None if age is None else format_duration(age)


def _json_value(value: object) -> object:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex()
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [_json_value(item) for item in value]
    return str(value)
