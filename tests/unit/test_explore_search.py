"""The exploration loop (harness/explore/search.py) with a fake runner: a planted bug that shows only when
two fault kinds meet is found, shrunk to exactly those two and given its rate; infrastructure is never a
finding; a resumed exploration continues where the journal ends. No broker, no Spark, no clock."""

from __future__ import annotations

import pytest
import yaml

from harness.exits import InfraError
from harness.explore.folder import ExplorationFolder
from harness.explore.search import Exploration, Outcome
from harness.report import write_exploration_report
from harness.schedule import plan
from harness.spec import ExperimentSpec, load_spec
from harness.status import COMPLETE, ERROR

EXPERIMENT = {
    "name": "planted",
    "workload": {"messages": 10_000, "rate": 1_000},
    "variants": [{"name": "on", "producer": {"enable.idempotence": True}},
                 {"name": "other", "producer": {"enable.idempotence": True}}],
    "explore": {"kinds": {"latency": {}, "lost-acks": {}, "reset-connections": {}, "slow-close": {}},
                "faults": [3, 6], "window": [0.5, 8.0]},
}
BUG = {"lost-acks", "reset-connections"}  # the planted bug needs both


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def summary_of(faults: list[dict], variants) -> dict:
    kinds = {f["kind"] for f in faults}
    entries = {}
    for name in variants:
        failed = name == "on" and BUG <= kinds
        entries[name] = {"verdict": "fail" if failed else "pass", "produce_seconds": 1.0,
                         "expectations": [{"metric": "duplicates", "status": "fail" if failed else "pass"}]}
    return {"verdict": "fail" if any(v["verdict"] == "fail" for v in entries.values()) else "pass",
            "variants": entries}


class FakeRunner:
    """Runs nothing: the planted bug decides the verdict; each kind drawn is an event; each run takes 10 s."""

    def __init__(self, clock: FakeClock, infra: set[int] = frozenset()):  # infra: the tries that cannot run
        self.clock, self.infra, self.calls = clock, infra, []

    def __call__(self, faults, seed, variants, purpose) -> Outcome:
        self.calls.append((purpose, [f["kind"] for f in faults], variants))
        self.clock.now += 10.0
        if purpose in {f"try {n}" for n in self.infra}:
            return Outcome(ERROR, None, reason="broker 0 died outside the fault schedule", seconds=10.0)
        names = variants or ("on", "other")
        return Outcome(COMPLETE, summary_of(faults, names), frozenset(f"client {f['kind']}" for f in faults),
                       seconds=10.0, workload_seconds=2.0)


def exploration(tmp_path, runner, clock, **kw) -> Exploration:
    spec = ExperimentSpec.model_validate(EXPERIMENT)
    folder = kw.pop("folder", None) or ExplorationFolder.create(tmp_path, spec.name, {"seed": 7, "guided": True},
                                                                yaml.safe_dump(EXPERIMENT))
    return Exploration(spec, runner, folder, 7, clock=clock, **kw)


def test_a_bug_of_two_kinds_together_is_found_and_shrunk_to_exactly_those_two(tmp_path):
    clock = FakeClock()
    runner = FakeRunner(clock)
    x = exploration(tmp_path, runner, clock, max_tries=40)
    x.execute()
    assert len(x.findings) == 1
    (finding,) = x.findings.values()
    assert finding["signature"] == ["on: duplicates"]
    assert sorted(f["kind"] for f in finding["minimal_faults"]) == sorted(BUG)
    assert finding["one_minimal"] is True
    assert finding["rate"] == [5, 5] and finding["rate_interval"][1] == 1.0
    first = next(t for t in x.tries if t["try"] == finding["first_try"])
    assert BUG <= {f["kind"] for f in first["faults"]} and first["finding"] is None
    # later tries with the same signature are the same finding, never a new one
    again = [t for t in x.tries if t["signature"] and t["try"] > finding["first_try"]]
    assert all(t["finding"] == finding["id"] for t in again)
    # the shrink and rate runs ran the failing variant alone
    assert all(v == ("on",) for p, _, v in runner.calls if not p.startswith("try"))
    # the minimal experiment is an ordinary experiment file that plans exactly the two faults
    written = tmp_path / x.folder.id / "findings" / finding["id"] / "experiment.yaml"
    spec = load_spec(written)
    assert sorted(f.kind for f in plan(spec, spec.seed)) == sorted(BUG)
    assert (written.parent / "evidence.txt").read_text().startswith(f"finding {finding['id']}")


def test_no_bug_no_finding_and_passing_tries_are_pruned(tmp_path):
    clock = FakeClock()
    global BUG
    saved, BUG = BUG, {"nonexistent-kind"}
    try:
        x = exploration(tmp_path, FakeRunner(clock), clock, max_tries=8)
        x.execute()
    finally:
        BUG = saved
    assert x.findings == {} and len(x.tries) == 8
    assert all(t["verdict"] == "pass" and t["signature"] == [] for t in x.tries)


class UnappliedRunner(FakeRunner):
    """Every try holding a slow close is unknown only because a fault of it could not be applied."""

    def __call__(self, faults, seed, variants, purpose) -> Outcome:
        out = super().__call__(faults, seed, variants, purpose)
        if "slow-close" in {f["kind"] for f in faults} and not BUG <= {f["kind"] for f in faults}:
            out.summary["variants"]["on"].update(verdict="unknown", expectations=[
                {"metric": "duplicates", "status": "pass"}, {"metric": "faults_not_applied", "status": "unknown"}])
        return out


def test_a_try_unknown_only_for_a_fault_it_could_not_apply_is_journaled_but_never_a_finding(tmp_path):
    clock = FakeClock()
    runner = UnappliedRunner(clock)
    x = exploration(tmp_path, runner, clock, max_tries=30)
    x.execute()
    unapplied = [t for t in x.tries if t["signature"] == ["on: unknown"]]
    assert unapplied and all(t["finding"] is None and "could not be applied" in t["reason"]
                             for t in unapplied)
    assert [f["signature"] for f in x.findings.values()] == [["on: duplicates"]]  # the planted bug still found
    assert not any("unknown" in p for p, _, _ in runner.calls)  # nothing shrunk or rated for it


def test_a_try_that_could_not_run_is_infrastructure_never_a_finding(tmp_path):
    clock = FakeClock()
    x = exploration(tmp_path, FakeRunner(clock, infra={2}), clock, max_tries=3)
    x.execute()
    row = x.tries[1]
    assert row["status"] == ERROR and row["verdict"] == ERROR and row["signature"] == []
    assert "died outside" in row["reason"]


def test_three_tries_in_a_row_that_cannot_run_end_the_exploration(tmp_path):
    clock = FakeClock()
    x = exploration(tmp_path, FakeRunner(clock, infra={1, 2, 3}), clock, max_tries=10)
    with pytest.raises(InfraError, match="3 tries in a row"):
        x.execute()
    assert len(x.folder.tries()) == 3  # journaled before it stopped


def test_the_budget_stops_new_tries_but_a_finding_shown_before_it_is_investigated_to_the_end(tmp_path):
    clock = FakeClock()
    first = exploration(tmp_path / "a", FakeRunner(clock), clock, max_tries=40)
    first.execute()
    (finding,) = first.findings.values()
    budget = finding["first_at_s"] - 5  # the failing try started before the budget ends, ended after it
    clock = FakeClock()
    x = exploration(tmp_path / "b", FakeRunner(clock), clock, budget_s=budget)
    x.execute()
    assert all(t["at_s"] < budget for t in x.tries)  # no try starts after the budget
    (f,) = x.findings.values()
    assert f["one_minimal"] and f["rate"] == [5, 5]  # shrunk to the end and rated, past the budget
    assert clock.now > budget + 10 * 5


def test_same_seed_same_tries_and_resume_continues_the_journal(tmp_path):
    clock = FakeClock()
    a = exploration(tmp_path / "a", FakeRunner(clock), clock, max_tries=6)
    a.execute()
    b = exploration(tmp_path / "b", FakeRunner(clock), clock, max_tries=3)
    b.execute()
    resumed = exploration(tmp_path, FakeRunner(clock), clock, max_tries=3, folder=b.folder)
    assert resumed.corpus.seen == b.corpus.seen
    resumed.execute()
    assert [t["try"] for t in b.folder.tries()] == [1, 2, 3, 4, 5, 6]
    assert [t["faults"] for t in b.folder.tries()] == [t["faults"] for t in a.folder.tries()]


def test_random_exploration_draws_every_try_fresh(tmp_path):
    clock = FakeClock()
    x = exploration(tmp_path, FakeRunner(clock), clock, max_tries=10, guided=False)
    x.execute()
    assert {t["origin"] for t in x.tries} == {"fresh"}


def test_a_journal_cut_short_by_a_kill_loses_only_its_last_line(tmp_path):
    clock = FakeClock()
    x = exploration(tmp_path, FakeRunner(clock), clock, max_tries=3)
    x.execute()
    journal = x.folder.path / "tries.jsonl"
    journal.write_text(journal.read_text() + '{"try": 4, "fau')  # the kill landed mid-write
    assert [t["try"] for t in x.folder.tries()] == [1, 2, 3]


class HangingRunner(FakeRunner):
    """The planted bug also hangs a member in a call the summary names, and each run has a folder."""

    def __call__(self, faults, seed, variants, purpose) -> Outcome:
        out = super().__call__(faults, seed, variants, purpose)
        on = out.summary["variants"].get("on")
        if on and on["verdict"] == "fail":
            on["consumer"] = {"hung_in_call": {"m0.0": "send_offsets_to_transaction has not returned after 51 s"}}
            on["expectations"].append({"metric": "client_hangs", "status": "fail"})
        return Outcome(out.status, out.summary, out.events, out.seconds, out.workload_seconds,
                       folder=f"/runs/{purpose}", reason=out.reason)


def known_exploration(tmp_path, known, pruned):
    clock = FakeClock()
    runner = HangingRunner(clock)
    doc = {**EXPERIMENT, "explore": {**EXPERIMENT["explore"], "known": known}}
    spec = ExperimentSpec.model_validate(doc)
    folder = ExplorationFolder.create(tmp_path, spec.name, {"seed": 7, "guided": True}, yaml.safe_dump(doc))
    folder.prune = pruned.append
    x = Exploration(spec, runner, folder, 7, clock=clock, max_tries=40)
    x.execute()
    return x, runner


def test_marks_a_known_bug_explains_are_journaled_with_it_and_no_finding(tmp_path):
    pruned = []
    known = [{"ref": "librdkafka #5511", "marks": ["*: client_hangs", "on: dup*"],
              "evidence": r"send_offsets_to_transaction has not returned"}]
    x, runner = known_exploration(tmp_path, known, pruned)
    shown = [t for t in x.tries if t.get("known")]
    assert shown and x.findings == {}
    assert all(t["known"] == {"librdkafka #5511": ["on: client_hangs", "on: duplicates"]} and t["signature"] == []
               and t["finding"] is None and t["verdict"] == "fail" for t in shown)
    assert all(p.startswith("try") for p, _, _ in runner.calls)  # nothing shrunk or rated for it
    assert f"/runs/try {shown[0]['try']}" not in pruned  # the first try that showed it keeps its folder
    assert all(f"/runs/try {t['try']}" in pruned for t in shown[1:]) and len(shown) > 1
    page = write_exploration_report(x.folder).read_text()
    assert "known bugs shown (no finding): librdkafka #5511 (" in page and 'id="known"' in page
    resumed = Exploration(x.spec, runner, ExplorationFolder.open(x.folder.path), 7, clock=FakeClock(), max_tries=0)
    assert resumed.known_seen == {"librdkafka #5511"} and resumed._pending() == []


@pytest.mark.parametrize("known, left", [
    # the evidence is not in the variant's summary: the bug explains nothing
    ([{"ref": "x #1", "marks": ["*: client_hangs", "*: duplicates"], "evidence": "commit_transaction"}],
     ["on: client_hangs", "on: duplicates"]),
    # it explains the hang only: the duplicates are still a finding, shrunk and rated by themselves
    ([{"ref": "x #1", "marks": ["*: client_hangs"]}], ["on: duplicates"]),
    # another variant's marks
    ([{"ref": "x #1", "marks": ["other: *"]}], ["on: client_hangs", "on: duplicates"]),
])
def test_marks_no_known_bug_explains_are_still_a_finding(tmp_path, known, left):
    x, _ = known_exploration(tmp_path, known, [])
    assert [f["signature"] for f in x.findings.values()] == [left]


class KnownAndUnappliedRunner(FakeRunner):
    """Every try: variant other shows a known bug (duplicates); a try with a slow close leaves variant on unknown
    only because a drawn fault could not be applied."""

    def __call__(self, faults, seed, variants, purpose) -> Outcome:
        out = super().__call__(faults, seed, variants, purpose)
        entries = out.summary["variants"]
        if "other" in entries:
            entries["other"].update(verdict="fail", expectations=[{"metric": "duplicates", "status": "fail"}])
        if "on" in entries and "slow-close" in {f["kind"] for f in faults}:
            entries["on"].update(verdict="unknown", expectations=[
                {"metric": "duplicates", "status": "pass"}, {"metric": "faults_not_applied", "status": "unknown"}])
        return out


def test_a_fault_not_applied_beside_a_known_bug_is_still_no_finding(tmp_path):
    global BUG
    saved, BUG = BUG, {"nonexistent-kind"}  # no planted bug of its own
    try:
        clock = FakeClock()
        doc = {**EXPERIMENT, "explore": {**EXPERIMENT["explore"], "known": [{"ref": "x #1", "marks": ["other: *"]}]}}
        spec = ExperimentSpec.model_validate(doc)
        folder = ExplorationFolder.create(tmp_path, spec.name, {"seed": 7, "guided": True}, yaml.safe_dump(doc))
        x = Exploration(spec, KnownAndUnappliedRunner(clock), folder, 7, clock=clock, max_tries=20)
        x.execute()
    finally:
        BUG = saved
    unapplied = [t for t in x.tries if t["signature"] == ["on: unknown"]]
    assert unapplied and all("could not be applied" in t["reason"] and t["known"] == {"x #1": ["other: duplicates"]}
                             for t in unapplied)
    assert x.findings == {}
