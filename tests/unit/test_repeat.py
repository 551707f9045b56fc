"""--repeat without brokers: the series loop, its exit status, aggregate.json, its page, JUnit and the index."""

from pathlib import Path

import pytest
import xmlschema

from harness import junit, repeat, signals
from harness.schedule import ScheduleError
from harness.exits import Exit, UsageError
from harness.report import write_aggregate_report, write_index
from harness.runfolder import RunFolder, SeriesFolder, series_in
from harness.spec import ExperimentSpec
from tests.unit.test_aggregate import run

SCHEMA = xmlschema.XMLSchema(str(Path(__file__).resolve().parents[1] / "junit.xsd"))
SPEC = ExperimentSpec.model_validate({"name": "exp", "workload": {"messages": 10}, "variants": [{"name": "off"}]})


def fake_runs(out: Path, outcomes: dict[int, dict | BaseException]):
    """run_one for Series.execute: run i writes the summary outcomes[i] (or is interrupted)."""
    def run_one(index, seed, schedule):
        folder = RunFolder.create(out, "exp")
        what = outcomes[index]
        if isinstance(what, BaseException):
            return folder, None, what
        summary = {**what, "run_id": folder.run_id, "seed": seed}
        folder.write_summary(summary)
        return folder, summary, None
    return run_one


def test_seeds_and_exit_status():
    assert repeat.seeds(42, 3) == [42, 43, 44] and repeat.seeds(42, 3, same=True) == [42, 42, 42]
    ok, bad, err = run("a1", 0), run("a2", 0, lost=1), run("a3", 0, status="error")
    assert repeat.exit_code([ok, ok]) == Exit.OK
    assert repeat.exit_code([ok, err]) == Exit.INFRA
    assert repeat.exit_code([ok, err, bad]) == Exit.FAILED  # a broken guarantee is the finding
    assert repeat.exit_code([ok], interrupted=130) == Exit.SIGINT
    assert repeat.exit_code([]) == Exit.INFRA


def test_series_writes_the_aggregate_and_its_pages(tmp_path):
    series = repeat.Series(SPEC, tmp_path, 3, first_seed=7)
    doc = series.execute(fake_runs(tmp_path, {0: run("x0", 0), 1: run("x0", 10), 2: run("x0", 20)}))
    assert series.exit_code == Exit.OK
    stored = SeriesFolder(series.folder.path).read_aggregate()
    assert stored == doc and doc["status"] == "complete" and doc["complete"] is True
    assert doc["seeds"] == [7, 8, 9] and doc["requested"] == 3 and len(doc["runs"]) == 3
    assert doc["variants"]["off"]["metrics"]["duplicates"]["rate_per_100k"] == 10.0
    page = write_aggregate_report(series.folder).read_text()
    assert 'id="aggregate"' in page and "PASS: every check held in all 3 runs" in page
    assert f'href="../{doc["runs"][0]["run_id"]}/index.html"' in page
    index = write_index(tmp_path).read_text()
    assert 'id="series"' in index and series.folder.series_id in index and "10 [" in index
    assert [s.series_id for s in series_in(tmp_path)] == [series.folder.series_id]
    stale = {**doc, "variants": {}}  # an aggregate written by an older release: computed again from the runs
    series.folder.write_aggregate(stale)
    assert repeat.reaggregate(series.folder) == doc and series.folder.read_aggregate() == doc


@pytest.mark.parametrize("second, word, code, says", [
    (run("x0", 0, lost=1), "fail", Exit.FAILED, "FAIL: off: 1 of 2 runs failed"),
    (run("x0", 0, status="error"), "error", Exit.INFRA, "1 of 2 runs did not complete"),
    (run("x0", 0), "pass", Exit.OK, "PASS: every check held in all 2 runs"),
])
def test_one_series_verdict_for_the_aggregate_its_page_and_the_exit_status(tmp_path, second, word, code, says):
    series = repeat.Series(SPEC, tmp_path, 2, first_seed=1)
    doc = series.execute(fake_runs(tmp_path, {0: run("x0", 0), 1: second}))
    assert doc["verdict"] == word and series.exit_code == code
    assert says in write_aggregate_report(series.folder).read_text()


def test_until_fail_stops_at_the_first_failed_run(tmp_path):
    series = repeat.Series(SPEC, tmp_path, 5, first_seed=1, until_fail=True)
    doc = series.execute(fake_runs(tmp_path, {0: run("x0", 0), 1: run("x0", 0, lost=3), 2: run("x0", 0)}))
    assert series.exit_code == Exit.FAILED and len(doc["runs"]) == 2
    assert doc["status"] == "stopped at the first failure" and doc["failed_run"] == series.failed_run.run_id
    assert doc["failed_faults"].endswith(f"{series.failed_run.run_id}/faults.jsonl")
    assert "replay it with --replay" in write_aggregate_report(series.folder).read_text()


def test_an_interrupt_stops_the_series_and_keeps_the_aggregate_of_what_ran(tmp_path):
    series = repeat.Series(SPEC, tmp_path, 4, first_seed=1)
    doc = series.execute(fake_runs(tmp_path, {0: run("x0", 5), 1: signals.Interrupted(130)}))
    assert series.exit_code == Exit.SIGINT
    assert doc["status"] == "interrupted" and doc["complete"] is False and doc["seeds"] == [1]
    assert doc["variants"]["off"]["runs"] == 1
    assert "INTERRUPTED: 1 of 4 runs" in write_aggregate_report(series.folder).read_text()


def test_series_junit_has_one_suite_per_run(tmp_path):
    path = tmp_path / "junit.xml"
    junit.write_series(path, [run("r1", 0), run("r2", 0, lost=1)], [1.0, 2.0])
    SCHEMA.validate(str(path))
    text = path.read_text()
    assert 'name="exp #1 (seed 1)"' in text and 'name="exp #2 (seed 2)"' in text
    assert 'failures="1"' in text.split("\n")[1]


def test_series_options_without_repeat_are_bad_input(tmp_path):
    from click.testing import CliRunner

    from harness.cli import main

    exp = tmp_path / "exp.yaml"
    exp.write_text("name: m\nworkload: {messages: 10}\nvariants: [{name: a}]\n")
    for option in ("--same-seed", "--until-fail"):
        result = CliRunner().invoke(main, ["run", str(exp), "--out", str(tmp_path / "out"), option])
        assert result.exit_code == 2 and f"{option} needs --repeat N" in result.output
    assert not (tmp_path / "out").exists()


FAULTY = ExperimentSpec.model_validate({
    "name": "exp", "workload": {"messages": 1000, "rate": 100}, "variants": [{"name": "off"}],
    "faults": [{"kind": "lost-acks", "every": 2, "start": 1, "duration": 0.5, "jitter": 0.5}]})


def test_each_run_is_planned_when_it_starts_never_ahead(tmp_path, monkeypatch):
    planned = []  # the seeds planned so far, in order
    real_plan = repeat.plan
    monkeypatch.setattr(repeat, "plan", lambda spec, seed: planned.append(seed) or real_plan(spec, seed))
    seen = []  # at each run's start: its seed, and every seed planned by then
    outcomes = {i: run("x0", 0) for i in range(5)}

    def run_one(index, seed, schedule):
        seen.append((seed, list(planned)))
        assert schedule == real_plan(FAULTY, seed)  # the run gets its own seed's plan
        return fake_runs(tmp_path, outcomes)(index, seed, schedule)

    series = repeat.Series(FAULTY, tmp_path, 5, first_seed=10)
    series.execute(run_one)
    assert seen == [(10, [10]), (11, [10, 11]), (12, [10, 11, 12]), (13, [10, 11, 12, 13]),
                    (14, [10, 11, 12, 13, 14])]


def test_the_first_plan_made_by_the_preflight_and_a_same_seed_plan_are_not_made_again(tmp_path, monkeypatch):
    planned = []
    real_plan = repeat.plan
    monkeypatch.setattr(repeat, "plan", lambda spec, seed: planned.append(seed) or real_plan(spec, seed))
    first = real_plan(FAULTY, 3)
    series = repeat.Series(FAULTY, tmp_path, 3, first_seed=3, schedule=first)
    series.execute(fake_runs(tmp_path, {i: run("x0", 0) for i in range(3)}))
    assert planned == [4, 5]
    planned.clear()
    series = repeat.Series(FAULTY, tmp_path, 3, first_seed=3, same_seed=True)
    series.execute(fake_runs(tmp_path, {i: run("x0", 0) for i in range(3)}))
    assert planned == [3]


def test_a_seed_whose_plan_is_refused_stops_the_series_there_as_bad_input(tmp_path, monkeypatch):
    real_plan = repeat.plan

    def plan(spec, seed):
        if seed == 12:
            raise ScheduleError("faults 3 and 4 would overlap on broker 0")
        return real_plan(spec, seed)

    monkeypatch.setattr(repeat, "plan", plan)
    series = repeat.Series(FAULTY, tmp_path, 5, first_seed=10, experiment=Path("exp.yaml"))
    doc = series.execute(fake_runs(tmp_path, {i: run("x0", 0) for i in range(5)}))
    assert series.exit_code == Exit.USAGE and doc["seeds"] == [10, 11] and doc["status"] == "incomplete"
    assert doc["refused"] == "exp.yaml: seed 12: faults 3 and 4 would overlap on broker 0"


@pytest.mark.parametrize("first, count, same, ok", [
    (2**63 - 1, 1, False, True), (2**63 - 1, 2, False, False), (2**63 - 1, 10_000, True, True),
    (2**63 - 10_000, 10_000, False, True), (2**63 - 9_999, 10_000, False, False), (-(2**63), 10_000, False, True)])
def test_a_series_whose_seeds_would_leave_64_bits_is_refused(first, count, same, ok):
    if ok:
        repeat.check_seeds(first, count, same, "--seed")
        assert all(repeat.SEED_RANGE[0] <= s <= repeat.SEED_RANGE[1] for s in repeat.seeds(first, count, same))
        return
    with pytest.raises(UsageError, match=r"^--seed .* beyond the allowed range -9223372036854775808\.\."
                                         r"9223372036854775807 \(a 64-bit integer\)"):
        repeat.check_seeds(first, count, same, "--seed")


def test_the_series_page_says_in_how_many_runs_the_client_failed_for_good(tmp_path):
    failed = run("x1", 0)
    failed["variants"]["off"].update(instances_replaced={"OUT_OF_ORDER_SEQUENCE_NUMBER": 2}, lso_stall_s=0.5)
    clean = run("x0", 0)
    clean["variants"]["off"].update(lso_stall_s=0.0)
    series = repeat.Series(SPEC, tmp_path, 2, first_seed=1)
    series.execute(fake_runs(tmp_path, {0: clean, 1: failed}))
    page = write_aggregate_report(series.folder).read_text()
    assert "client failed for good: OUT_OF_ORDER_SEQUENCE_NUMBER" in page
    assert '<td data-failure="OUT_OF_ORDER_SEQUENCE_NUMBER">1/2 runs, 95% 10–90% (2x)</td>' in page
    assert 'data-figure="lso_stall_s">0.25' in page
    plain = repeat.Series(SPEC, tmp_path / "plain", 1, first_seed=1)
    plain.execute(fake_runs(tmp_path / "plain", {0: run("x0", 0)}))
    page = write_aggregate_report(plain.folder).read_text()
    assert "client failed for good" not in page and 'data-figure="lso_stall_s"' not in page
