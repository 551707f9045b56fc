"""The nemesis against a fake cluster: what it calls, what it journals, and replay."""

import json
import time

import pytest

from harness.faults.nemesis import FaultJournal, Nemesis
from harness.faults.schedule import PlannedFault, ScheduleError, load, plan
from harness.spec import ExperimentSpec

ACTUAL = {"applied_at", "applied_offset", "healed_at", "healed_offset"}


class FakeToxiproxy:
    def __init__(self, calls):
        self.calls = calls

    def add_toxic(self, proxy, name, **toxic):
        self.calls.append(("add", proxy, name, toxic["type"], toxic["stream"], toxic["attributes"]))

    def remove_toxic(self, proxy, name):
        self.calls.append(("remove", proxy, name))

    def set_enabled(self, proxy, enabled):
        self.calls.append(("enabled", proxy, enabled))


class FakeCluster:
    broker_count = 3

    def __init__(self, leader=2):
        self.calls = []
        self.leader = leader

    def toxiproxy(self):
        return FakeToxiproxy(self.calls)

    def proxy_name(self, broker):
        return f"broker-{broker}"

    def leader_of(self, topic, partition):
        self.calls.append(("leader_of", topic, partition))
        return self.leader

    def __getattr__(self, name):  # pause_broker, kill_broker, ...: record the call
        if name.endswith("_broker"):
            return lambda broker: self.calls.append((name, broker))
        raise AttributeError(name)


def spec(faults, **over):
    return ExperimentSpec.model_validate({
        "name": "t", "cluster": {"brokers": 1}, "topic": {"partitions": 3},
        "workload": {"messages": 100, "rate": 100}, "variants": [{"name": "a"}], "faults": faults, **over})


def run_nemesis(schedule, tmp_path, cluster=None, wait=None, name="faults.jsonl"):
    cluster = cluster or FakeCluster()
    nemesis = Nemesis(cluster, schedule, "a", FaultJournal(tmp_path / name), "topic-a")
    nemesis.start()
    time.sleep(wait if wait is not None else max(f.at + f.duration for f in schedule) + 0.15)
    nemesis.stop()
    lines = [json.loads(x) for x in (tmp_path / name).read_text().splitlines()]
    return cluster, nemesis, lines


def test_each_kind_applies_and_heals(tmp_path):
    schedule = [
        PlannedFault(0, "lost-acks", "broker-1", 0.0, 0.05, {"cut_after_ms": 100}),
        PlannedFault(1, "partition", "broker-0", 0.0, 0.05, {}),
        PlannedFault(2, "broker-pause", "leader-of-1", 0.0, 0.05, {}),
        PlannedFault(3, "broker-kill", "broker-2", 0.0, 0.05, {}),
    ]
    cluster, nemesis, lines = run_nemesis(schedule, tmp_path)
    c = cluster.calls
    assert ("add", "broker-1", "lost-acks-0", "timeout", "downstream", {"timeout": 100}) in c
    assert ("remove", "broker-1", "lost-acks-0") in c
    assert c.index(("enabled", "broker-0", False)) < c.index(("enabled", "broker-0", True))
    assert ("leader_of", "topic-a", 1) in c and ("pause_broker", 2) in c and ("resume_broker", 2) in c
    assert c.index(("kill_broker", 2)) < c.index(("start_broker", 2))
    assert [line["outcome"] for line in lines] == ["healed"] * 4
    assert nemesis.errors == []


def test_all_targets_every_broker_and_stop_heals_what_is_active(tmp_path):
    schedule = [PlannedFault(0, "latency", "all", 0.0, 60.0, {"latency_ms": 5, "jitter_ms": 0}),
                PlannedFault(1, "bandwidth", "all", 30.0, 1.0, {"rate_kbps": 10})]
    cluster, _, lines = run_nemesis(schedule, tmp_path, wait=0.2)
    adds = [x for x in cluster.calls if x[0] == "add"]
    removes = [x for x in cluster.calls if x[0] == "remove"]
    assert [a[1] for a in adds] == ["broker-0", "broker-1", "broker-2"]
    assert len(removes) == 3  # healed by stop(), long before its planned end
    assert [line["outcome"] for line in lines] == ["healed", "not-reached"]


def test_a_failing_fault_is_journaled_as_failed(tmp_path):
    class Broken(FakeCluster):
        def leader_of(self, topic, partition):
            raise LookupError("partition 1 has no leader right now")

    schedule = [PlannedFault(0, "broker-pause", "leader-of-1", 0.0, 0.05, {})]
    _, nemesis, lines = run_nemesis(schedule, tmp_path, cluster=Broken())
    assert lines[0]["outcome"] == "failed" and "no leader" in lines[0]["error"]
    assert nemesis.errors


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
    good = {"id": 0, "kind": "lost-acks", "target": "broker-0", "planned_at": 1.0, "planned_duration": 0.2,
            "params": {"cut_after_ms": 100}}
    for bad, says in [({"target": "broker-4"}, "does not exist"), ({"kind": "meteor"}, "unknown fault kind"),
                      ({"planned_at": "soon"}, "not a faults.jsonl line")]:
        path = tmp_path / "f.jsonl"
        path.write_text(json.dumps({**good, **bad}) + "\n")
        with pytest.raises(ScheduleError, match=says):
            load(path, s)
    path.write_text(json.dumps({**good, "target": "leader-of-2"}) + "\n")
    assert load(path, s)[0].target == "leader-of-2"
