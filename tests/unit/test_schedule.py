from pathlib import Path

import pytest

from harness.schedule import (START_ALLOWANCE, AllBrokers, Broker, FollowerOf, LeaderOf, PlannedFault,
                                     ScheduleError, dumps, overlaps, plan)
from harness.spec import ExperimentSpec, load_spec

ROOT = Path(__file__).resolve().parents[2]

SPEC = {
    "name": "t",
    "workload": {"messages": 1000, "rate": 100},  # a 10 s window
    "variants": [{"name": "a"}],
    "faults": [
        {"kind": "lost-acks", "every": 1.0, "jitter": 0.3, "duration": 0.2},
        {"kind": "reset-connections", "at": 4.5},
        {"kind": "latency", "every": 3.0, "start": 1.0, "latency_ms": 50, "target": "random"},
    ],
}


def spec(**over):
    return ExperimentSpec.model_validate({**SPEC, **over})


def test_same_seed_same_schedule_other_seed_other_schedule():
    assert dumps(plan(spec(), 7)) == dumps(plan(spec(), 7))
    assert dumps(plan(spec(), 7)) != dumps(plan(spec(), 8))


def test_schedule_content():
    s = plan(spec(), 3)
    kinds = [f.kind for f in s]
    assert kinds.count("lost-acks") == 10  # start 0.5, every 1.0, window 10
    assert kinds.count("reset-connections") == 1 and kinds.count("latency") == 3
    assert [f.at for f in s] == sorted(f.at for f in s)
    assert [f.id for f in s] == list(range(len(s)))
    for f in s:
        if f.kind == "lost-acks":
            assert f.params == {"cut_after_ms": 100} and f.duration == 0.2
        if f.kind == "latency":
            assert f.params == {"latency_ms": 50, "jitter_ms": 0}
            assert f.target == Broker(0)  # random among 1 broker
    reset = next(f for f in s if f.kind == "reset-connections")
    assert reset.at == 4.5 and reset.target == AllBrokers()


def test_jitter_stays_within_bounds():
    for seed in range(20):
        times = [f.at for f in plan(spec(), seed) if f.kind == "lost-acks"]
        for k, t in enumerate(times):
            assert abs(t - (0.5 + k)) <= 0.3 + 1e-9


def test_editing_one_fault_does_not_move_the_others():
    before = [f for f in plan(spec(), 5) if f.kind == "lost-acks"]
    faults = list(SPEC["faults"])
    faults[2] = {**faults[2], "every": 2.0}
    after = [f for f in plan(spec(faults=faults), 5) if f.kind == "lost-acks"]
    assert [f.at for f in before] == [f.at for f in after]


KAFKA = {"backend": "local", "broker": "kafka", "brokers": 3}


def kafka_spec(faults, **over):
    over.setdefault("workload", {"messages": 6000, "rate": 100})  # a 60 s window
    return spec(cluster=KAFKA, topic={"partitions": 3, "replication_factor": 3}, faults=faults, **over)


def test_targets_are_typed_and_written_as_in_the_experiment_file():
    s = kafka_spec([{"kind": "isolate", "at": 1, "target": {"leader-of": 2}},
                    {"kind": "latency", "at": 2, "target": {"follower-of": 0}},
                    {"kind": "partition", "at": 3, "target": {"broker": 1}},
                    {"kind": "lost-acks", "at": 4}])
    faults = plan(s, 1)
    assert [f.target for f in faults] == [LeaderOf(2), FollowerOf(0), Broker(1), AllBrokers()]
    assert [f.to_json()["target"] for f in faults] == [{"leader-of": 2}, {"follower-of": 0}, {"broker": 1}, "all"]


def test_overlapping_broker_faults_that_could_meet_are_refused_naming_both():
    s = kafka_spec([{"kind": "broker-kill", "at": 5, "downtime": 4, "target": {"broker": 1}},
                    {"kind": "broker-pause", "at": 20, "duration": 2, "target": {"broker": 1}}])
    with pytest.raises(ScheduleError) as e:  # 20 s is within the kill's 4 s + 20 s to start again
        plan(s, 1)
    assert "fault 1 (broker-pause of broker 1, 20-22 s) may hit the broker that fault 0 (broker-kill of broker 1, 5-9 s)" \
        in str(e.value) and "up to 20 s to start again" in str(e.value)


@pytest.mark.parametrize("first, second, refused", [
    # the same broker, or either on all brokers: refused while the first holds its broker
    ({"kind": "broker-pause", "at": 1, "duration": 3, "target": {"broker": 0}},
     {"kind": "broker-kill", "at": 2, "target": {"broker": 0}}, True),
    ({"kind": "broker-pause", "at": 1, "duration": 3, "target": {"broker": 0}},
     {"kind": "broker-kill", "at": 2, "target": "all"}, True),
    # two brokers named apart never meet
    ({"kind": "broker-pause", "at": 1, "duration": 3, "target": {"broker": 0}},
     {"kind": "broker-kill", "at": 2, "target": {"broker": 1}}, False),
    # a leader-of target never picks a broker that is down or starting ...
    ({"kind": "broker-kill", "at": 1, "downtime": 3, "target": {"broker": 0}},
     {"kind": "broker-pause", "at": 2, "target": {"leader-of": 0}}, False),
    # ... but a paused leader still leads until its session times out
    ({"kind": "broker-pause", "at": 1, "duration": 3, "target": {"broker": 0}},
     {"kind": "broker-kill", "at": 2, "target": {"leader-of": 0}}, True),
    ({"kind": "broker-pause", "at": 1, "duration": 3, "target": {"leader-of": 1}},
     {"kind": "broker-restart", "at": 2, "target": {"follower-of": 0}}, True),
    # a broker named after a leader-of fault may be that leader
    ({"kind": "broker-kill", "at": 1, "downtime": 3, "target": {"leader-of": 0}},
     {"kind": "broker-pause", "at": 30, "target": {"broker": 2}}, False),  # after the 20 s start allowance
    ({"kind": "broker-kill", "at": 1, "downtime": 3, "target": {"leader-of": 0}},
     {"kind": "broker-pause", "at": 20, "target": {"broker": 2}}, True),
    # network faults (isolate included) are not broker states
    ({"kind": "broker-kill", "at": 1, "target": {"broker": 0}},
     {"kind": "isolate", "at": 2, "duration": 10, "target": {"broker": 0}}, False),
])
def test_the_overlap_rule(first, second, refused):
    s = kafka_spec([first, second])
    if refused:
        with pytest.raises(ScheduleError, match="may hit the broker"):
            plan(s, 1)
    else:
        plan(s, 1)


@pytest.mark.parametrize("first, second, refused", [
    # a network fault that picks its broker by role while a pause holds one: a paused leader still leads
    ({"kind": "broker-pause", "at": 1, "duration": 3, "target": {"leader-of": 0}},
     {"kind": "isolate", "at": 2, "duration": 4, "target": {"leader-of": 0}}, True),
    ({"kind": "broker-pause", "at": 1, "duration": 3, "target": {"broker": 2}},
     {"kind": "latency", "at": 1, "duration": 4, "target": {"follower-of": 1}}, True),
    # ... not once the pause has healed, nor after a kill (a role never picks a broker that is down)
    ({"kind": "broker-pause", "at": 1, "duration": 3, "target": {"leader-of": 0}},
     {"kind": "isolate", "at": 4.5, "duration": 4, "target": {"leader-of": 0}}, False),
    ({"kind": "broker-kill", "at": 1, "downtime": 3, "target": {"leader-of": 0}},
     {"kind": "isolate", "at": 2, "duration": 4, "target": {"leader-of": 0}}, False),
    # ... nor one that names its broker, nor one that began before the pause
    ({"kind": "broker-pause", "at": 1, "duration": 3, "target": {"leader-of": 0}},
     {"kind": "isolate", "at": 2, "duration": 4, "target": {"broker": 1}}, False),
    ({"kind": "isolate", "at": 1, "duration": 4, "target": {"leader-of": 0}},
     {"kind": "broker-pause", "at": 2, "duration": 3, "target": {"broker": 1}}, False),
])
def test_a_fault_by_role_waits_on_a_paused_broker(first, second, refused):
    s = kafka_spec([first, second])
    if refused:
        with pytest.raises(ScheduleError, match="picks its broker by role while fault 0 .broker-pause"):
            plan(s, 1)
    else:
        plan(s, 1)


def test_the_start_allowance_follows_the_broker_kind():
    faults = [{"kind": "broker-kill", "at": 1, "downtime": 1, "target": {"broker": 0}},
              {"kind": "broker-pause", "at": 5, "target": {"broker": 0}}]
    plan(spec(faults=faults), 1)  # Tansu is back in well under 2 s
    with pytest.raises(ScheduleError):
        plan(kafka_spec(faults), 1)  # a Kafka node may take up to 20 s
    assert START_ALLOWANCE["kafka"] > START_ALLOWANCE["tansu"]


def test_overlaps_lists_every_pair():
    a = PlannedFault(0, "broker-pause", Broker(0), 1.0, 5.0)
    b = PlannedFault(1, "broker-kill", LeaderOf(0), 2.0, 1.0)
    c = PlannedFault(2, "broker-restart", Broker(0), 3.0, 1.0)
    d = PlannedFault(3, "lost-acks", Broker(0), 3.0, 1.0)
    assert overlaps([a, b, c, d], 20.0) == [(a, b), (a, c), (b, c)]


@pytest.mark.parametrize("name", ["nightly.yaml", "broker-failover.yaml", "leader-isolation.yaml",
                                  "unclean-election.yaml"])
def test_kafka_experiments_never_plan_a_fault_the_cluster_cannot_take(name):
    s = load_spec(ROOT / "experiments" / name)
    for seed in range(200):
        faults = plan(s, seed)  # raises on any overlap
        assert faults and overlaps(faults, START_ALLOWANCE["kafka"]) == []
