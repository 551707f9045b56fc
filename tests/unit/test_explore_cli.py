"""`kafka-chaos explore`'s bad input: refused before anything starts (exit 2, naming the option, the field or the
folder), and the budget's syntax."""

from __future__ import annotations

import pytest
import yaml
from click.testing import CliRunner

from harness.cli import main, parse_budget
from harness.exits import UsageError

SPACE = {"name": "bad-input", "workload": {"messages": 1000, "rate": 1000}, "variants": [{"name": "a"}],
         "explore": {"kinds": {"latency": {}}, "window": [0.1, 0.5]}}


def explore(tmp_path, *args, doc=SPACE):
    path = tmp_path / "space.yaml"
    path.write_text(yaml.safe_dump(doc))
    result = CliRunner().invoke(main, ["explore", str(path), "--out", str(tmp_path / "out"), *args])
    return result.exit_code, result.output


@pytest.mark.parametrize("text, seconds", [("90s", 90), ("30m", 1800), ("1h", 3600), ("1h30m", 5400), ("45", 45),
                                           ("2.5m", 150)])
def test_budgets(text, seconds):
    assert parse_budget(text) == seconds


@pytest.mark.parametrize("text", ["0", "0m", "", "soon", "-5m", "8d", "30 minutes"])
def test_budgets_refused(text):
    with pytest.raises(UsageError, match="--budget"):
        parse_budget(text)


def test_a_budget_of_zero_is_refused_and_nothing_starts(tmp_path):
    code, out = explore(tmp_path, "--budget", "0")
    assert code == 2 and "--budget '0'" in out
    assert not (tmp_path / "out").exists()


def test_resume_on_a_folder_that_is_not_an_exploration(tmp_path):
    (tmp_path / "run").mkdir()
    code, out = explore(tmp_path, "--resume", str(tmp_path / "run"))
    assert code == 2 and "not an exploration folder" in out


def test_a_file_without_a_space(tmp_path):
    code, out = explore(tmp_path, "--tries", "1", doc={k: v for k, v in SPACE.items() if k != "explore"})
    assert code == 2 and "explore: missing" in out
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("explore_section, said", [
    ({"kinds": {"isolate": {}}}, "explore.kinds: backend local with broker tansu cannot inject isolate"),
    ({"kinds": {"latency": {"latency_ms": [4000, 500]}}}, "explore.kinds.latency.latency_ms"),
    ({"kinds": {"latency": {}}, "faults": [60, 60], "window": [0.1, 0.2]},
     "explore.faults: a try holds at least 60 faults, and at most 50 can start within the window"),
    ({"kinds": {"broker-pause": {"target": "all", "duration": 30}}, "faults": 2, "window": [0.1, 0.9]},
     "explore: none of 200 schedules drawn from the space could be planned"),
    ({"kinds": {"latency": {}}, "window": [0.1, 50]}, "explore.window"),
    ({"kinds": {"no-such-kind": {}}}, "explore.kinds"),
])
def test_a_space_that_can_never_run_is_refused_naming_the_field(tmp_path, explore_section, said):
    code, out = explore(tmp_path, "--tries", "1", doc={**SPACE, "explore": explore_section})
    assert code == 2, out
    assert said in out
    assert not (tmp_path / "out").exists()


def test_resume_keeps_the_exploration_s_seed_and_guidance(tmp_path):
    from harness.explore.folder import ExplorationFolder

    folder = ExplorationFolder.create(tmp_path / "x", "bad-input", {"seed": 9, "guided": True}, yaml.safe_dump(SPACE))
    code, out = explore(tmp_path, "--resume", str(folder.path), "--seed", "10")
    assert code == 2 and "keeps its seed" in out
    code, out = explore(tmp_path, "--resume", str(folder.path), "--random")
    assert code == 2 and "keeps how it draws" in out


def test_the_end_of_an_exploration_says_the_faults_tried_by_kind_and_names_a_kind_never_drawn():
    from harness.cli import kinds_tried

    tries = [{"faults": [{"kind": "isolate"}, {"kind": "broker-kill"}]}, {"faults": [{"kind": "isolate"}]}]
    assert kinds_tried(tries, ["broker-kill", "isolate", "lose-unflushed"]) == \
        "faults tried by kind: broker-kill 1, isolate 2, lose-unflushed 0 (never drawn: lose-unflushed)"
    assert kinds_tried(tries, ["isolate", "broker-kill"]) == "faults tried by kind: isolate 2, broker-kill 1"
    assert kinds_tried([], ["isolate"]) == "faults tried by kind: isolate 0"  # no try ran: nothing to name
