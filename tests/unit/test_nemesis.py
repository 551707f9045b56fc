"""The nemesis against a stand-in cluster (the real ProxiedCluster state machine over fake brokers and a
fake Toxiproxy): what it calls, when, what it journals, and replay. Time is virtual (tests/fakeclock.py):
a broker that takes 10 s to start takes no real time, and every time checked is exact."""

import json
import threading
from pathlib import Path

import pytest

from harness import summary
from harness.analysis.metrics import KEYS
from harness.cluster.base import DOWN, PAUSED, RUNNING, ProxiedCluster
from harness.engine.inputs import faults_not_applied
from harness.exits import Exit, exit_for_verdict
from harness.faults.channel import RESTART_PRODUCER
from harness.nemesis import GRACE, Nemesis
from harness.schedule import (AllBrokers, Broker, FollowerOf, LeaderOf, PlannedFault, ScheduleError, Workload,
                                     load, plan)
from harness.runfolder import RunFolder
from harness.spec import ExperimentSpec, LocalClusterSpec
from harness.verdict import parse_rule
from tests.fakeclock import FakeClock
from tests.journal import journal_problems

ACTUAL = {"applied_at", "applied_offset", "healed_at", "healed_offset", "late_s", "held_s", "heal_s"}


class FakeToxiproxy:
    def __init__(self, calls):
        self.calls = calls

    def add_toxic(self, proxy, name, **toxic):
        self.calls.append(("add", proxy, name, toxic["type"], toxic["stream"], toxic["attributes"]))

    def remove_toxic(self, proxy, name):
        self.calls.append(("remove", proxy, name))

    def set_enabled(self, proxy, enabled):
        self.calls.append(("enabled", proxy, enabled))

    def reset(self):
        self.calls.append(("reset",))

    def kafka_requests(self, proxy):  # an earlier fault's toxic held 9: not this one's
        return {"held": 13, "dropped": 1, "unparsed": 2,
                "toxics": {"delay-requests-0-Produce": {"held": 3, "dropped": 0},
                           "delay-requests-0-EndTxn": {"held": 1, "dropped": 0},
                           "delay-requests-7-Produce": {"held": 9, "dropped": 1}}}


class FakeBroker:
    """A broker handle that records what was done to it; start takes `start_s` seconds of the clock."""

    def __init__(self, index, calls, clock, start_s=0.0):
        self.index, self.calls, self.clock, self.start_s = index, calls, clock, start_s
        self.up, self.log_path = True, f"broker-{index}.log"

    def start(self):
        self.calls.append(("start_broker", self.index))
        self.clock.sleep(self.start_s)
        self.up = True

    def stop(self):
        self.calls.append(("stop_broker", self.index))
        self.up = False

    def kill(self):
        self.calls.append(("kill_broker", self.index))
        self.up = False

    def pause(self):
        self.calls.append(("pause_broker", self.index))

    def resume(self):
        self.calls.append(("resume_broker", self.index))

    def alive(self):
        return self.up


class FakeCluster(ProxiedCluster):
    def __init__(self, leader=2, start_s=0.0, brokers=3):
        super().__init__(LocalClusterSpec(broker="kafka", brokers=brokers), run_dir=Path("unused"))
        self.calls = []
        self.leader = leader
        self.clock = FakeClock()
        self.toxi = FakeToxiproxy(self.calls)
        self.brokers = [FakeBroker(i, self.calls, self.clock, start_s) for i in range(brokers)]
        self.states = [RUNNING] * brokers

    def wait_running(self, broker, give_up):
        """ProxiedCluster's, on the clock: its wait on a condition would hold virtual time still."""
        while self.broker_state(broker) != RUNNING:
            if self.clock.wait(give_up, 0.05):
                return False
        return True

    def leader_of(self, topic, partition):
        self.calls.append(("leader_of", topic, partition))
        return self.leader

    def follower_of(self, topic, partition):
        self.calls.append(("follower_of", topic, partition))
        return (self.leader + 1) % self.broker_count


def after(clock, seconds, action):
    """threading.Timer on the clock."""
    clock.start_thread(lambda: (clock.sleep(seconds), action()), "timer")


def spec(faults, **over):
    return ExperimentSpec.model_validate({
        "name": "t", "cluster": {"brokers": 1}, "topic": {"partitions": 3},
        "workload": {"messages": 100, "rate": 100}, "variants": [{"name": "a"}], "faults": faults, **over})


def run_nemesis(schedule, tmp_path, cluster=None, wait=None, name="faults.jsonl"):
    cluster = cluster or FakeCluster()
    def journal(records):
        with open(tmp_path / name, "a") as f:
            f.writelines(json.dumps(r, sort_keys=True) + "\n" for r in records)

    nemesis = Nemesis(cluster, schedule, "a", journal, "topic-a", clock=cluster.clock)
    nemesis.start()
    cluster.clock.sleep(wait if wait is not None else max(f.at + f.duration for f in schedule) + 0.3)
    nemesis.stop()
    lines = [json.loads(x) for x in (tmp_path / name).read_text().splitlines()]
    return cluster, nemesis, lines


def test_each_kind_applies_and_heals(tmp_path):
    schedule = [
        PlannedFault(0, "lost-acks", Broker(1), 0.0, 0.05, {"cut_after_ms": 100}),
        PlannedFault(1, "partition", Broker(0), 0.0, 0.05, {}),
        PlannedFault(2, "broker-pause", LeaderOf(1), 0.0, 0.05, {}),
        PlannedFault(3, "broker-kill", Broker(1), 0.0, 0.05, {}),
        PlannedFault(4, "isolate", FollowerOf(0), 0.0, 0.05, {}),
        PlannedFault(5, "lost-requests", Broker(2), 0.0, 0.05, {"cut_after_ms": 200}),
        PlannedFault(6, "bandwidth", Broker(0), 0.0, 0.05, {"rate_kbps": 50, "stream": "requests"}),
        PlannedFault(7, "bandwidth", Broker(1), 0.0, 0.05, {"rate_kbps": 60, "stream": "responses"}),
    ]
    cluster, nemesis, lines = run_nemesis(schedule, tmp_path)
    c = cluster.calls
    assert ("add", "broker-1", "lost-acks-0", "timeout", "downstream", {"timeout": 100}) in c
    assert ("remove", "broker-1", "lost-acks-0") in c
    # lost-requests: the same toxic on the way in (requests never reach the broker)
    assert ("add", "broker-2", "lost-requests-5", "timeout", "upstream", {"timeout": 200}) in c
    assert ("remove", "broker-2", "lost-requests-5") in c
    # bandwidth: on the stream the fault names
    assert ("add", "broker-0", "bandwidth-6", "bandwidth", "upstream", {"rate": 50}) in c
    assert ("add", "broker-1", "bandwidth-7", "bandwidth", "downstream", {"rate": 60}) in c
    assert c.index(("enabled", "broker-0", False)) < c.index(("enabled", "broker-0", True))
    assert ("leader_of", "topic-a", 1) in c and ("pause_broker", 2) in c and ("resume_broker", 2) in c
    assert c.index(("kill_broker", 1)) < c.index(("start_broker", 1))
    # isolate: broker 0 (the follower) loses every proxy to and from its peers, then gets them back
    cut = {x[1] for x in c if x[0] == "enabled" and x[2] is False} - {"broker-0"}
    assert cut == {"replication-0-1", "replication-1-0", "controller-0-1", "controller-1-0",
                   "replication-0-2", "replication-2-0", "controller-0-2", "controller-2-0"}
    assert {x[1] for x in c if x[0] == "enabled" and x[2] is True} - {"broker-0"} == cut
    assert [line["outcome"] for line in lines] == ["healed"] * 8
    assert [line["target"] for line in lines] == [{"broker": 1}, {"broker": 0}, {"leader-of": 1}, {"broker": 1},
                                                  {"follower-of": 0}, {"broker": 2}, {"broker": 0}, {"broker": 1}]
    assert nemesis.errors == [] and nemesis.warnings == []
    assert cluster.states == [RUNNING] * 3


def test_all_targets_every_broker_and_stop_heals_what_is_active(tmp_path):
    schedule = [PlannedFault(0, "latency", AllBrokers(), 0.0, 60.0, {"latency_ms": 5, "jitter_ms": 0}),
                PlannedFault(1, "bandwidth", AllBrokers(), 30.0, 1.0, {"rate_kbps": 10})]
    cluster, nemesis, lines = run_nemesis(schedule, tmp_path, wait=0.2)
    adds = [x for x in cluster.calls if x[0] == "add"]
    removes = [x for x in cluster.calls if x[0] == "remove"]
    assert [a[1] for a in adds] == ["broker-0", "broker-1", "broker-2"]
    assert len(removes) == 3  # healed by stop(), long before its planned end
    assert [line["outcome"] for line in lines] == ["healed", "not-reached"]
    assert lines[0]["held_s"] < 1 and "cut short: the workload ended" in lines[0]["deviation"]
    assert nemesis.warnings == [f"a: {schedule[0]} {lines[0]['deviation']}"]


def test_overlapping_partitions_of_one_proxy_heal_when_the_last_one_ends(tmp_path):
    schedule = [PlannedFault(0, "partition", Broker(0), 0.0, 0.3, {}),
                PlannedFault(1, "partition", Broker(0), 0.1, 0.4, {})]
    cluster, _, _ = run_nemesis(schedule, tmp_path)
    toggles = [x for x in cluster.calls if x[:2] == ("enabled", "broker-0")]
    assert toggles == [("enabled", "broker-0", False), ("enabled", "broker-0", True)]  # re-enabled once, at 0.5 s


def test_a_slow_broker_start_delays_no_other_fault(tmp_path):
    """A killed broker that takes 10 s to start again: every other fault keeps its planned time and duration."""
    schedule = [PlannedFault(0, "broker-kill", Broker(0), 0.0, 0.5, {}),
                PlannedFault(1, "broker-pause", Broker(1), 1.0, 3.0, {}),
                PlannedFault(2, "lost-acks", Broker(2), 1.5, 0.5, {"cut_after_ms": 100}),
                PlannedFault(3, "lost-acks", Broker(1), 2.5, 0.5, {"cut_after_ms": 100}),
                PlannedFault(4, "isolate", Broker(2), 4.5, 0.5, {}),
                PlannedFault(5, "broker-restart", LeaderOf(0), 6.0, 1.0, {})]
    cluster = FakeCluster(leader=1, start_s=10.0)
    cluster.brokers[1].start_s = 0.0
    states = []
    after(cluster.clock, 5.0, lambda: states.append(cluster.broker_state(0)))
    _, nemesis, lines = run_nemesis(schedule, tmp_path, cluster=cluster, wait=7.5)
    assert states == ["starting"]  # broker 0 was still starting while the others ran on time
    for line in lines:
        assert line["outcome"] == "healed", line
        assert line["late_s"] == 0 and line["held_s"] == line["planned_duration"], line
        assert "deviation" not in line
    assert lines[0]["heal_s"] == 10  # the kill's start took its 10 s, on its own thread
    assert nemesis.warnings == []


def test_a_fault_due_on_a_broker_still_starting_waits_and_is_marked_late(tmp_path):
    schedule = [PlannedFault(0, "broker-kill", Broker(0), 0.0, 0.2, {}),
                PlannedFault(1, "broker-pause", Broker(0), 0.4, 0.5, {})]
    cluster = FakeCluster(start_s=1.0)
    _, nemesis, lines = run_nemesis(schedule, tmp_path, cluster=cluster, wait=2.5)
    pause = lines[1]
    assert pause["outcome"] == "healed" and pause["late_s"] == 0.8  # broker 0 runs again at 0.2 + 1.0 s
    assert pause["held_s"] == 0.5  # held its full duration from when it took effect
    assert "late (broker 0 was starting)" in pause["deviation"]
    [warning] = nemesis.warnings
    assert warning.startswith("a: fault 1 (broker-pause of broker 0") and "late" in warning
    assert cluster.calls.index(("start_broker", 0)) < cluster.calls.index(("pause_broker", 0))


def test_a_role_target_waits_for_a_running_broker_and_never_hits_a_dead_one(tmp_path):
    cluster = FakeCluster(leader=1)
    cluster.states[1] = DOWN  # the metadata still names a broker that was just killed
    after(cluster.clock, 0.5, lambda: setattr(cluster, "leader", 2))  # then the controller moves the leadership
    _, nemesis, lines = run_nemesis([PlannedFault(0, "broker-pause", LeaderOf(0), 0.0, 0.2, {})], tmp_path,
                                    cluster=cluster, wait=1.2)
    assert lines[0]["brokers"] == [2] and ("pause_broker", 1) not in cluster.calls
    assert lines[0]["late_s"] == 0.6  # the first look after 0.5 s (one every 0.2 s)
    assert "the leader of partition 0 was broker 1, down" in lines[0]["deviation"]


def test_a_target_that_never_appears_is_journaled_and_warned(tmp_path):
    class NoLeader(FakeCluster):
        def leader_of(self, topic, partition):
            raise LookupError("partition 1 has no leader right now")

    schedule = [PlannedFault(0, "broker-pause", LeaderOf(1), 0.0, 0.05, {})]
    _, nemesis, lines = run_nemesis(schedule, tmp_path, cluster=NoLeader(), wait=0.5)
    assert lines[0]["outcome"] == "not-reached" and "no leader" in lines[0]["deviation"]
    assert nemesis.warnings and nemesis.errors == []


def test_a_fault_the_cluster_refuses_is_an_error(tmp_path):
    cluster = FakeCluster()
    cluster.states[0] = PAUSED  # not what the plan allows: a harness error, never a silent second action

    def refuse(*a, **k):
        raise RuntimeError("toxiproxy API down")

    cluster.toxi.add_toxic = refuse
    schedule = [PlannedFault(0, "lost-acks", Broker(1), 0.0, 0.05, {"cut_after_ms": 1}),
                PlannedFault(1, "broker-kill", Broker(0), 0.0, 0.05, {})]
    cluster.wait_running = lambda broker, give_up: True  # skip the wait, to reach the state check
    _, nemesis, lines = run_nemesis(schedule, tmp_path, cluster=cluster)
    assert [line["outcome"] for line in lines] == ["failed", "failed"]
    assert "toxiproxy API down" in lines[0]["error"] and "broker 0 is paused, not running" in lines[1]["error"]
    assert len(nemesis.errors) == 2 and cluster.states[0] == PAUSED


def strip_actual(path):
    return "".join(json.dumps({k: v for k, v in json.loads(line).items() if k not in ACTUAL}, sort_keys=True) + "\n"
                   for line in path.read_text().splitlines())


def test_same_seed_same_journal_but_actual_times_and_replay_reproduces_it(tmp_path):
    s = spec([{"kind": "lost-acks", "every": 0.1, "jitter": 0.03, "duration": 0.02, "start": 0.02},
              {"kind": "reset-connections", "at": 0.15, "target": "random"}],
             workload={"messages": 30, "rate": 100})
    run_nemesis(plan(s, 4), tmp_path, name="one.jsonl")
    run_nemesis(plan(s, 4), tmp_path, name="two.jsonl")
    run_nemesis(plan(s, 5), tmp_path, name="other.jsonl")
    one, two = strip_actual(tmp_path / "one.jsonl"), strip_actual(tmp_path / "two.jsonl")
    assert one == two
    assert one != strip_actual(tmp_path / "other.jsonl")
    assert (tmp_path / "one.jsonl").read_text() != (tmp_path / "two.jsonl").read_text()  # actual times differ
    replayed = load(tmp_path / "one.jsonl", s)
    assert replayed == plan(s, 4)
    run_nemesis(replayed, tmp_path, name="replay.jsonl")
    assert strip_actual(tmp_path / "replay.jsonl") == one


def test_replay_refuses_what_this_experiment_cannot_do(tmp_path):
    s = spec([])
    good = {"id": 0, "kind": "lost-acks", "target": {"broker": 0}, "planned_at": 0.5, "planned_duration": 0.2,
            "params": {"cut_after_ms": 100}}
    path = tmp_path / "f.jsonl"
    for bad, says in [({"target": {"broker": 4}}, "does not exist"), ({"target": {"leader-of": 3}}, "does not exist"),
                      ({"target": "broker-x"}, "does not exist"), ({"kind": "meteor"}, "unknown fault kind"),
                      ({"planned_at": "soon"}, "planned_at: \"soon\" is not a number of seconds")]:
        path.write_text(json.dumps({**good, **bad}) + "\n")
        with pytest.raises(ScheduleError, match=says):
            load(path, s)
    path.write_text(json.dumps({**good, "target": {"leader-of": 2}}) + "\n")
    assert load(path, s)[0].target == LeaderOf(2)
    path.write_text(json.dumps({**good, "target": "leader-of-2"}) + "\n")  # recorded before targets were typed
    assert load(path, s)[0].target == LeaderOf(2)


def test_replay_refuses_overlapping_broker_faults(tmp_path):
    s = spec([], cluster={"backend": "local", "broker": "kafka", "brokers": 3}, workload={"messages": 1000, "rate": 100})
    kill = {"id": 0, "kind": "broker-kill", "target": {"broker": 1}, "planned_at": 1.0, "planned_duration": 2.0,
            "params": {}}
    pause = {"id": 1, "kind": "broker-pause", "target": "all", "planned_at": 2.0, "planned_duration": 1.0,
             "params": {}}
    path = tmp_path / "f.jsonl"
    path.write_text(json.dumps(kill) + "\n" + json.dumps(pause) + "\n")
    with pytest.raises(ScheduleError, match=r"fault 1 \(broker-pause of all brokers, 2-3 s\) may hit"):
        load(path, s)


def test_settle_heals_every_state_and_waits_out_a_start_in_progress(monkeypatch):
    import harness.cluster.base as base

    waited = []
    monkeypatch.setattr(base, "wait_until_replicated", lambda *a, **k: waited.append(k["brokers"]))
    cluster = FakeCluster(start_s=0.5)
    cluster.pause_broker(0)
    cluster.kill_broker(1)
    cluster.kill_broker(2)
    starter = cluster.clock.start_thread(cluster.start_broker, "heal", (2,))  # a fault's heal, 0.5 s long
    cluster.clock.sleep(0.1)
    assert cluster.states[2] == "starting"
    cluster.settle("t", 3)
    starter.join()
    assert cluster.states == [RUNNING] * 3 and waited == [3]
    assert ("resume_broker", 0) in cluster.calls and cluster.calls.count(("start_broker", 2)) == 1
    assert ("reset",) in cluster.calls


def test_a_role_target_is_resolved_ahead_so_a_slow_lookup_does_not_make_the_fault_late(tmp_path):
    class SlowMetadata(FakeCluster):
        def leader_of(self, topic, partition):
            self.clock.sleep(0.4)  # a metadata round trip on a loaded machine
            return super().leader_of(topic, partition)

    cluster = SlowMetadata(leader=1)
    after(cluster.clock, 0.6, lambda: setattr(cluster, "leader", 2))  # leadership moves before the fault is due
    schedule = [PlannedFault(0, "broker-kill", LeaderOf(0), 1.5, 0.2, {})]
    _, nemesis, lines = run_nemesis(schedule, tmp_path, cluster=cluster, wait=2.3)
    assert lines[0]["outcome"] == "healed" and lines[0]["brokers"] == [2], lines[0]  # the leader at the time
    assert abs(lines[0]["late_s"]) <= 0.1, lines[0]
    assert sum(1 for c in cluster.calls if c[0] == "leader_of") >= 2  # looked up more than once ahead
    assert nemesis.warnings == []


def test_a_fault_stopped_while_resolving_ahead_was_never_due(tmp_path):
    schedule = [PlannedFault(0, "broker-pause", LeaderOf(0), 1.5, 0.2, {})]
    cluster, nemesis, lines = run_nemesis(schedule, tmp_path, wait=0.3)
    assert lines[0]["outcome"] == "not-reached" and "deviation" not in lines[0]
    assert ("pause_broker", 2) not in cluster.calls and nemesis.warnings == []


def test_a_kill_counts_from_the_signal_not_from_the_reaping_and_threads_start_before_they_are_due(tmp_path):
    class SlowReaping(FakeBroker):
        def kill(self):
            super().kill()
            sent = self.clock.monotonic()
            self.clock.sleep(0.4)  # the kernel tearing a large JVM down on a loaded machine
            return sent

        def stop(self):
            sent = self.clock.monotonic()
            super().stop()
            self.clock.sleep(0.3)  # a controlled shutdown: leadership moved away, logs closed
            return sent

    cluster = FakeCluster(leader=1)
    cluster.brokers = [SlowReaping(i, cluster.calls, cluster.clock) for i in range(3)]
    schedule = [PlannedFault(0, "broker-kill", LeaderOf(0), 1.0, 0.5, {}),
                PlannedFault(1, "broker-kill", Broker(2), 1.0, 0.5, {}),
                PlannedFault(2, "broker-restart", Broker(0), 1.0, 0.5, {})]
    _, nemesis, lines = run_nemesis(schedule, tmp_path, cluster=cluster, wait=2.5)
    for line in lines:
        assert line["outcome"] == "healed" and abs(line["late_s"]) <= 0.1, line
        assert line["applied_offset"] >= 1.0 and abs(line["held_s"] - 0.5) <= 0.1, line
    assert nemesis.warnings == []


def test_delay_requests_holds_each_named_request_type_on_the_clients_stream_until_it_heals(tmp_path):
    schedule = [PlannedFault(0, "delay-requests", Broker(1), 0.0, 1.0,
                             {"requests": ["Produce", "EndTxn"], "hold_ms": 7000, "drop": False})]
    cluster, nemesis, [line] = run_nemesis(schedule, tmp_path)
    c = cluster.calls
    adds = [x for x in c if x[0] == "add"]
    assert adds == [("add", "broker-1", "delay-requests-0-Produce", "kafka_hold", "upstream",
                     {"api_key": 0, "hold": 7000, "drop": 0, "gap": 0}),
                    ("add", "broker-1", "delay-requests-0-EndTxn", "kafka_hold", "upstream",
                     {"api_key": 26, "hold": 7000, "drop": 0, "gap": 0})]
    assert [x for x in c if x[0] == "remove"] == [("remove", "broker-1", "delay-requests-0-Produce"),
                                                  ("remove", "broker-1", "delay-requests-0-EndTxn")]
    assert line["effect"] == {"1": {"kafka_requests": {"held": 4, "dropped": 0, "unparsed": 2}}}
    assert line["outcome"] == "healed" and nemesis.errors == []


def test_lose_unflushed_kills_cuts_the_variants_topic_and_journals_the_cut_then_starts_the_broker(tmp_path):
    class Cutting(FakeCluster):
        def lose_unflushed(self, broker, topic, drop_batches):
            def kill_and_cut(node):
                node.kill()
                sent = self.clock.monotonic()
                self.clock.sleep(0.3)  # reaping and cutting
                self.calls.append(("cut", broker, topic, drop_batches))
                return {"took_effect": sent, "cut": [{"topic": topic, "partition": 0, "cut_batches": 2}]}
            return self._transition(broker, RUNNING, DOWN, DOWN, kill_and_cut)

    cluster = Cutting(leader=1)
    schedule = [PlannedFault(0, "lose-unflushed", LeaderOf(0), 1.0, 2.0, {"drop_batches": 2})]
    _, nemesis, [line] = run_nemesis(schedule, tmp_path, cluster=cluster)
    c = cluster.calls
    assert c.index(("kill_broker", 1)) < c.index(("cut", 1, "topic-a", 2)) < c.index(("start_broker", 1))
    assert line["effect"] == {"1": {"cut": [{"topic": "topic-a", "partition": 0, "cut_batches": 2}]}}
    assert line["outcome"] == "healed" and abs(line["late_s"]) <= 0.05  # from the kill, not the end of the cut
    assert cluster.states == [RUNNING] * 3 and nemesis.errors == []


# -- the workload ended: faults still due are applied, waited for at most GRACE past their planned times ----

def finish_at(schedule, ended, cluster=None, halt=None, idle=None):
    """The nemesis, its workload ending `ended` seconds in (finish() called then); (lines, time finish returned)."""
    cluster = cluster or FakeCluster()
    lines = []
    nemesis = Nemesis(cluster, schedule, "a", lines.extend, "topic-a", clock=cluster.clock)
    nemesis.workload.idle = idle and (lambda: nemesis.workload.serve(idle))
    nemesis.start()
    cluster.clock.sleep(ended)
    nemesis.finish(halt)
    return cluster, lines, cluster.clock.monotonic()


def test_a_fault_due_as_the_workload_ends_is_applied_not_dropped():
    # Due at 1.0 s, the workload ended at 0.9 s: finish() waits for it (it used to be journaled not-reached).
    schedule = [PlannedFault(0, "lost-acks", Broker(1), 1.0, 0.5, {"cut_after_ms": 100})]
    cluster, lines, returned = finish_at(schedule, 0.9)
    assert lines[0]["outcome"] == "healed" and lines[0]["late_s"] == 0
    assert ("add", "broker-1", "lost-acks-0", "timeout", "downstream", {"timeout": 100}) in cluster.calls
    assert returned == pytest.approx(1.0, abs=0.05)  # stopped as soon as nothing was due: held short, healed
    assert "cut short" in lines[0]["deviation"]


def test_a_fault_whose_target_never_comes_back_is_not_reached_a_grace_past_its_planned_time():
    cluster = FakeCluster()
    cluster.states[1] = DOWN  # broker 1 never runs again: the kill due at 1.0 s can never be applied
    schedule = [PlannedFault(0, "broker-kill", Broker(1), 1.0, 0.5, {})]
    _, lines, returned = finish_at(schedule, 0.5, cluster)
    assert lines[0]["outcome"] == "not-reached" and "never applied" in lines[0]["deviation"]
    assert returned == pytest.approx(1.0 + GRACE, abs=0.1)


def test_a_workload_fault_due_after_the_loop_ended_is_served_by_its_idle_server():
    served = []
    schedule = [PlannedFault(0, "producer-restart", Workload(), 1.0, 0.0, {})]
    table = {RESTART_PRODUCER: (lambda params: served.append(("producer-restart", "apply")), None)}
    _, lines, _ = finish_at(schedule, 0.5, idle=table)
    assert served == [("producer-restart", "apply")] and lines[0]["outcome"] == "healed"


def test_without_a_server_a_workload_fault_due_after_the_loop_is_not_reached_after_the_grace():
    schedule = [PlannedFault(0, "producer-restart", Workload(), 1.0, 0.0, {})]
    _, lines, returned = finish_at(schedule, 0.5)
    assert lines[0]["outcome"] == "not-reached" and returned == pytest.approx(1.0 + GRACE, abs=0.1)


def test_the_runs_stop_cuts_the_wait_short():
    halt = threading.Event()
    halt.set()  # a broker died, the run is ending: no wait for the fault due at 30 s
    schedule = [PlannedFault(0, "latency", AllBrokers(), 30.0, 1.0, {"latency_ms": 5, "jitter_ms": 0})]
    _, lines, returned = finish_at(schedule, 0.5, halt=halt)
    assert lines[0]["outcome"] == "not-reached" and returned < 1.0


def test_a_fault_the_nemesis_could_not_apply_makes_the_run_unknown_not_a_pass(tmp_path):
    # From the nemesis's journal to the exit status: faults.jsonl -> faults_not_applied -> verdict unknown (exit 3).
    folder = RunFolder.create(tmp_path, "exp")
    cluster = FakeCluster()
    cluster.states[1] = DOWN  # the kill due at 1.0 s never finds broker 1 running
    schedule = [PlannedFault(0, "latency", Broker(0), 0.2, 0.2, {"latency_ms": 5, "jitter_ms": 0}),
                PlannedFault(1, "broker-kill", Broker(1), 1.0, 0.5, {})]
    nemesis = Nemesis(cluster, schedule, "a", folder.append_faults, "topic-a", clock=cluster.clock)
    nemesis.start()
    cluster.clock.sleep(0.9)
    nemesis.finish()
    assert faults_not_applied(folder.read_faults(), "a") == 1
    metrics = {**{k: 0 for k in KEYS}, "sent": 10, "acked": 10, "received": 10, "unique": 10,
               "faults_not_applied": faults_not_applied(folder.read_faults(), "a")}
    run = summary.build("r", "exp", "complete", {"a": summary.variant_entry(metrics, {}, [])})
    assert run["verdict"] == "unknown" and exit_for_verdict(run["verdict"]) == Exit.INFRA
    # Unless the experiment expects exactly that.
    entry = summary.variant_entry(metrics, {"faults_not_applied": parse_rule("== 1")}, [])
    assert entry["verdict"] == "pass"


def test_stray_produce_writes_to_its_partitions_leader_and_journals_the_answers(tmp_path, monkeypatch):
    from harness.faults.kinds import stray_produce as stray_module
    calls = []

    def stray(client, leader, topic, partition, records, log):
        calls.append((client, leader, topic, partition, records, log))
        sent = cluster.clock.monotonic()
        cluster.clock.sleep(0.8)  # its own transaction, the wait for the abort's marker
        return {"answers": ["NONE"], "offset": 417, "took_effect": sent}

    monkeypatch.setattr(stray_module, "stray_produce", stray)
    cluster = FakeCluster(leader=1)
    cluster.client, cluster.endpoints = {"bootstrap.servers": "b:1"}, ["e:0", "e:1", "e:2"]
    schedule = [PlannedFault(0, "stray-produce", LeaderOf(0), 1.0, 0.3, {"partition": 0, "records": 5})]
    _, nemesis, [line] = run_nemesis(schedule, tmp_path, cluster=cluster)
    assert calls == [({"bootstrap.servers": "b:1"}, "e:1", "topic-a", 0, 5, cluster.files.fault_log("stray-produce"))]
    assert line["effect"] == {"1": {"answers": ["NONE"], "offset": 417}} and line["brokers"] == [1]
    assert line["outcome"] == "healed" and abs(line["late_s"]) <= 0.05  # from when the request left
    assert nemesis.errors == []


def test_the_journal_check_of_real_runs_holds_for_a_late_fault_and_catches_each_contradiction(tmp_path):
    # tests/journal.py is what the real-cluster tiers assert instead of timeliness: it must accept what the
    # nemesis writes for a late fault, and refuse a journal that hides lateness or a short hold.
    schedule = [PlannedFault(0, "broker-kill", Broker(0), 0.0, 0.2, {}),
                PlannedFault(1, "broker-pause", Broker(0), 0.4, 0.5, {})]
    _, nemesis, lines = run_nemesis(schedule, tmp_path, cluster=FakeCluster(start_s=1.0), wait=2.5)
    lines = [{"variant": "a", **line} for line in lines]
    summary = {"warnings": nemesis.warnings}
    assert "deviation" in lines[1] and journal_problems(lines, summary) == []
    hidden = [lines[0], {k: v for k, v in lines[1].items() if k != "deviation"}]
    assert "deviation None" in journal_problems(hidden, summary)[0]
    assert "not among summary.json's warnings" in journal_problems(lines, {"warnings": []})[0]
    short = [lines[0], {**lines[1], "held_s": 0.3, "healed_offset": lines[1]["applied_offset"] + 0.3}]
    assert "and not said to be cut short" in journal_problems(short, summary)[0]
    wrong = [lines[0], {**lines[1], "late_s": 0.0}]
    assert "is not applied_offset - planned_at" in journal_problems(wrong, summary)[0]
