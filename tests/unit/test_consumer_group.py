"""The consumer group's supervisor (workload/consumers.py) and its faults, with stand-in member processes
(no broker): the nemesis asks, the supervisor kills, freezes, replaces and storms members, a member that
dies on its own stops the workload, and no member outlives stop(). The supervisor's time is virtual
(tests/fakeclock.py): a storm's intervals and a fault's timeline do not depend on the machine's load."""

import sqlite3
import sys
import threading
import time

import psutil
import pytest

from harness.faults.channel import KILL_MEMBER, PAUSE_MEMBER, STORM_MEMBERS
from harness.nemesis import Nemesis
from harness.schedule import PlannedFault, Workload
from harness.spec import ConsumerSpec, ExperimentSpec
from harness.workload import consumers
from tests.fakeclock import FakeClock

# A member that only waits: SIGTERM ends it cleanly (exit 0), like the real one after its batch.
STAND_IN = [sys.executable, "-c", "import signal, sys, time\n"
            "signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))\n"
            "print('ready', flush=True)\n"
            "while True: time.sleep(0.05)"]


def spawn_ready(spawn):
    """The supervisor's spawn, returning once the stand-in handles SIGTERM (a real member is slower to
    start than virtual time: without this, a storm member would leave before its handler is set)."""
    def spawn_and_wait(self, name, transactional_id):
        slot = spawn(self, name, transactional_id)
        log, deadline = self.member_log(name), time.monotonic() + 60  # a deadlock guard, not a timing
        while not (log.exists() and "ready" in log.read_text()) and slot.proc.poll() is None:
            assert time.monotonic() < deadline, f"{name} never started"
            time.sleep(0.01)
        return slot
    return spawn_and_wait


@pytest.fixture
def group(tmp_path, monkeypatch):
    monkeypatch.setattr(consumers, "MEMBER", STAND_IN)
    monkeypatch.setattr(consumers.ConsumerGroup, "_spawn", spawn_ready(consumers.ConsumerGroup._spawn))
    stop = threading.Event()
    g = consumers.ConsumerGroup({"bootstrap.servers": "127.0.0.1:9"}, "t", 3, ConsumerSpec(members=3),
                                tmp_path / "sink.sqlite", lambda m: tmp_path / "logs" / f"{m}.log", "g", stop,
                                clock=FakeClock())
    g.start()
    yield g
    g.stop(timeout=5)
    assert all(s.proc.poll() is not None for incarnations in g.slots for s in incarnations)
    assert all(s.proc.poll() is not None for s in g.storm)


def events(g):
    db = sqlite3.connect(g.sink_path)
    try:
        return db.execute("SELECT member, event, detail FROM events ORDER BY at").fetchall()
    finally:
        db.close()


def test_kill_takes_the_members_in_turn_and_heal_starts_a_replacement_in_the_slot(group):
    pids = [s.proc.pid for s in group.current]
    group.served[KILL_MEMBER][0]({})
    assert group.current[0].state == "killed" and group.current[0].proc.returncode == -9
    group.served[KILL_MEMBER][0]({})  # the next one in turn
    assert group.current[1].state == "killed"
    group.served[KILL_MEMBER][1]({})
    group.served[KILL_MEMBER][1]({})
    assert [s.name for s in group.current] == ["m0.1", "m1.1", "m2.0"]
    assert all(s.state == "running" and s.proc.poll() is None for s in group.current)
    assert group.current[2].proc.pid == pids[2]
    assert [(m, e) for m, e, _ in events(group)] == [("m0.0", "killed"), ("m1.0", "killed"),
                                                     ("m0.0", "replaced"), ("m1.0", "replaced")]


def test_kill_prefers_a_member_that_holds_partitions(group):
    # m1.0 and m2.0 were assigned partitions; m2.0's were revoked since: only m1.0 has records in hand.
    group.sink.event("assign", [0, 1], member="m1.0")
    group.sink.event("assign", [2], member="m2.0")
    group.sink.event("revoke", [2], member="m2.0")
    assert group.sink.holdings() == {"m1.0": {0, 1}, "m2.0": set()}
    group.served[KILL_MEMBER][0]({})
    assert [s.state for s in group.current] == ["running", "killed", "running"]
    group.served[KILL_MEMBER][0]({})  # nobody running holds partitions now: the next in turn
    assert [s.state for s in group.current] == ["running", "killed", "killed"]


def test_pause_freezes_a_member_and_heal_resumes_it(group):
    group.served[PAUSE_MEMBER][0]({})
    paused = group.current[0]
    assert paused.state == "paused" and psutil.Process(paused.proc.pid).status() == psutil.STATUS_STOPPED
    group.served[KILL_MEMBER][0]({})  # a paused member is not the next victim
    assert group.current[1].state == "killed" and paused.state == "paused"
    group.served[PAUSE_MEMBER][1]({})
    assert paused.state == "running" and psutil.Process(paused.proc.pid).status() != psutil.STATUS_STOPPED


def test_no_running_member_left_is_a_failed_fault(group):
    for _ in range(3):
        group.served[PAUSE_MEMBER][0]({})
    with pytest.raises(RuntimeError, match="no running member"):
        group.served[KILL_MEMBER][0]({})


def test_a_storm_joins_and_leaves_every_interval_and_heal_sends_the_rest_away(group):
    group.served[STORM_MEMBERS][0]({"interval": 0.3})
    group.clock.sleep(1.05)  # joins at 0.3 and 0.9, a leave at 0.6
    group.served[STORM_MEMBERS][1]({"interval": 0.3})
    kinds = [(m, e) for m, e, _ in events(group)]
    assert kinds[:4] == [("s1.0", "joined"), ("s1.0", "left"), ("s2.0", "joined"), ("s2.0", "left")]
    assert group.storm == [] and all(d == "exit 0" for _, e, d in events(group) if e == "left")


def in_the_middle_of_a_batch(group, member, partitions=(0,)):
    """What the sink holds of a member that was assigned `partitions` and processed 4 of a batch of 10."""
    group.sink.event("assign", list(partitions), member=member)
    group.sink.db.execute("INSERT INTO in_hand VALUES (?, 0, 10)", (member,))
    group.sink.db.executemany(
        "INSERT INTO processed (partition, offset, value, member, session, n, processed_at, committed) "
        "VALUES (?, ?, ?, ?, 0, ?, 0, 'after')", [(partitions[0], n, n, member, n) for n in range(4)])


def test_kill_takes_a_member_frozen_in_the_middle_of_a_batch_and_lets_the_others_run_on(group):
    group.sink.event("assign", [1], member="m0.0")  # holds partitions, nothing in hand
    in_the_middle_of_a_batch(group, "m1.0")
    group.served[KILL_MEMBER][0]({})
    assert [s.state for s in group.current] == ["running", "killed", "running"]
    assert psutil.Process(group.current[0].proc.pid).status() != psutil.STATUS_STOPPED  # asked, then let go


def test_the_nemesis_applies_consumer_faults_through_the_supervisor(group):
    in_the_middle_of_a_batch(group, "m0.0")
    lines = []
    schedule = [PlannedFault(0, "consumer-kill", Workload(), 0.1, 0.3, {}),
                PlannedFault(1, "consumer-pause", Workload(), 0.2, 0.3, {})]
    nemesis = Nemesis(None, schedule, "v", lines.extend, "t", clock=group.clock)
    group.serve(nemesis.workload)
    nemesis.start()
    group.clock.sleep(0.8)
    nemesis.stop()
    assert [(line["kind"], line["outcome"]) for line in lines] == [("consumer-kill", "healed"),
                                                                  ("consumer-pause", "healed")]
    assert all(0 <= line["late_s"] <= consumers.TICK for line in lines)  # served at the supervisor's next look
    assert [s.name for s in group.current] == ["m0.1", "m1.0", "m2.0"]
    assert all(s.state == "running" for s in group.current)


def test_a_member_dying_on_its_own_stops_the_workload_and_names_its_log(group):
    group.current[2].proc.kill()
    assert group.stop_workload.wait(60)  # seen at the supervisor's next look (60 s: a deadlock guard)
    assert "consumer m2.0 exited with code -9 outside the fault schedule" in group.error
    assert "m2.0.log" in group.error


def test_stop_ends_every_member_even_a_paused_one(group):
    group.served[PAUSE_MEMBER][0]({})
    group.served[STORM_MEMBERS][0]({"interval": 0.1})
    group.clock.sleep(0.15)
    procs = [s.proc for s in group.current + group.storm]
    assert len(procs) == 4  # the storm's first member joined
    group.stop(timeout=5)
    # A storm member still starting when stopped dies of the SIGTERM itself (no handler yet).
    assert all(p.returncode in (0, -15) for p in procs) and group.error == ""


def test_every_variant_needs_a_group_for_consumer_faults_and_variants_override_the_experiments_settings():
    doc = {"name": "x", "workload": {"messages": 10}, "consumer": {"members": 2, "config": {"a": 1}},
           "variants": [{"name": "a", "consumer": {"strategy": "commit-before", "config": {"b": 2}}}, {"name": "b"}],
           "faults": [{"kind": "consumer-kill", "at": 1}, {"kind": "rebalance-storm", "at": 2, "interval": 0.5}]}
    spec = ExperimentSpec.model_validate(doc)
    a, b = (spec.consumer_spec(v) for v in spec.variants)
    assert (a.strategy, a.members, a.config) == ("commit-before", 2, {"a": 1, "b": 2})
    assert (b.strategy, b.members, b.config) == ("commit-after", 2, {"a": 1})
    again = ExperimentSpec.model_validate(spec.public_dict())  # as a run folder stores it
    assert again.consumer_spec(again.variants[0]) == a
    assert spec.faults[1].interval == 0.5 and spec.faults[1].duration == 10.0
    with pytest.raises(ValueError, match="variant a has none"):
        ExperimentSpec.model_validate({**doc, "consumer": None, "variants": [{"name": "a"}]})
    with pytest.raises(ValueError, match="runs before the fault timeline"):
        ExperimentSpec.model_validate({**doc, "consumer": {"when": "after"},
                                       "faults": [{"kind": "producer-restart", "at": 1}]})


def test_a_member_whose_client_hangs_is_a_client_hang_and_one_that_never_stopped_an_error(tmp_path, monkeypatch):
    hangs = [sys.executable, "-c", "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
             "print('ready', flush=True)\nwhile True: time.sleep(0.05)"]  # deaf to SIGTERM: killed at the deadline
    monkeypatch.setattr(consumers, "MEMBER", hangs)
    monkeypatch.setattr(consumers.ConsumerGroup, "_spawn", spawn_ready(consumers.ConsumerGroup._spawn))
    g = consumers.ConsumerGroup({"bootstrap.servers": "127.0.0.1:9"}, "t", 3, ConsumerSpec(members=4),
                                tmp_path / "sink.sqlite", lambda m: tmp_path / "logs" / f"{m}.log", "g",
                                threading.Event(), clock=FakeClock())
    g.start()
    g.sink.event("stop", member="m0.0")  # m0.0 left its loop (its client's close is what hangs)
    g.sink.event("hung", detail="send_offsets_to_transaction has not returned after 51 s (its timeout 20 s)",
                 member="m1.0")  # m1.0's watchdog named the call it hangs in (workload/member.py)
    g.sink.event("hung", detail="commit_transaction has not returned after 50 s (its timeout 20 s)", member="m2.0")
    g.sink.event("stop", member="m2.0")  # that call returned; then it stopped, and its close hangs
    g.stop(timeout=1)  # m3.0 said nothing: it never stopped, the run's error
    assert [s.proc.returncode for s in g.current] == [-9, -9, -9, -9]
    assert g.hung == {"m0.0": "close()", "m1.0": "send_offsets_to_transaction has not returned after 51 s (its "
                      "timeout 20 s)", "m2.0": "close()"}
    assert "consumer m3.0 exited with code -9 when asked to stop" in g.error


def test_mid_batch_means_one_record_of_the_batch_in_hand_processed_and_one_not(tmp_path):
    from harness.workload import sink as sinks

    sinks.create(tmp_path / "s.sqlite")
    member, harness = sinks.Sink(tmp_path / "s.sqlite", "m0.0"), sinks.Sink(tmp_path / "s.sqlite", "harness")
    assert not harness.mid_batch("m0.0")  # no batch yet
    seen = []
    for n in range(4, 8):  # the batch holds n 5, 6 and 7; n 4 was the batch before's last
        if n == 5:
            member.hold(5, 3)
        member.processed([(0, n, n, 0, n, 0.0)], "after")
        seen.append(harness.mid_batch("m0.0"))
    assert seen == [False, True, True, False]  # after its last record the commit may already be done
