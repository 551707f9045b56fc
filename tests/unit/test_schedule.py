from harness.faults.schedule import dumps, plan
from harness.spec import ExperimentSpec

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
            assert f.target == "broker-0"  # random among 1 broker
    reset = next(f for f in s if f.kind == "reset-connections")
    assert reset.at == 4.5 and reset.target == "all"


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
