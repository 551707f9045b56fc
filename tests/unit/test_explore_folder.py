"""The exploration folder (harness/explore/folder.py) and a finding's evidence (evidence.py): pruning keeps a
try's summary, faults and spec and touches nothing outside tries/; the journals survive a kill mid-line; the
evidence holds the client's error lines and the brokers' WARN/ERROR lines of the try."""

from __future__ import annotations

import json

import pytest

from harness.explore.evidence import DURING_RUN, evidence_text
from harness.explore.folder import ExplorationFolder
from harness.runfolder import RunFolderError


@pytest.fixture
def folder(tmp_path):
    return ExplorationFolder.create(tmp_path, "space", {"seed": 3, "guided": True}, "name: space\n")


def a_try(folder, name="try-1"):
    run = folder.tries_dir() / name
    (run / "logs").mkdir(parents=True)
    (run / "v").mkdir()
    for f in ("summary.json", "faults.jsonl", "spec.yaml", "logs/producer-v.log", "v/acks.parquet"):
        (run / f).write_text("x")
    return run


def test_prune_keeps_the_summary_faults_and_spec_only(folder):
    run = a_try(folder)
    folder.prune(run)
    assert sorted(p.name for p in run.iterdir()) == ["faults.jsonl", "spec.yaml", "summary.json"]


def test_prune_never_touches_a_folder_outside_its_tries(folder, tmp_path):
    outside = tmp_path / "elsewhere"
    (outside / "logs").mkdir(parents=True)
    folder.prune(outside)
    assert (outside / "logs").is_dir()


def test_open_refuses_a_folder_that_is_not_an_exploration(tmp_path):
    with pytest.raises(RunFolderError, match="not an exploration folder") as e:
        ExplorationFolder.open(tmp_path)
    assert not e.value.damaged  # exit 2: bad input


def test_damaged_facts_are_exit_3(folder):
    (folder.path / "exploration.json").write_text("{")
    with pytest.raises(RunFolderError) as e:
        ExplorationFolder.open(folder.path)
    assert e.value.damaged


def test_a_damaged_line_inside_the_journal_is_exit_3_but_a_cut_last_line_is_dropped(folder):
    folder.add_try({"try": 1})
    folder.add_try({"try": 2})
    path = folder.path / "tries.jsonl"
    path.write_text(path.read_text() + '{"try": 3')
    assert [r["try"] for r in folder.tries()] == [1, 2]
    path.write_text('{"try": 1}\nnot json\n{"try": 2}\n')
    with pytest.raises(RunFolderError, match="line 2 is not JSON"):
        folder.tries()


def test_evidence_holds_the_client_errors_and_the_brokers_warnings(folder):
    run = a_try(folder)
    (run / "logs" / "producer-v.log").write_text(
        "2026-11-27 10:05:53,962 INFO REQTMOUT [rdkafka#producer-1] [thrd:b]: Timed out ProduceRequest in flight\n"
        "2026-11-27 10:05:53,963 ERROR FAIL [rdkafka#producer-1] [thrd:b]: 3 request(s) timed out: disconnect\n"
        "2026-11-27 10:05:54,032 CRITICAL FATAL [rdkafka#producer-1] [thrd:b]: Fatal error: Local: Inconsistent "
        "state: Unable to reconstruct MessageSet\n")
    (run / "logs" / DURING_RUN).write_text(
        "cluster-1/broker-0: [2026-11-27 10:05:50,000] INFO [Log partition=t-0] Rolled new log segment\n"
        "cluster-1/broker-0: [2026-11-27 10:05:51,000] WARN [ReplicaFetcher replicaId=1] Error in response\n")
    finding = {"id": "F1", "signature": ["v: client_fatal _INCONSISTENT", "v: producer_failed"], "variants": ["v"]}
    text = evidence_text(finding, {"try": 4, "origin": "fresh"}, run)
    assert "failed for good with _INCONSISTENT" in text
    assert "ERROR FAIL" in text and "Fatal error: Local: Inconsistent state" in text
    errors = text.split("-- its error lines")[1].split("-- its last")[0]
    assert "Timed out ProduceRequest" not in errors  # an info line is context, not an error
    assert "WARN [ReplicaFetcher" in text and "Rolled new log segment" not in text


def test_facts_round_trip(folder):
    facts = folder.facts()
    assert facts["seed"] == 3 and facts["experiment"] == "space" and facts["exploration_id"] == folder.id
    folder.write_facts({**facts, "sessions": [{"started_at": "x"}]})
    assert json.loads((folder.path / "exploration.json").read_text())["sessions"] == [{"started_at": "x"}]
