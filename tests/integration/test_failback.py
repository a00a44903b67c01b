"""`offsetlake failback` on the local pair: real brokers, real Spark (silver_offset_syncs written by
it and read back by the local gold store), replication simulated with per-record ground truth.

The forward flow ``primary -> dr`` (offsetlake_dev.simulate: MM2's syncs over transaction markers,
filtered records and target data that was there before) replicates to ``primary.<topic>`` on
``dr``; consumers committed there during the outage; a reverse flow ``dr -> primary`` replicates
``dr``'s own topic and checkpoints the groups on ``primary``. Failback must put every group on
``primary`` at or before its first unprocessed record, exactly where the history allows it.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from offsetlake.apply.store import SparkGoldStore
from offsetlake.cli.context import Context
from offsetlake.cli.main import run_command
from offsetlake.contract.tables import SILVER_OFFSET_SYNCS
from offsetlake.local.home import LocalHome
from offsetlake.local.warehouse_gold import LocalGoldStore
from offsetlake_dev.simulate import MirrorSettings, MirrorSimulator, ReplicatedRecord
from tests.integration.test_apply import ApplyHarness, harness, position  # noqa: F401 (fixture)
from tests.kafka_helpers import active_consumer, alter_group_offsets

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

PRIMARY, DR = "primary", "dr"
PREEXISTING = 3
"""Records on primary.<topic> before replication: downstream offsets run ahead of upstream ones."""


@dataclass
class Outage:
    """Both flows of one test, its topics and the simulators' ground truth."""

    forward: MirrorSimulator
    reverse: MirrorSimulator
    orders: str
    events: str
    payments: str
    """``dr``'s own topic, produced during the outage; ``dr.<payments>`` on primary."""

    def truth(self, topic: str, committed: int) -> int:
        """The upstream offset of the first replicated record at or after ``committed`` on dr; past
        them all, the last + 1."""
        records: list[ReplicatedRecord] = self.forward.ground_truth.records(topic, 0)
        after = [record.source_offset for record in records if record.target_offset >= committed]
        return after[0] if after else records[-1].source_offset + 1

    def downstream(self, topic: str) -> list[int]:
        return [record.target_offset for record in self.forward.ground_truth.records(topic, 0)]

    def sync_points(self, topic: str) -> list[int]:
        return [sync.downstream_offset for sync in self.forward.offset_syncs if sync.topic == topic]


@pytest.fixture
def outage(
    harness: ApplyHarness,  # noqa: F811
    source_bootstrap: str,
    target_bootstrap: str,
    unique_name: Callable[[str], str],
) -> Iterator[Outage]:
    orders, events, payments = (unique_name(name) for name in ("orders", "events", "payments"))
    forward_settings = MirrorSettings(
        PRIMARY, DR, source_bootstrap, target_bootstrap, offset_lag_max=6, traced_topics=frozenset({events})
    )
    reverse_settings = MirrorSettings(DR, PRIMARY, target_bootstrap, source_bootstrap)
    with MirrorSimulator(forward_settings) as forward, MirrorSimulator(reverse_settings) as reverse:
        for topic in (orders, events):
            forward.create_topic(topic, 1, preexisting_target_records=PREEXISTING)
            forward.produce(topic, 12, transaction_size=4, filter_every=5)  # markers and filtered: gaps
            forward.replicate()
            forward.produce(topic, 10)
            forward.replicate()
            forward.commit()  # the held-back syncs
            forward.produce(topic, 7)
            forward.replicate()  # past the last sync: bounded by the source's log end
        reverse.create_topic(payments, 1)
        reverse.produce(payments, 15)
        reverse.replicate()
        reverse.commit()
        write_offset_syncs(harness, forward)
        yield Outage(forward, reverse, orders, events, payments)


def write_offset_syncs(into: ApplyHarness, forward: MirrorSimulator) -> None:
    """silver_offset_syncs as the pipeline writes it: every sync, in the order MM2 wrote it."""
    now = datetime.now(UTC)
    syncs_topic = forward.settings.offset_syncs_topic
    rows = [
        (PRIMARY, sync.topic, sync.partition, sync.upstream_offset, sync.downstream_offset, now,
         syncs_topic, 0, index, now)
        for index, sync in enumerate(forward.offset_syncs)
    ]  # fmt: skip
    into._overwrite(SILVER_OFFSET_SYNCS.name, rows, SILVER_OFFSET_SYNCS.schema_ddl)


def failback(on: ApplyHarness, source: str, target: str, *options: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    argv = ["failback", "--schema", on.schema, "--target", target, "--target-alias", DR,
            "--source", f"{PRIMARY}={source}", "--timeout", "10", *options]  # fmt: skip
    code = run_command(argv, Context(out=out, err=err))
    return code, out.getvalue() + err.getvalue()


def test_failback_puts_every_group_at_or_before_its_first_unprocessed_record(
    harness: ApplyHarness,  # noqa: F811
    outage: Outage,
    source_bootstrap: str,
    target_bootstrap: str,
    unique_name: Callable[[str], str],
) -> None:
    """Offset syncs across gaps (exact at a sync, one past the newest below elsewhere, bounded by the
    next sync or the log end), exact on tracing headers, and a group on a replicated topic and on
    dr's own topic at once (the latter by the reverse flow's checkpoint)."""
    orders, events, payments = outage.orders, outage.events, outage.payments
    remote_orders, remote_events = f"{PRIMARY}.{orders}", f"{PRIMARY}.{events}"
    syncs = outage.sync_points(orders)
    between = next(d for d in outage.downstream(orders) if d > syncs[0] and {d, d - 1}.isdisjoint(syncs))
    past_last = outage.downstream(orders)[-1] + 1  # caught up: past the last sync, at the log end
    traced_between = next(
        d
        for d in outage.downstream(events)
        if d > PREEXISTING and {d, d - 1}.isdisjoint(outage.sync_points(events))
    )
    labels = ("at-sync", "between", "past-last", "traced", "traced-end", "both")
    name = {label: unique_name(label) for label in labels}
    groups = {
        name["at-sync"]: {remote_orders: syncs[1]},
        name["between"]: {remote_orders: between},
        name["past-last"]: {remote_orders: past_last},
        name["traced"]: {remote_events: traced_between},
        name["traced-end"]: {remote_events: outage.downstream(events)[-1] + 1},  # caught up
        name["both"]: {remote_orders: between, payments: 9},
    }
    for group, committed in groups.items():
        alter_group_offsets(
            target_bootstrap, group, {(topic, 0): offset for topic, offset in committed.items()}
        )
    both = name["both"]
    outage.reverse.emit_checkpoints([both])  # the reverse flow checkpoints it on primary

    code, report = failback(
        harness, source_bootstrap, target_bootstrap, "--groups", "|".join(map(re.escape, groups)),
        "--set", f"offsetlake.k2k.tracing.topics={PRIMARY}={PRIMARY}.{{topic}}",
    )  # fmt: skip

    assert code == 0, report
    for group, committed in groups.items():
        for topic, offset in committed.items():
            if topic == payments:
                continue
            source_topic = topic.removeprefix(f"{PRIMARY}.")
            resumed = position(source_bootstrap, group, source_topic)
            truth = outage.truth(source_topic, offset)
            assert resumed is not None and resumed <= truth, (group, topic, offset, resumed, truth, report)
    assert position(source_bootstrap, name["at-sync"], orders) == outage.truth(orders, syncs[1])
    assert position(source_bootstrap, name["traced"], events) == outage.truth(events, traced_between)
    last_traced = outage.forward.ground_truth.records(events, 0)[-1].source_offset
    assert position(source_bootstrap, name["traced-end"], events) == last_traced + 1
    record_at_between = outage.truth(orders, between)
    assert position(source_bootstrap, name["between"], orders) < record_at_between  # one past a sync
    # dr's own topic went through the reverse flow: dr.<payments> on primary, at the checkpoint
    (checkpoint,) = [c for c in outage.reverse.checkpoints if c.group == both]
    assert checkpoint.topic == f"{DR}.{payments}"
    assert position(source_bootstrap, both, f"{DR}.{payments}") == checkpoint.downstream_offset
    assert "reverse flow" in report and "forward flow's history" in report
    assert re.search(rf"{re.escape(name['at-sync'])} .*offset_sync \(reverse\).*exact", report), report
    assert re.search(rf"{re.escape(name['traced'])} .*k2k_tracing_headers \(reverse\).*exact", report), report
    assert re.search(rf"{re.escape(name['traced-end'])} .*k2k_tracing_headers \(reverse\)", report), report
    assert re.search(rf"{re.escape(name['past-last'])} .*re-reads <= \d+", report), report
    rows = harness.audit(f"stage = 'result' AND consumer_group = '{both}'")
    assert {row["direction"] for row in rows} == {"failback"}
    assert {row["topic"] for row in rows} == {orders, f"{DR}.{payments}"}


def test_a_position_before_the_first_sync_is_refused_or_placed_at_the_log_start(
    harness: ApplyHarness,  # noqa: F811
    outage: Outage,
    source_bootstrap: str,
    target_bootstrap: str,
    unique_name: Callable[[str], str],
) -> None:
    group = unique_name("before-first-sync")
    alter_group_offsets(target_bootstrap, group, {(f"{PRIMARY}.{outage.orders}", 0): PREEXISTING - 1})

    code, report = failback(
        harness, source_bootstrap, target_bootstrap, "--groups", re.escape(group), "--untranslated", "refuse"
    )
    assert code == 3, report
    assert "precedes the first retained sync" in report and "group refused" in report
    assert position(source_bootstrap, group, outage.orders) is None

    code, report = failback(
        harness,
        source_bootstrap,
        target_bootstrap,
        "--groups",
        re.escape(group),
    )
    assert code == 0, report
    assert position(source_bootstrap, group, outage.orders) == 0  # the source's log start


def test_an_active_group_on_the_source_is_refused(
    harness: ApplyHarness,  # noqa: F811
    outage: Outage,
    source_bootstrap: str,
    target_bootstrap: str,
    unique_name: Callable[[str], str],
) -> None:
    group = unique_name("active")
    alter_group_offsets(
        target_bootstrap, group, {(f"{PRIMARY}.{outage.orders}", 0): outage.sync_points(outage.orders)[1]}
    )
    with active_consumer(source_bootstrap, group, outage.orders):
        code, report = failback(harness, source_bootstrap, target_bootstrap, "--groups", re.escape(group))
    assert code == 3, report
    assert position(source_bootstrap, group, outage.orders) is None


def test_both_gold_stores_read_the_same_sync_history(harness: ApplyHarness, outage: Outage) -> None:  # noqa: F811
    """The Spark store (Databricks) and the Arrow store (local) hand failback the same syncs, in the
    order MM2 wrote them, of the named source and topics only."""
    spark_store = SparkGoldStore(harness.spark, harness.schema)
    arrow_store = LocalGoldStore(LocalHome(harness.home), harness.schema, warehouse=harness.warehouse)
    topics = {outage.orders, outage.events, "no-such-topic"}
    with contextlib.closing(arrow_store):
        read = arrow_store.offset_syncs(PRIMARY, topics)
        assert read == spark_store.offset_syncs(PRIMARY, topics)
        assert arrow_store.offset_syncs("elsewhere", topics) == {} == spark_store.offset_syncs(PRIMARY, set())
    written = [
        (s.upstream_offset, s.downstream_offset)
        for s in outage.forward.offset_syncs
        if s.topic == outage.orders
    ]
    assert read[(outage.orders, 0)] == written
