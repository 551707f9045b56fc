"""`kafka-chaos explore` on 3 local Apache Kafka nodes: the shipped Kafka space at a small size, a few tries on
one long-lived cluster (never rebuilt while it stays healthy), each try complete, its topics deleted when it
passed, the page written and nothing left running."""

import json
import subprocess
import sys
from pathlib import Path

import yaml

from tests.integration.test_explore import processes_of
from tests.integration.test_interrupts import wait_for

ROOT = Path(__file__).resolve().parents[2]


def test_a_short_exploration_of_the_shipped_kafka_space(tmp_path):
    doc = yaml.safe_load((ROOT / "experiments" / "explore" / "kafka.yaml").read_text())
    doc["workload"] = {"messages": 20000, "rate": 10000}
    doc["explore"]["window"] = [0.2, 1.5]
    exp = tmp_path / "kafka-space.yaml"
    exp.write_text(yaml.safe_dump(doc))
    r = subprocess.run([sys.executable, "-m", "harness", "explore", str(exp), "--tries", "3", "--seed", "44",
                        "--rate-runs", "1", "--shrink-runs", "2", "--out", str(tmp_path / "out")], cwd=ROOT,
                       capture_output=True, text=True, timeout=1200)
    [folder] = list((tmp_path / "out").glob("*-explore-*"))
    tries = [json.loads(x) for x in (folder / "tries.jsonl").read_text().splitlines()]
    text = r.stdout[-3000:] + r.stderr[-3000:]
    assert [t["try"] for t in tries] == [1, 2, 3], text
    assert all(t["status"] == "complete" and not t["rebuilt"] for t in tries), text
    assert len(list(folder.glob("cluster-*"))) == 1  # one cluster for every try
    findings = [json.loads(x) for x in (folder / "findings.jsonl").read_text().splitlines()] \
        if (folder / "findings.jsonl").exists() else []
    # A finding here would be a claim about Kafka or librdkafka: it must come with its experiment and evidence.
    assert r.returncode == (1 if findings else 0), text
    for f in findings:
        assert (folder / "findings" / f["id"] / "experiment.yaml").exists()
        assert (folder / "findings" / f["id"] / "evidence.txt").exists()
    assert "tries" in (folder / "index.html").read_text()
    wait_for(lambda: processes_of(folder) == [], timeout=30, what="every process of the exploration to exit")
