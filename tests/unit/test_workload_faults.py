"""Workload faults (producer-restart, producer-pause): planned like every fault, asked for by the nemesis,
applied by the produce loops between two sends, journaled; sessions and resends in the delivery log; the
transactional workload's transactions log. Producers run against librdkafka's in-process mock cluster.
The nemesis runs on a virtual clock (tests/fakeclock.py), and a produce loop is asked for a fault at a
point of its progress, not after a real delay: what is checked does not depend on the machine's load."""

import json
import logging
import threading
import time

import pyarrow.parquet as pq
import pytest
from confluent_kafka import KafkaError

from harness.faults.channel import PAUSE_PRODUCER, RESTART_PRODUCER, NotReached, WorkloadFaults
from harness.nemesis import Nemesis
from harness.schedule import PlannedFault, ScheduleError, Workload, load, plan
from harness.spec import ExperimentSpec
from harness.workload.deliverylog import CHUNK, DeliveryLog
from harness.workload.producer import produce
from harness.workload.transactional import TransactionalWorkload, TransactionsLog
from tests.fakeclock import FakeClock
from tests.unit.test_delivery_log import Report, rows

MOCK = {"bootstrap.servers": "unused:1", "test.mock.num.brokers": 1}


def quiet():
    logger = logging.getLogger("mock-cluster")
    logger.addHandler(logging.NullHandler())
    logger.propagate = False
    return logger


def spec(**over):
    return ExperimentSpec.model_validate({
        "name": "t", "topic": {"partitions": 3}, "workload": {"messages": 1000, "rate": 100},
        "variants": [{"name": "a"}], **over})


# -- plan and spec -------------------------------------------------------------------------------

def test_workload_faults_target_the_workload_and_are_planned_like_any_fault(tmp_path):
    s = spec(faults=[{"kind": "producer-restart", "every": 3, "start": 1},
                     {"kind": "producer-pause", "at": 2, "duration": 1.5}])
    schedule = plan(s, 1)
    assert [(f.kind, f.target, f.at) for f in schedule] == [
        ("producer-restart", Workload(), 1.0), ("producer-pause", Workload(), 2.0), ("producer-restart", Workload(), 4.0),
        ("producer-restart", Workload(), 7.0)]
    assert schedule[0].to_json()["target"] == "workload"
    path = tmp_path / "faults.jsonl"
    path.write_text("".join(json.dumps(f.to_json()) + "\n" for f in schedule))
    assert load(path, s) == schedule  # replayed as planned
    path.write_text(json.dumps({**schedule[0].to_json(), "target": "all"}) + "\n")
    with pytest.raises(ScheduleError, match="producer-restart cannot target all brokers"):
        load(path, s)


def test_one_producer_pause_at_a_time():
    with pytest.raises(ScheduleError, match="one producer-pause at a time"):
        plan(spec(faults=[{"kind": "producer-pause", "at": 1, "duration": 2},
                          {"kind": "producer-pause", "at": 2.5, "duration": 1}]), 1)
    assert len(plan(spec(faults=[{"kind": "producer-pause", "every": 3, "duration": 2}]), 1)) == 4


def test_a_workload_fault_cannot_target_a_broker_and_a_broker_fault_not_the_workload():
    with pytest.raises(Exception, match="faults.0.producer-restart.target"):
        spec(faults=[{"kind": "producer-restart", "at": 1, "target": {"broker": 0}}])
    with pytest.raises(Exception, match="faults.0.lost-acks.target"):
        spec(faults=[{"kind": "lost-acks", "at": 1, "target": "workload"}])


def test_transaction_settings_live_in_the_workload_section():
    s = spec(workload={"messages": 1000, "transaction.size": 50, "abort_ratio": 0.25},
             variants=[{"name": "plain"}, {"name": "txn", "producer": {"transactional.id": "kc"}}])
    assert (s.workload.transaction_size, s.workload.abort_ratio) == (50, 0.25)
    assert [s.transactional(v) for v in s.variants] == [False, True]
    assert s.public_dict()["workload"]["transaction_size"] == 50
    with pytest.raises(Exception, match="abort_ratio: only variants whose producer sets transactional.id"):
        spec(workload={"messages": 10, "abort_ratio": 0.1})
    assert "abort_ratio" not in spec().public_dict()["workload"]  # meaningless without transactions: not kept


# -- the nemesis asks, the loop applies ----------------------------------------------------------

def journal_into(lines):
    return lambda records: lines.extend(records)


def test_the_nemesis_waits_until_the_loop_applied_the_fault_and_journals_when_it_took_effect():
    lines, served = [], []
    schedule = [PlannedFault(0, "producer-pause", Workload(), 0.1, 0.3, {})]
    clock = FakeClock()
    nemesis = Nemesis(None, schedule, "a", journal_into(lines), "topic", clock=clock)
    nemesis.start()

    def loop():  # a produce loop that looks for asks every 50 ms
        for _ in range(20):
            clock.sleep(0.05)
            if nemesis.workload.pending:
                nemesis.workload.serve({PAUSE_PRODUCER: (lambda p: served.append(("producer-pause", "apply", clock.monotonic())),
                                                            lambda p: served.append(("producer-pause", "heal", clock.monotonic())))})

    worker = clock.start_thread(loop, "produce-loop")
    worker.join()
    nemesis.stop()
    assert [(k, s) for k, s, _ in served] == [("producer-pause", "apply"), ("producer-pause", "heal")]
    [line] = lines
    assert line["outcome"] == "healed" and line["target"] == "workload" and "brokers" not in line
    assert 0 <= line["late_s"] <= 0.25 and abs(line["held_s"] - 0.3) < 0.1  # served every 50 ms


def test_an_ask_the_workload_never_takes_is_withdrawn_and_journaled_not_reached():
    lines = []
    clock = FakeClock()
    nemesis = Nemesis(None, [PlannedFault(0, "producer-restart", Workload(), 0.0, 0.05, {})], "a",
                      journal_into(lines), "topic", clock=clock)
    nemesis.start()
    clock.sleep(0.2)  # nobody serves
    nemesis.stop()
    assert lines[0]["outcome"] == "not-reached" and "the workload ended first" in lines[0]["deviation"]
    assert nemesis.errors == [] and not nemesis.workload.pending


def test_a_fault_the_loop_fails_to_apply_is_a_nemesis_error_and_the_loop_sees_it():
    stop = threading.Event()
    channel = WorkloadFaults(stop)
    errors = []

    def asker():
        try:
            channel.ask(RESTART_PRODUCER, "apply")
        except Exception as e:
            errors.append(str(e))

    t = threading.Thread(target=asker)
    t.start()
    while not channel.pending:
        time.sleep(0.01)
    with pytest.raises(RuntimeError, match="no broker"):
        channel.serve({RESTART_PRODUCER: (lambda p: (_ for _ in ()).throw(RuntimeError("no broker")), None)})
    t.join()
    assert errors == ["no broker"]
    stop.set()
    with pytest.raises(NotReached):
        channel.ask(RESTART_PRODUCER, "apply")


# -- the delivery log's sessions -----------------------------------------------------------------

def test_sessions_late_sends_and_unreported_sends_per_session(tmp_path):
    log = DeliveryLog(tmp_path / "acks.parquet", partitions=2)
    log.mark_chunk()
    log.on_delivery(None, Report(0, 0, 0))  # message 0
    log.on_delivery(KafkaError(KafkaError._PURGE_INFLIGHT), Report(1, 0, None))  # message 1: purged in flight
    # message 2 (partition 0, value 1) was handed and never reported; a restart at count 3:
    assert log.new_session(3) == 1
    assert log.unacked(3).tolist() == [1, 2]
    time.sleep(0.01)
    log.handed_late([1, 2])
    log.on_delivery(None, Report(1, 0, 5))
    log.on_delivery(None, Report(0, 1, 6))
    log.on_delivery(None, Report(1, 1, 7))  # message 3, fresh in session 1
    log.close(4)
    got = [(r["partition"], r["value"], r["session"], r["outcome"], r["error"]) for r in rows(tmp_path / "acks.parquet")]
    assert sorted(got) == [(0, 0, 0, "acked", None), (0, 1, 0, "unknown", None), (0, 1, 1, "acked", None),
                           (1, 0, 0, "unknown", "_PURGE_INFLIGHT"), (1, 0, 1, "acked", None), (1, 1, 1, "acked", None)]
    assert log.sent == 6 and log.counts == {"acked": 4, "rejected": 0, "unknown": 2}
    t = pq.read_table(tmp_path / "acks.parquet").to_pandas()
    late = t[(t.session == 1) & (t.value * 2 + t.partition).isin([1, 2])]  # messages 1 and 2, sent again
    # resends are stamped with their own hand-over time, not their value's chunk
    assert len(late) == 2 and late.sent_at.min() > t[t.session == 0].sent_at.max()


def test_a_paused_sessions_reports_are_written_as_its_own():
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        log = DeliveryLog(Path(d) / "acks.parquet", partitions=1)
        log.mark_chunk()
        log.new_session(1)  # message 0 was handed by session 0, which froze
        log.on_delivery(None, Report(0, 1, 1))  # session 1 hands message 1
        with log.serving(0):
            log.on_delivery(None, Report(0, 0, 0))  # the zombie's report, served when it resumes
        log.close(2)
        assert [(r["value"], r["session"]) for r in rows(Path(d) / "acks.parquet")] == [(0, 0), (1, 1)]


# -- the produce loops -----------------------------------------------------------------------------

class Asks:
    """A produce loop's on_progress that asks for faults as the nemesis would, each when its condition
    holds: for (condition, kind, step) in turn, once condition(reports since the last ask) is true, a
    thread asks (blocking there until the loop applied it), and the report returns once the ask is
    pending, so the loop applies it at its next look."""

    def __init__(self, faults, plan_):
        self.faults, self.plan, self.since, self.threads, self.errors = faults, list(plan_), 0, [], []

    def __call__(self, count):
        self.since += 1
        if self.plan and self.plan[0][0](self.since):
            _, kind, step = self.plan.pop(0)
            self.since = 0
            t = threading.Thread(target=self._ask, args=(kind, step))
            t.start()
            self.threads.append(t)
            deadline = time.monotonic() + 60  # a deadlock guard, not a timing
            while not self.faults.pending and t.is_alive():
                assert time.monotonic() < deadline
                time.sleep(0.001)

    def _ask(self, kind, step):
        try:
            self.faults.ask(kind, step)
        except Exception as e:
            self.errors.append(e)

    def join(self):
        for t in self.threads:
            t.join()
        assert not self.plan and not self.errors, (self.plan, self.errors)


def mid_transaction(w, after: int = 0):
    """A condition: the workload `w` has handed some but not all of its open transaction (and allotted
    at least `after` fresh messages)."""
    return lambda since: (w.open is not None and 0 < w.open.handed < len(w.open.indices) and w.count >= after)


def test_a_restarted_plain_producer_sends_again_what_was_not_acknowledged(tmp_path):
    stop = threading.Event()
    faults = WorkloadFaults(stop)
    log = DeliveryLog(tmp_path / "acks.parquet", partitions=3)
    asks = Asks(faults, [(lambda since: since == 3, RESTART_PRODUCER, "apply")])  # after the third chunk
    # linger.ms 1000: the chunks handed before the restart (one every 0.1 s) are still unacknowledged when it
    # comes, whatever the machine's load (with 50 ms they could all be acked while the loop paced).
    r = produce(MOCK, "t", 3, 6 * CHUNK, {"enable.idempotence": True, "linger.ms": 1000}, log, rate=10 * CHUNK,
                logger=quiet(), faults=faults, before_flush=stop.set, on_progress=asks)
    asks.join()
    table = pq.read_table(tmp_path / "acks.parquet").to_pandas()
    assert set(table["session"]) == {0, 1}
    # Every value sent twice was unacknowledged in session 0 and sent again in session 1.
    again = table.groupby(["partition", "value"]).filter(lambda g: len(g) > 1)
    assert len(again) > 0 and set(again["session"]) == {0, 1}
    assert (again[again.session == 0].outcome != "acked").all()
    # Each value ends acked once, and the accounting counts sends (resends included).
    assert table[table.outcome == "acked"].groupby(["partition", "value"]).size().max() == 1
    assert table.groupby(["partition", "value"]).ngroups == 6 * CHUNK
    assert (r.sent, r.acked + r.rejected + r.unknown) == (len(table), len(table))


def test_transactions_commit_abort_on_purpose_and_restart_mid_transaction(tmp_path):
    stop = threading.Event()
    faults = WorkloadFaults(stop)
    log = DeliveryLog(tmp_path / "acks.parquet", partitions=2)
    txlog = TransactionsLog(tmp_path / "transactions.parquet")
    # The restart lands in the middle of a transaction, after some 500 sends.
    w = TransactionalWorkload(MOCK, "t", 2, 3000, {"transactional.id": "kc-test", "linger.ms": 5}, log, txlog,
                              size=100, abort_ratio=0.25, seed=7, rate=1000, logger=quiet(), faults=faults)
    w.on_progress = asks = Asks(faults, [(mid_transaction(w, after=500), RESTART_PRODUCER, "apply")])
    r = w.run(before_flush=stop.set)
    asks.join()
    acks = pq.read_table(tmp_path / "acks.parquet").to_pandas()
    txns = pq.read_table(tmp_path / "transactions.parquet").to_pandas()
    assert txns.txn.tolist() == list(range(len(txns)))  # every transaction begun has its row
    assert set(acks.txn) == set(txns.txn[txns.sends > 0])
    [restart] = txns[txns.cause == "restart"].itertuples()
    assert restart.outcome == "aborted" and restart.session == 0 and 0 < restart.sends < 100
    assert set(txns.session) == {0, 1}
    planned = txns[txns.cause == "planned"]
    assert (planned.outcome == "aborted").all() and 0.1 < len(planned) / len(txns) < 0.4  # seeded 25 %
    # The abandoned transaction's values are sent again in session 1 and committed there; planned aborts are not.
    again = acks[acks.txn == restart.txn][["partition", "value"]].merge(acks[acks.session == 1])
    assert len(again) == restart.sends and set(again.txn) <= set(txns.txn[txns.outcome == "committed"])
    dropped = acks[acks.txn.isin(planned.txn)].merge(acks, on=["partition", "value"])
    assert (dropped.txn_x == dropped.txn_y).all()
    # A planned abort waits until its records are written: the log holds them, read_committed must not show them.
    assert (acks[acks.txn.isin(planned.txn)].outcome == "acked").all()
    committed = acks[acks.txn.isin(txns.txn[txns.outcome == "committed"])]
    assert committed.groupby(["partition", "value"]).size().max() == 1
    assert (r.sent, r.acked + r.rejected + r.unknown) == (len(acks), len(acks))
    assert json.loads(json.dumps(txlog.counts()))["committed"] == (txns.outcome == "committed").sum()


def test_a_paused_transactional_instance_resumes_as_a_zombie_in_its_own_session(tmp_path):
    stop = threading.Event()
    faults = WorkloadFaults(stop)
    log = DeliveryLog(tmp_path / "acks.parquet", partitions=2)
    txlog = TransactionsLog(tmp_path / "transactions.parquet")
    w = TransactionalWorkload(MOCK, "t", 2, 3000, {"transactional.id": "kc-zombie", "linger.ms": 5}, log, txlog,
                              size=40, abort_ratio=0.0, seed=1, rate=2000, logger=quiet(), faults=faults)
    # Paused in a transaction after some 800 sends; resumed 10 reports (200 sends of its successor) later.
    w.on_progress = asks = Asks(faults, [(mid_transaction(w, after=800), PAUSE_PRODUCER, "apply"),
                                         (lambda since: since == 10, PAUSE_PRODUCER, "heal")])
    w.run(before_flush=stop.set)
    asks.join()
    acks = pq.read_table(tmp_path / "acks.parquet").to_pandas()
    txns = pq.read_table(tmp_path / "transactions.parquet").to_pandas()
    [z] = txns[txns.cause == "fenced"].itertuples()
    assert z.session == 0 and z.sends == 40  # it sent the rest of its transaction when it resumed
    mine = acks[acks.txn == z.txn]
    assert (mine.session == 0).all() and len(mine) == 40
    # The successor (session 1) took over what the zombie had handed before the pause; the rest was the zombie's.
    taken = mine.merge(acks[acks.session == 1], on=["partition", "value"])
    assert 0 < len(taken) < 40
    # librdkafka's mock cluster does not fence (the zombie's commit succeeds there): a real broker must refuse it,
    # and the analysis then counts the zombie's records, if visible, as zombie_writes_visible.
    assert z.outcome in ("committed", "aborted")


def test_a_fatal_error_confluent_kafka_masks_as_attribute_error_replaces_the_instance_not_the_run(tmp_path):
    """confluent-kafka leaves a fatal error pending when librdkafka reports it during a call, and its next log line
    turns it into "AttributeError: 'FileLogger' object has no attribute 'log'" (deliverylog.masked_fatal): the
    workload takes it for the fatal error it is, as an application would, instead of crashing."""
    class Masking:
        def __init__(self, producer, fail):
            self._producer, self._fail = producer, fail

        def __getattr__(self, name):
            return getattr(self._producer, name)

        def flush(self, *args):
            if self._fail:
                self._fail = False
                raise AttributeError("'FileLogger' object has no attribute 'log'")
            return self._producer.flush(*args)

    log = DeliveryLog(tmp_path / "acks.parquet", partitions=2)
    txlog = TransactionsLog(tmp_path / "transactions.parquet")
    w = TransactionalWorkload(MOCK, "t", 2, 2000, {"transactional.id": "kc-masked", "linger.ms": 5}, log, txlog,
                              size=100, abort_ratio=0.5, seed=3, rate=4000, logger=quiet())
    instances = []
    real_new = w._new_instance
    w._new_instance = lambda: instances.append(1) or Masking(real_new(), fail=len(instances) == 1)
    r = w.run()
    txns = pq.read_table(tmp_path / "transactions.parquet").to_pandas()
    assert r.error == "" and len(instances) == 2  # the first instance failed for good and was replaced
    [broken] = txns[txns.error == "_FATAL"].itertuples()  # its first planned abort: flushed, then failed
    assert broken.outcome == "aborted" and broken.session == 0
    assert txlog.replaced == {"_FATAL": 1} and set(txns.session) == {0, 1}
    assert (r.sent, r.acked + r.rejected + r.unknown) == (r.sent, r.sent) and r.sent >= 2000
