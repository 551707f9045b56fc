"""`kafka-chaos explore` end to end on the embedded default: tries on one long-lived cluster, a finding
investigated and written as an experiment, the page; Ctrl-C and kill -9 mid-try leave nothing running and
--resume continues the journal; a broker that dies outside the schedule makes that try infrastructure (never a
finding) and the cluster is rebuilt for the next."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import yaml

from harness.spec import load_spec
from tests.integration.test_interrupts import Output, wait_for
from tests.integration.test_quickstart import ROOT

SPACE = {
    "name": "explore-small",
    "topic": {"partitions": 2},
    "workload": {"messages": 4000, "rate": 4000},
    "producer": {"acks": "all", "linger.ms": 5, "retries": 10000000},
    "variants": [{"name": "off", "producer": {"enable.idempotence": False}}],
    "explore": {"kinds": {"lost-acks": {"duration": [0.3, 0.6], "cut_after_ms": [1, 50]}},
                "faults": 2, "window": [0.1, 0.5]},
    "expectations": {"off": {"acked": 0}},  # it always fails: every try is one finding, shrunk to one fault
}


def processes_of(folder: Path) -> list:
    """Processes started for the exploration: its cluster, Spark and its tries' runs carry a folder inside it in
    KAFKA_CHAOS_RUN."""
    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if p.environ().get("KAFKA_CHAOS_RUN", "").startswith(str(folder.resolve())):
                found.append(p.info["cmdline"])
        except psutil.Error:
            pass
    return found


def explore(tmp_path: Path, *args, doc=SPACE) -> subprocess.Popen:
    exp = tmp_path / "space.yaml"
    exp.write_text(yaml.safe_dump(doc))
    return subprocess.Popen([sys.executable, "-m", "harness", "explore", *([str(exp)] if doc else []), "--out",
                             str(tmp_path / "reports"), *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def folder_of(tmp_path: Path) -> Path:
    return wait_for(lambda: next(iter((tmp_path / "reports").glob("*-explore-*")), None), what="the folder")


def tries(folder: Path) -> list[dict]:
    path = folder / "tries.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def test_a_finding_is_investigated_and_written_as_an_experiment(tmp_path):
    proc = explore(tmp_path, "--tries", "2", "--rate-runs", "2", "--seed", "5")
    out = Output(proc).finish(timeout=600)
    folder = folder_of(tmp_path)
    assert proc.returncode == 1, out
    rows = tries(folder)
    assert [r["try"] for r in rows] == [1, 2] and all(r["status"] == "complete" for r in rows)
    [finding] = [json.loads(x) for x in (folder / "findings.jsonl").read_text().splitlines()]
    assert finding["signature"] == ["off: acked"] and finding["rate"] == [2, 2] and finding["one_minimal"]
    assert rows[0]["signature"] == ["off: acked"] and rows[0]["finding"] is None and rows[1]["finding"] == "F1"
    assert len(rows[0]["faults"]) == 2 and len(finding["minimal_faults"]) == 1  # shrunk: either fault alone fails
    spec = load_spec(folder / "findings" / "F1" / "experiment.yaml")  # an ordinary experiment
    assert spec.explore is None and [f.kind for f in spec.faults] == ["lost-acks"]
    page = (folder / "index.html").read_text()
    assert "FOUND 1" in page and "off: acked" in page
    # one cluster for the whole exploration: its broker log is the folder's, none in the tries' run folders
    assert len(list(folder.glob("cluster-*/logs/broker-0.log"))) == 1
    assert not list((folder / "tries").glob("*/logs/broker-0.log"))
    assert "F1: off: acked" in out and not processes_of(folder)
    assert "BGQUEUE" not in out  # librdkafka's own lines stay off the terminal


def test_ctrl_c_mid_try_keeps_what_was_learned_and_resume_continues(tmp_path):
    doc = {**SPACE, "expectations": {}}  # no finding: tries only
    proc = explore(tmp_path, "--tries", "5", doc=doc)
    output = Output(proc)
    folder = folder_of(tmp_path)
    wait_for(lambda: len(tries(folder)) >= 1, timeout=300, what="a first try journaled")
    proc.send_signal(signal.SIGINT)
    text = output.finish(timeout=180)
    assert proc.returncode == 130, text
    assert "--resume" in text and not processes_of(folder)
    done = len(tries(folder))
    assert (folder / "index.html").exists()
    again = subprocess.run([sys.executable, "-m", "harness", "explore", str(tmp_path / "space.yaml"), "--resume",
                            str(folder), "--tries", "1"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    assert [r["try"] for r in tries(folder)] == list(range(1, done + 2))
    assert not processes_of(folder)


def test_kill_9_mid_try_leaves_nothing_running_and_resume_continues(tmp_path):
    doc = {**SPACE, "expectations": {}}
    proc = explore(tmp_path, "--tries", "5", doc=doc)
    Output(proc)
    folder = folder_of(tmp_path)
    wait_for(lambda: len(tries(folder)) >= 1, timeout=300, what="a first try journaled")
    proc.kill()
    proc.wait(timeout=30)
    wait_for(lambda: not processes_of(folder), timeout=60, what="the exploration's processes to die with it")
    done = len(tries(folder))
    again = subprocess.run([sys.executable, "-m", "harness", "explore", str(tmp_path / "space.yaml"), "--resume",
                            str(folder), "--tries", "1"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    assert [r["try"] for r in tries(folder)] == list(range(1, done + 2))


def _broker_of(folder: Path):
    for p in psutil.process_iter(["name", "cmdline"]):
        try:
            if (p.environ().get("KAFKA_CHAOS_RUN", "").startswith(str(folder.resolve()))
                    and "tansu" in " ".join(p.info["cmdline"])):
                return p
        except psutil.Error:
            pass
    return None


def test_a_broker_dying_outside_the_schedule_is_infrastructure_and_the_cluster_is_rebuilt(tmp_path):
    doc = {**SPACE, "expectations": {}, "workload": {"messages": 40000, "rate": 4000}}
    proc = explore(tmp_path, "--tries", "2", doc=doc)
    output = Output(proc)
    folder = folder_of(tmp_path)
    wait_for(lambda: list((folder / "tries").glob("*/logs/producer-off.log")), timeout=300, what="try 1 producing")
    broker = wait_for(lambda: _broker_of(folder), what="the broker process")
    os.kill(broker.pid, signal.SIGKILL)
    text = output.finish(timeout=600)
    rows = tries(folder)
    assert [r["try"] for r in rows] == [1, 2], text
    assert rows[0]["status"] == "error" and rows[0]["signature"] == [] and rows[0]["rebuilt"], rows[0]
    assert rows[1]["status"] == "complete"
    assert not (folder / "findings.jsonl").exists() or not (folder / "findings.jsonl").read_text().strip()
    assert proc.returncode == 0, text
    assert not processes_of(folder)
