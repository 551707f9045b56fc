"""The nightly exploration workflow, checked without GitHub: the command it runs exists, the spaces it explores
(one job each) are every shipped space of 3 Apache Kafka nodes, so every client implementation (their known bugs
named in the spaces' explore.known), its budget fits the job's timeout, and its exit-code gate fails on a finding."""

import re
import subprocess
from pathlib import Path

import yaml

from harness.cli import main, parse_budget
from harness.spec import load_spec

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "nightly-explore.yml"


def job():
    doc = yaml.safe_load(WORKFLOW.read_text())
    [only] = doc["jobs"].values()
    return doc, only


def step(steps, name):
    return next(s for s in steps if s.get("name") == name)


def test_it_explores_shipped_kafka_spaces_with_options_the_cli_has():
    doc, j = job()
    script = step(j["steps"], "Explore")["run"]
    assert 'kafka-chaos explore "experiments/explore/${{ matrix.space }}.yaml"' in script
    known = {opt for p in main.commands["explore"].params for opt in p.opts}
    used = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", script))
    assert used and used <= known, used - known
    assert j["strategy"]["fail-fast"] is False  # one space's finding does not cancel the others
    clients = set()
    three_nodes = {p.stem for p in (ROOT / "experiments" / "explore").glob("*.yaml")
                   if load_spec(p).cluster.brokers == 3}
    assert set(j["strategy"]["matrix"]["space"]) == three_nodes
    for space in j["strategy"]["matrix"]["space"]:
        spec = load_spec(ROOT / "experiments" / "explore" / f"{space}.yaml")
        assert spec.explore is not None and spec.cluster.backend == "local" and spec.cluster.broker == "kafka"
        assert spec.cluster.brokers == 3
        clients |= {next(iter(spec.client)) if spec.client else "confluent-kafka"}
    assert clients == {"confluent-kafka", "kafka-clients", "kafka-python", "aiokafka"}


def test_the_budget_leaves_room_in_the_timeout():
    _, j = job()
    budget = parse_budget(j["env"]["BUDGET"].split("'")[1])
    # a finding's investigation stops at the budget; the cluster's start, the page and the upload fit in 20 min
    assert budget / 60 + 20 <= j["timeout-minutes"]


def test_the_gate_fails_on_a_finding_or_an_infrastructure_failure(tmp_path):
    _, j = job()
    gate = step(j["steps"], "Fail on a finding (1) or a failed exploration (3)")
    assert gate["if"] == "always()"
    upload = step(j["steps"], "Upload the exploration")
    assert upload["if"] == "always()" and upload["with"]["path"] == "reports/"
    for code, expected in (("0", 0), ("1", 1), ("3", 3), ("", 1), ("130", 1)):
        script = gate["run"].replace("${{ steps.explore.outputs.exit_code }}", code)
        assert subprocess.run(["bash", "-c", script], capture_output=True).returncode == expected, code
