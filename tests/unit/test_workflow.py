"""The nightly CI chaos job's structure, checked without GitHub: triggers, the command it runs,
the artifact and JUnit steps, and the exit-code gate (its script is run here with bash)."""

import re
import subprocess
from pathlib import Path

import yaml

from harness.cli import main
from harness.spec import load_spec

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "nightly-chaos.yml"


def load():
    doc = yaml.safe_load(WORKFLOW.read_text())
    triggers = doc.get("on", doc.get(True))  # YAML 1.1 reads the key `on` as true
    [job] = doc["jobs"].values()
    return doc, triggers, job, job["steps"]


def step(steps, uses_prefix=None, name=None):
    for s in steps:
        if (uses_prefix and s.get("uses", "").startswith(uses_prefix)) or (name and s.get("name") == name):
            return s
    raise AssertionError(f"no step {uses_prefix or name}")


def test_runs_nightly_and_on_demand():
    _, triggers, job, _ = load()
    assert re.fullmatch(r"[\d*/,-]+( [\d*/,-]+){4}", triggers["schedule"][0]["cron"])
    assert "workflow_dispatch" in triggers
    assert job["timeout-minutes"] <= 90


def test_the_command_it_runs_exists_in_the_cli():
    _, _, job, steps = load()
    script = step(steps, name="Run the nightly experiment")["run"]
    assert ".venv/bin/kafka-chaos" in script and "args=(run " in script
    run_cmd = main.commands["run"]
    known = {opt for p in run_cmd.params for opt in p.opts}
    used = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", script))
    assert used and used <= known, used - known
    experiment = job["env"]["EXPERIMENT"].split("'")[1]
    spec = load_spec(ROOT / experiment)
    assert spec.cluster.backend == "compose" and spec.cluster.brokers == 3
    assert spec.topic.replication_factor == 3 and len(spec.variants) == 2
    assert (ROOT / "compose" / "docker-compose.yml").samefile(spec.cluster.compose_path)  # the default file
    images = step(steps, name="Get the images")["run"]
    # the real images where a registry answers, else CI's own script and the variable that switches to its images
    assert "docker pull apache/kafka:4.1.0" in images and "compose/build-images.sh" in images
    assert "KAFKA_CHAOS_IMAGES=kafka-chaos" in images
    cleanup = step(steps, name="Make sure nothing is left")
    assert cleanup["if"] == "always()" and "-p kafka-chaos -f compose/docker-compose.yml down" in cleanup["run"]


def test_reports_are_uploaded_and_junit_published_whatever_happened():
    _, _, _, steps = load()
    script = step(steps, name="Run the nightly experiment")["run"]
    junit = re.search(r"--junit ([^\s)]+)", script).group(1)
    upload = step(steps, uses_prefix="actions/upload-artifact@")
    assert upload["if"] == "always()" and upload["with"]["path"].rstrip("/") == "reports"
    assert junit.startswith("reports/")
    publish = step(steps, uses_prefix="mikepenz/action-junit-report@")
    assert publish["if"] == "always()" and publish["with"]["report_paths"] == junit


def test_the_gate_fails_the_job_on_exit_1_and_3_only():
    _, _, _, steps = load()
    gate = steps[-1]
    assert gate["if"] == "always()"
    for code, should_fail in (("0", False), ("1", True), ("3", True), ("130", True), ("", True)):
        script = gate["run"].replace("${{ steps.run.outputs.exit_code }}", code)
        done = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
        assert (done.returncode != 0) == should_fail, (code, done.stdout)
