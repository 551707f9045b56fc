"""Whole runs through the CLI on the Compose cluster the run brings up and takes down itself: the shipped failover
experiment end to end, a Ctrl-C in the middle of one, and what a killed run left behind. After each, nothing of
the Compose project is left in the engine."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.compose.conftest import leftovers
from tests.integration.test_interrupts import (assert_clean_stop, delivering, run_dir_of, start, wait_for,
                                              wait_until_delivered)
from tests.integration.test_quickstart import run_dirs
from tests.journal import journal_problems

ROOT = Path(__file__).resolve().parents[2]
NOTHING = {"containers": [], "networks": [], "volumes": []}


def test_the_shipped_failover_experiment_end_to_end(tmp_path, docker_client):
    out = tmp_path / "reports"
    r = subprocess.run([sys.executable, "-m", "harness", "run", str(ROOT / "experiments" / "broker-failover.yaml"),
                        "--out", str(out), "--junit", str(tmp_path / "junit.xml")], cwd=ROOT, capture_output=True,
                       text=True, timeout=1200)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    [run_dir] = list(run_dirs(out))
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "complete" and summary["cluster"].startswith("compose · ")
    assert "/kafka:4.1.0 × 3" in summary["cluster"]
    off, on = summary["variants"]["idempotence-off"], summary["variants"]["idempotence-on"]
    assert off["duplicates"] > 0, off  # retries after leader kills and lost acks, without idempotence
    assert (on["duplicates"], on["lost"], off["lost"]) == (0, 0, 0), (on, off)
    faults = [json.loads(line) for line in (run_dir / "faults.jsonl").read_text().splitlines()]
    assert {f["kind"] for f in faults} == {"broker-kill", "broker-pause", "lost-acks"}
    assert all(f["outcome"] == "healed" for f in faults), [f for f in faults if f["outcome"] != "healed"]
    # a container kill through the engine may land late: the journal must say so (how late is the machine's)
    assert journal_problems(faults, summary) == []
    assert leftovers(docker_client) == NOTHING


@pytest.mark.nightly  # a Compose cluster up and down twice: minutes
def test_ctrl_c_mid_run_takes_the_cluster_down_and_keeps_the_record(tmp_path, docker_client):
    doc = yaml.safe_load((ROOT / "experiments" / "broker-failover.yaml").read_text())
    doc["workload"] = {"messages": 300000, "rate": 5000}
    proc, out = start(tmp_path, delivering(doc))
    run_dir = run_dir_of(out)
    wait_for(lambda: (run_dir / "idempotence-off").exists(), timeout=300, what="the first variant to start")
    wait_until_delivered(run_dir, "idempotence-off")
    assert leftovers(docker_client)["containers"]  # the cluster is up ...
    proc.send_signal(signal.SIGINT)
    summary = assert_clean_stop(proc, run_dir, 130)
    assert 0 < summary["variants"]["idempotence-off"]["sent"] < 300000
    assert leftovers(docker_client) == NOTHING  # ... and gone after Ctrl-C
    assert (run_dir / "logs" / "compose.log").exists()


@pytest.mark.nightly  # a Compose cluster up and down twice: minutes
def test_a_killed_runs_leftovers_do_not_block_the_next_run(tmp_path, docker_client):
    """kill -9 of the harness leaves the containers (nothing can clean up); the next run takes them down first."""
    doc = yaml.safe_load((ROOT / "experiments" / "broker-failover.yaml").read_text())
    doc.update(workload={"messages": 20000, "rate": 5000}, faults=[],
               expectations={"idempotence-on": {"duplicates": 0, "lost": 0}})
    (tmp_path / "first").mkdir()
    proc, out = start(tmp_path / "first", doc)
    run_dir = run_dir_of(out)
    wait_for(lambda: (run_dir / "idempotence-off").exists(), timeout=300, what="the first variant to start")
    docker_client.containers.list(filters={"label": "com.docker.compose.project=kafka-chaos"})[0].kill()
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    assert leftovers(docker_client)["containers"]  # left behind, one of them dead
    (tmp_path / "second").mkdir()
    proc, out = start(tmp_path / "second", doc)
    output, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, output[-3000:]
    assert leftovers(docker_client) == NOTHING
