"""Data loss fails a run without any rule; allowing it by name passes and shows it as allowed.

A Tansu broker killed mid-run comes back empty (memory storage): what it acknowledged before is
gone, and it hands the same offsets to new records. That is one event with one name, lost: the
acknowledged offsets now holding other values is not reported again (as inconsistent offsets), so
`allow: [lost]` alone passes the run.
"""

import re

from tests.integration.test_quickstart import run_experiment

KILL = {
    "name": "broker-kill-loses-data",
    "seed": 3,
    "topic": {"partitions": 2},
    "workload": {"messages": 12000, "rate": 6000},
    "producer": {"acks": "all", "retries": 10000000, "linger.ms": 5, "enable.idempotence": False},
    "faults": [{"kind": "broker-kill", "at": 0.8, "downtime": 0.5}],
}


def test_lost_data_fails_the_run_and_the_report_says_why_first(tmp_path):
    doc = {**KILL, "variants": [{"name": "no-allow"}]}
    result, run_dir, summary = run_experiment(tmp_path, doc)
    assert result.returncode == 1, result.stdout + result.stderr
    v = summary["variants"]["no-allow"]
    assert v["lost"] > 0 and v["verdict"] == "fail" and summary["verdict"] == "fail"
    failed = [c["metric"] for c in v["expectations"] if c["status"] == "fail"]
    assert failed == ["lost"], failed  # the loss, under its one name
    first = re.search(r'id="headline">([^<]*)<', (run_dir / "index.html").read_text()).group(1)
    assert first.startswith(f"FAIL: no-allow: lost = {v['lost']:,}, expected == 0 (fatal)"), first
    assert "FAIL" in result.stdout and "lost == 0 (fatal)" in result.stdout


def test_allowed_loss_passes_and_is_shown_as_allowed(tmp_path):
    doc = {**KILL, "variants": [{"name": "allowed", "allow": ["lost"]}]}
    result, run_dir, summary = run_experiment(tmp_path, doc)
    assert result.returncode == 0, result.stdout + result.stderr
    v = summary["variants"]["allowed"]
    statuses = {c["metric"]: c["status"] for c in v["expectations"]}
    assert v["lost"] > 0 and statuses["lost"] == "allowed" and summary["verdict"] == "pass"
    assert (v["inconsistent_offsets"], v["unseen"]) == (0, 0)
    html = (run_dir / "index.html").read_text()
    assert re.search(r'id="headline">PASS with allowed anomalies: allowed: lost = [\d,]+ \(allowed by the experiment\)',
                     html)
    assert "allowed  allowed: lost allowed" in result.stdout
