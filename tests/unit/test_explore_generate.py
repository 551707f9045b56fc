"""Drawing and mutating a try's schedule (harness/explore/generate.py): within the space, deterministic for a
generator's state, planned as `kafka-chaos run` plans it, and written out as an experiment `run` takes."""

import random
from pathlib import Path

import pytest
import yaml

from harness.explore.corpus import Corpus
from harness.explore.generate import draw, experiment_doc, mutate, next_schedule, schedule_of, try_spec
from harness.space import Span, window
from harness.schedule import ScheduleError, plan
from harness.spec import SpecError, load_spec
from tests.unit.test_spec import write

SPACE = {
    "kinds": {
        "latency": {"latency_ms": [500, 4000], "jitter_ms": [0, 300], "duration": [0.5, 3]},
        "lost-acks": {},
        "reset-connections": {"target": ["all", "random"]},
        "broker-kill": {"downtime": [1, 5], "target": ["random", {"leader-of": 0}]},
        "delay-requests": {},
    },
    "faults": [1, 4],
    "window": [0.5, 8],
    "messages": 2000,
}
DOC = {"name": "t", "workload": {"messages": 1000, "rate": 100}, "variants": [{"name": "a"}], "explore": SPACE}


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    return load_spec(write(tmp_path_factory.mktemp("space"), DOC))


def within(spec, faults):
    """Every fault of a schedule is one the space could draw."""
    low, high = spec.explore.faults
    assert low <= len(faults) <= high
    start, end = window(spec.explore, spec)
    assert [f["at"] for f in faults] == sorted(f["at"] for f in faults)
    for f in faults:
        assert start <= f["at"] <= end and f["at"] == round(f["at"], 3)
        settings = spec.explore.settings(f["kind"])
        assert set(f) == {"kind", "at", *settings}
        for name, setting in settings.items():
            value = f[name]
            if isinstance(setting, Span):
                assert setting.low <= value <= setting.high
                assert isinstance(value, int) == setting.integer
            elif name == "requests":
                assert value[0] in setting.values
            else:
                assert value in setting.values


def test_a_fresh_draw_stays_within_the_space(spec):
    rng = random.Random(3)
    kinds = set()
    for _ in range(200):
        faults = draw(spec, rng)
        within(spec, faults)
        kinds |= {f["kind"] for f in faults}
        assert all("every" not in f for f in faults)
    assert kinds == set(SPACE["kinds"])


def test_an_entry_is_in_experiment_file_form(spec):
    faults = draw(spec, random.Random(5))
    for f in faults:
        assert list(f)[:4] == ["kind", "at", "downtime" if f["kind"] == "broker-kill" else "duration", "target"]


def test_the_same_seed_draws_the_same_schedule_and_another_seed_another(spec):
    assert draw(spec, random.Random(7)) == draw(spec, random.Random(7))
    assert len({repr(draw(spec, random.Random(seed))) for seed in range(20)}) == 20
    a, b = random.Random(11), random.Random(11)
    assert [next_schedule(spec, a, None) for _ in range(5)] == [next_schedule(spec, b, None) for _ in range(5)]


def test_a_mutation_is_one_step_away_and_leaves_its_input_alone(spec):
    rng = random.Random(13)
    steps = set()
    for _ in range(300):
        before = draw(spec, rng)
        kept = yaml.safe_dump(before)
        after = mutate(before, spec, rng)
        assert yaml.safe_dump(before) == kept  # never mutates the input
        within(spec, after)
        if len(after) == len(before) + 1:
            steps.add("add")
        elif len(after) == len(before) - 1:
            steps.add("remove")
        else:
            moved = [(a, b) for a, b in zip(sorted(before, key=repr), sorted(after, key=repr)) if a != b]
            changed = {k for a, b in moved for k in a if a[k] != b.get(k)}
            steps.add("shift" if changed == {"at"} else "redraw" if changed else "same")
    assert {"add", "remove", "shift", "redraw"} <= steps
    assert mutate(before, spec, random.Random(1)) == mutate(before, spec, random.Random(1))


def test_a_mutation_of_a_space_with_nothing_to_vary_replaces_the_fault(tmp_path):
    doc = {**DOC, "explore": {"kinds": {"lost-acks": {"duration": 1, "cut_after_ms": 5, "target": "all"},
                                        "latency": {"duration": 1, "latency_ms": 5, "jitter_ms": 0, "target": "all"}},
                              "faults": 1, "window": [2, 2]}}
    spec = load_spec(write(tmp_path, doc))
    rng = random.Random(0)
    seen = {mutate([{"kind": "lost-acks", "at": 2.0, "duration": 1, "target": "all", "cut_after_ms": 5}], spec,
                   rng)[0]["kind"] for _ in range(30)}
    assert seen == {"lost-acks", "latency"}


def test_schedule_of_plans_as_run_does_and_refuses_faults_that_meet(spec):
    faults = [{"kind": "broker-kill", "at": 1.0, "downtime": 2, "target": "random"},
              {"kind": "latency", "at": 2.0, "duration": 1, "target": "all", "latency_ms": 600, "jitter_ms": 0}]
    schedule = schedule_of(spec, faults, 5)
    assert [(f.kind, f.at, f.duration) for f in schedule] == [("broker-kill", 1.0, 2.0), ("latency", 2.0, 1.0)]
    meet = [{"kind": "broker-kill", "at": 1.0, "downtime": 2, "target": "random"},
            {"kind": "broker-kill", "at": 2.0, "downtime": 2, "target": "random"}]  # one broker: the same
    with pytest.raises(ScheduleError, match="may hit the broker that fault 0"):
        schedule_of(spec, meet, 5)


def test_try_spec_is_the_experiment_a_try_runs(spec):
    faults = draw(spec, random.Random(2))
    tried = try_spec(spec, faults)
    assert tried.explore is None and tried.workload.messages == 2000 and tried.workload.rate == 100
    assert [f.kind for f in tried.faults] == [f["kind"] for f in faults]
    assert spec.workload.messages == 1000 and spec.explore is not None  # the experiment itself unchanged
    with pytest.raises(SpecError, match=r"t \(explored try\): faults.0.target: broker 4 does not exist"):
        try_spec(spec, [{"kind": "latency", "at": 1.0, "target": {"broker": 4}}])


def test_a_finding_written_out_runs_the_same_schedule(spec, tmp_path):
    for seed in range(5):
        faults = next_schedule(spec, random.Random(seed), None)[0]
        path = tmp_path / f"finding-{seed}.yaml"
        path.write_text(yaml.safe_dump(experiment_doc(spec, faults, 40 + seed), sort_keys=False))
        again = load_spec(path)
        assert again.explore is None and again.seed == 40 + seed
        assert plan(again, again.seed) == schedule_of(spec, faults, 40 + seed)


def test_a_matrix_experiment_tries_its_variants_once(tmp_path):
    doc = {**DOC, "variants": [], "matrix": {"acks": [1, "all"]},
           "allow": {"acks=1": ["lost"]}, "explore": {"kinds": {"latency": {}}}}
    spec = load_spec(write(tmp_path, doc))
    tried = try_spec(spec, draw(spec, random.Random(0)))
    assert [v.name for v in tried.variants] == ["acks-1", "acks-all"] and tried.variants[0].allow == ["lost"]


def test_next_schedule_mutates_the_corpus_as_often_as_asked(spec):
    corpus = Corpus()
    corpus.consider(4, [{"kind": "lost-acks", "at": 1.0, "duration": 0.5, "target": "all", "cut_after_ms": 9}],
                    {"client FAIL: x"})
    rng = random.Random(1)
    origins = [next_schedule(spec, rng, corpus)[1] for _ in range(200)]
    assert set(origins) == {"fresh", "mutation of try 4"}
    assert 60 < origins.count("fresh") < 140  # mutate: 0.5
    rng = random.Random(1)
    assert {next_schedule(spec, rng, corpus, guided=False)[1] for _ in range(50)} == {"fresh"}
    assert {next_schedule(spec, random.Random(s), Corpus())[1] for s in range(20)} == {"fresh"}


def test_next_schedule_gives_up_on_a_space_that_never_plans(tmp_path):
    doc = {**DOC, "explore": {"kinds": {"broker-pause": {"target": "all", "duration": 30}}, "faults": 2}}
    spec = load_spec(write(tmp_path, doc))
    with pytest.raises(ScheduleError, match="none of 100 schedules drawn could be planned; the last: faults"):
        next_schedule(spec, random.Random(0), None)


SHIPPED = sorted((Path(__file__).resolve().parents[2] / "experiments").rglob("*.yaml"))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_a_try_of_a_shipped_experiment_with_its_own_faults_is_that_experiment(path):
    """try_spec rebuilds an experiment from what it was given (matrix, selectors, consumer groups, transactions,
    clusters): with the experiment's own faults, the same experiment, but for the explore: section a try drops."""
    spec = load_spec(path)
    given = {k: v for k, v in spec.public_dict().items() if k != "explore"}
    assert try_spec(spec, spec.public_dict()["faults"]).public_dict() == given


def test_each_try_gets_its_own_transactional_ids_and_the_space_keeps_its_own(tmp_path):
    from harness.explore.runner import own_transactional_ids

    doc = {**DOC, "producer": {"transactional.id": "shared"},
           "variants": [{"name": "a"}, {"name": "b", "producer": {"transactional.id": "mine"}},
                        {"name": "c", "producer": {"acks": 1}}]}
    spaced = load_spec(write(tmp_path, doc))
    tried = own_transactional_ids(spaced, "abc123")
    ids = {v.name: tried.producer_config(v).get("transactional.id") for v in tried.variants}
    assert ids == {"a": "shared-kc-abc123", "b": "mine-kc-abc123", "c": "shared-kc-abc123"}
    assert {v.name: spaced.producer_config(v)["transactional.id"] for v in spaced.variants} == \
        {"a": "shared", "b": "mine", "c": "shared"}  # the space itself is untouched
    (tmp_path / "plain").mkdir()
    plain = load_spec(write(tmp_path / "plain", DOC))
    assert own_transactional_ids(plain, "z").variants == plain.variants
    from harness.explore import signature  # the suffix is one a signature ignores: a try's events stay comparable

    assert signature._NAME.sub("<name>", "txn explore-kc-abc123 fenced") == \
        signature._NAME.sub("<name>", "txn explore-kc-9f00e1 fenced")
