"""The explore: section (harness/space.py) and what a space can never give its experiment
(harness/explore/check.py): every refusal names its field, defaults come from the kinds' own ranges."""

import random
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from harness.cli import main
from harness.explore.check import check_space
from harness.explore.generate import draw, draw_fault
from harness.space import Fixed, OneOf, Span, default_target
from harness.faults.registry import KINDS
from harness.explore.check import check_explore
from harness.spec import SpecError, load_spec
from tests.unit.test_spec import error_of, write

BASE = {"name": "t", "workload": {"messages": 1000, "rate": 100}, "variants": [{"name": "a"}]}


def with_space(explore, **fields) -> dict:
    return {**BASE, **fields, "explore": explore}


@pytest.mark.parametrize("explore, where, says", [
    ({"kinds": {"latency": {"latency_ms": [4000, 500]}}}, "explore.kinds.latency.latency_ms",
     "range [4000, 500] is inverted (low must not exceed high)"),
    ({"kinds": {"meteor": {}}}, "explore.kinds.meteor", "unknown fault kind (kinds: lost-acks, "),
    ({"kinds": {"latency": {"bogus": 1}}}, "explore.kinds.latency.bogus",
     "not a setting of latency (it takes: duration, target, latency_ms, jitter_ms)"),
    ({"kinds": {"broker-kill": {"duration": 1}}}, "explore.kinds.broker-kill.duration", "its downtime"),
    ({"kinds": {"latency": {"latency_ms": [0, 500]}}}, "explore.kinds.latency.latency_ms",
     "low end 0: Input should be greater than or equal to 1"),
    ({"kinds": {"latency": {"latency_ms": [1, 5000000]}}}, "explore.kinds.latency.latency_ms",
     "high end 5000000: Input should be less than or equal to 3600000"),
    ({"kinds": {"latency": {"duration": [0, 3]}}}, "explore.kinds.latency.duration", "low end 0: "),
    ({"kinds": {"latency": {"latency_ms": [1, 2, 3]}}}, "explore.kinds.latency.latency_ms", "{one_of: [...]}"),
    ({"kinds": {"latency": {"latency_ms": True}}}, "explore.kinds.latency.latency_ms", "true is not a number"),
    ({"kinds": {"latency": {"target": ["all", "leader"]}}}, "explore.kinds.latency.target",
     "choice 'leader': not a target"),
    ({"kinds": {"latency": {"jitter_ms": {"one_of": []}}}}, "explore.kinds.latency.jitter_ms", "non-empty list"),
    ({"kinds": {"stray-produce": {}}}, "explore.kinds.stray-produce.partition", "missing"),
    ({"kinds": {}}, "explore.kinds", "at least 1 kind"),
    ({"kinds": {"latency": {}}, "faults": [3, 1]}, "explore.faults", "inverted"),
    ({"kinds": {"latency": {}}, "faults": 0}, "explore.faults", "at least 1 fault (min is 0)"),
    ({"kinds": {"latency": {}}, "faults": [1, 2.5]}, "explore.faults", "not [low, high]"),
    ({"kinds": {"latency": {}}, "window": [8, 0.5]}, "explore.window", "range [8, 0.5] is inverted"),
    ({"kinds": {"latency": {}}, "window": [0.5, 12]}, "explore.window",
     "ends at 12 s, after the end of the workload's expected duration (1,000 messages at 100/s), 10 s"),
    ({"kinds": {"latency": {}}, "window": [10, 10]}, "explore.window", "not before the end"),
    ({"kinds": {"latency": {}}, "messages": 20}, "explore.window", "(the default), not before the end of the "
                                                                   "workload's expected duration (20 messages"),
    ({"kinds": {"latency": {}}, "messages": 0}, "explore.messages", "greater than or equal to 1"),
    ({"kinds": {"latency": {}}, "mutate": 1.5}, "explore.mutate", "less than or equal to 1"),
    ({"kinds": {"latency": {}}, "bogus": 1}, "explore.bogus", "unknown field"),
    ({"kinds": {"latency": {}}, "known": [{"ref": "x #1", "marks": ["client_hangs"]}]}, "explore.known.0.marks",
     "'client_hangs' is not `VARIANT: METRIC`"),
    ({"kinds": {"latency": {}}, "known": [{"ref": "x #1", "marks": ["*: lost"], "evidence": "call("}]},
     "explore.known.0.evidence", "'call(' is not a regular expression"),
    ({"kinds": {"latency": {}}, "known": [{"ref": "", "marks": ["*: lost"]}]}, "explore.known.0.ref", "at least 1"),
    ({"kinds": {"latency": {}}, "known": [{"ref": "x #1", "marks": []}]}, "explore.known.0.marks", "at least 1"),
])
def test_a_bad_space_is_refused_naming_the_field(tmp_path, explore, where, says):
    message = error_of(tmp_path, with_space(explore))
    assert f"exp.yaml: {where}: " in message and says in message, message
    assert len(message.splitlines()) == 1, message


def test_a_window_is_needed_when_the_workload_length_is_not_known(tmp_path):
    doc = with_space({"kinds": {"latency": {}}})
    doc["workload"] = {"messages": 1000}
    assert "explore.window: missing" in error_of(tmp_path, doc)
    doc["explore"]["window"] = [0.5, 3]
    assert load_spec(write(tmp_path, doc)).explore.window == (0.5, 3)


def test_defaults_come_from_the_kinds_own_ranges(tmp_path):
    spec = load_spec(write(tmp_path, with_space({"kinds": {"latency": {"latency_ms": [500, 4000]}, "lost-acks": {},
                                                           "broker-kill": {}, "producer-restart": None,
                                                           "isolate": {}}})))
    explore = spec.explore
    assert explore.faults == (1, 3) and explore.mutate == 0.5 and explore.window is None
    latency = explore.settings("latency")
    assert latency["latency_ms"] == Span(500, 4000, integer=True)
    low, high = KINDS["latency"].explore["jitter_ms"]
    assert latency["jitter_ms"] == Span(low, high, integer=True)
    assert latency["duration"] == Span(*KINDS["latency"].explore["duration"], integer=False)
    assert latency["target"] == OneOf(("all", "random"))
    assert list(latency)[:2] == ["duration", "target"]
    assert explore.settings("lost-acks")["cut_after_ms"] == Span(*KINDS["lost-acks"].explore["cut_after_ms"], True)
    kill = explore.settings("broker-kill")
    assert "duration" not in kill and kill["downtime"] == Span(*KINDS["broker-kill"].explore["downtime"], False)
    assert kill["target"] == Fixed("random") == default_target("broker-pause")
    assert explore.settings("producer-restart")["target"] == Fixed("workload")
    assert explore.settings("isolate")["direction"] == OneOf(("both", "in", "out"))


def test_an_optional_constrained_whole_number_setting_is_drawn_whole(tmp_path):
    """lose-unflushed's drop_batches is `Annotated[int, Field(ge=1)] | None`: it was taken for a float setting,
    every draw (12.345 batches) was refused, and the kind never ran in an exploration."""
    spec = load_spec(write(tmp_path, with_space({"kinds": {"lose-unflushed": {}}}, cluster={
        "backend": "local", "broker": "kafka", "brokers": 3})))
    assert spec.explore.settings("lose-unflushed")["drop_batches"] == Span(1, 100, integer=True)
    rng = random.Random(0)
    drawn = [draw_fault(spec, rng, "lose-unflushed")["drop_batches"] for _ in range(50)]
    assert all(type(n) is int and 1 <= n <= 100 for n in drawn) and len(set(drawn)) > 10


def test_a_kind_whose_every_draw_is_refused_is_refused_naming_it(tmp_path, monkeypatch):
    """The guard that would have caught it: check_space draws each kind as a try does, not only the ends of the
    ranges the file names (both ends of 1-100 are whole; nearly every draw between them was not)."""
    from harness import space
    whole = space._whole
    monkeypatch.setattr(space, "_whole", lambda kind, name: name != "drop_batches" and whole(kind, name))
    path = write(tmp_path, with_space({"kinds": {"latency": {}, "lose-unflushed": {}}}, cluster={
        "backend": "local", "broker": "kafka", "brokers": 3}))
    with pytest.raises(SpecError) as e:
        check_space(load_spec(path), path)
    assert "explore.kinds.lose-unflushed: 50 draws of its settings were all refused; the last: drop_batches: " \
        "Input should be a valid integer" in str(e.value)


def test_setting_forms_fixed_range_choices(tmp_path):
    spec = load_spec(write(tmp_path, with_space({"kinds": {
        "latency": {"latency_ms": 300, "jitter_ms": {"one_of": [0, 50]}, "target": [{"broker": 0}, "all"]},
        "broker-kill": {"downtime": [1, 5], "target": ["random", {"leader-of": 0}]},
        "delay-requests": {"requests": [["Produce"], ["EndTxn", "AddPartitionsToTxn"]], "drop": False}}})))
    latency = spec.explore.settings("latency")
    assert latency["latency_ms"] == Fixed(300) and latency["jitter_ms"] == OneOf((0, 50))
    assert latency["target"] == OneOf(({"broker": 0}, "all"))
    assert spec.explore.settings("broker-kill")["downtime"] == Span(1, 5, integer=False)  # a float setting
    assert spec.explore.settings("delay-requests")["drop"] == Fixed(False)


def test_a_run_of_a_file_with_a_space_runs_its_faults_and_keeps_the_section(tmp_path):
    doc = with_space({"kinds": {"latency": {"latency_ms": [500, 4000]}}, "faults": 2, "window": [1, 5]},
                     faults=[{"kind": "lost-acks", "at": 1}])
    spec = load_spec(write(tmp_path, doc))
    assert [f.kind for f in spec.faults] == ["lost-acks"]
    kept = spec.public_dict()["explore"]
    assert kept == {"kinds": {"latency": {"latency_ms": [500, 4000]}}, "faults": [2, 2], "window": [1, 5],
                    "mutate": 0.5}
    again = write(tmp_path, yaml.safe_dump(spec.public_dict()))
    assert load_spec(again).explore == spec.explore
    # without faults it is still an experiment `run` takes (it runs without faults)
    assert load_spec(write(tmp_path, with_space({"kinds": {"latency": {}}}))).faults == []


def space_error(tmp_path, doc) -> str:
    path = write(tmp_path, doc)
    with pytest.raises(SpecError) as e:
        check_space(load_spec(path), path)
    return str(e.value)


@pytest.mark.parametrize("fields, explore, where, says", [
    ({}, {"kinds": {"consumer-kill": {}}}, "explore.kinds.consumer-kill", "has none: add a consumer section"),
    ({}, {"kinds": {"latency": {"target": [{"broker": 3}, "all"]}}}, "explore.kinds.latency.target",
     "broker 3 does not exist"),
    ({}, {"kinds": {"broker-kill": {"target": {"leader-of": 7}}}}, "explore.kinds.broker-kill.target",
     "partition 7 does not exist"),
    ({}, {"kinds": {"isolate": {"direction": ["both", "in"]}}}, "explore.kinds.isolate.direction",
     "needs cluster.network: namespaces"),
    ({}, {"kinds": {"latency": {}}, "faults": [120, 200], "window": [1, 2]}, "explore.faults",
     "at least 120 faults, and at most 100 can start within the window [1, 2] s"),
    # two broker stops of every broker always meet (the overlap rule), whatever is drawn
    ({}, {"kinds": {"broker-pause": {"target": "all", "duration": 30}}, "faults": 2}, "explore",
     "none of 200 schedules drawn from the space could be planned; the last: faults (seed 1): fault 1"),
])
def test_a_space_the_experiment_can_never_run_is_refused(tmp_path, fields, explore, where, says):
    message = space_error(tmp_path, with_space(explore, **fields))
    assert f"exp.yaml: {where}: " in message and says in message, message


def test_a_space_that_sometimes_plans_is_taken(tmp_path):
    path = write(tmp_path, with_space({"kinds": {"broker-pause": {}, "latency": {}, "isolate": {}}, "faults": [1, 3]}))
    check_space(load_spec(path), path)  # a one-way isolation without namespaces is never drawn, only refused if named


def test_check_explore_refuses_a_file_without_a_space_and_a_kind_the_backend_cannot_inject(tmp_path):
    path = write(tmp_path, BASE)
    with pytest.raises(SpecError, match="explore: missing: `kafka-chaos explore` needs an explore: section"):
        check_explore(path, None)
    path = write(tmp_path, with_space({"kinds": {"latency": {}, "packet-loss": {}}}))
    with pytest.raises(SpecError, match=r"exp.yaml: explore.kinds: backend local with broker tansu cannot inject "
                                        r"packet-loss"):
        check_explore(path, None)
    path = write(tmp_path, with_space({"kinds": {"latency": {}, "broker-kill": {}}}))
    assert check_explore(path, None).explore.kinds == {"latency": {}, "broker-kill": {}}


@pytest.mark.parametrize("marks, says", [
    (["b: lost"], "explore.known.0.marks: 'b: lost' names no variant of the experiment (variants: a)"),
    (["*: client_hang"], "explore.known.0.marks: '*: client_hang': 'client_hang' matches no metric"),
])
def test_a_known_bug_whose_marks_no_try_could_have_is_refused(tmp_path, marks, says):
    path = write(tmp_path, with_space({"kinds": {"latency": {}}, "known": [{"ref": "x #1", "marks": marks}]}))
    with pytest.raises(SpecError) as e:
        check_explore(path, None)
    assert f"exp.yaml: {says}" in str(e.value)
    taken = [["a: lost"], ["?: client_*"], ["a: client_fatal ProducerFencedException"], ["*: unknown"]]
    for ok in taken:
        path = write(tmp_path, with_space({"kinds": {"latency": {}}, "known": [{"ref": "x #1", "marks": ok}]}))
        assert check_explore(path, None).explore.known[0].marks == ok


def test_kafka_chaos_run_on_a_file_with_a_bad_space_exits_2_naming_it(tmp_path, signal_handlers_restored):
    path = write(tmp_path, with_space({"kinds": {"latency": {"latency_ms": [4000, 500]}}}))
    result = CliRunner().invoke(main, ["run", str(path), "--out", str(tmp_path / "reports")])
    assert result.exit_code == 2 and "explore.kinds.latency.latency_ms: range [4000, 500] is inverted" in result.output


@pytest.mark.parametrize("path", sorted((Path(__file__).resolve().parents[2] / "experiments" / "explore").glob("*.yaml")),
                         ids=lambda p: p.stem)
def test_every_shipped_space_can_run_on_its_backend(path):
    """What check_explore asks of a shipped space that needs no distribution: every kind injectable by its
    backend, every value one its experiment takes, a plannable schedule drawable, known bugs' marks it can have."""
    from harness.cluster import unsupported_faults
    from harness.explore.check import check_known, check_space

    spec = load_spec(path)
    assert spec.explore is not None and spec.faults == []
    assert unsupported_faults(spec.cluster, set(spec.explore.kinds)) == []
    check_space(spec, path)
    check_known(spec, path)
    rng = random.Random(0)  # and every kind it names is drawn (none silently never runs)
    assert {f["kind"] for _ in range(300) for f in draw(spec, rng)} == set(spec.explore.kinds)
