"""--repeat 2 end to end on the embedded default: two ordinary run folders, one series folder with
aggregate.json (intervals), its page, one JUnit suite per run, and the runs index listing the series."""

import json
import xml.etree.ElementTree as ET

import yaml

from tests.integration.test_quickstart import SMALL, kafka_chaos

TINY = {**SMALL, "name": "tiny-repeat", "workload": {"messages": 8000, "rate": 8000},
        "faults": [{"kind": "lost-acks", "every": 0.4, "jitter": 0.1, "duration": 0.25, "start": 0.2}]}


def test_repeat_two_runs_writes_an_aggregate(tmp_path):
    exp = tmp_path / "tiny.yaml"
    exp.write_text(yaml.safe_dump(TINY))
    out = tmp_path / "reports"
    r = kafka_chaos("run", str(exp), "--out", str(out), "--repeat", "2", "--junit", str(tmp_path / "junit.xml"))
    assert r.returncode == 0, r.stdout + r.stderr
    series = [p for p in out.iterdir() if (p / "aggregate.json").exists()]
    runs = [p for p in out.iterdir() if (p / "summary.json").exists()]
    assert len(series) == 1 and len(runs) == 2
    assert f"aggregate: {series[0] / 'aggregate.json'}" in r.stdout
    doc = json.loads((series[0] / "aggregate.json").read_text())
    assert doc["status"] == "complete" and doc["seeds"] == [11, 12] and doc["verdicts"] == {"pass": 2}
    assert {x["run_id"] for x in doc["runs"]} == {p.name for p in runs}
    off = doc["variants"]["idempotence-off"]
    assert off["runs"] == 2 and off["acked"] == sum(json.loads((p / "summary.json").read_text())
                                                    ["variants"]["idempotence-off"]["acked"] for p in runs)
    dup = off["metrics"]["duplicates"]
    assert dup["runs_with"] == 2 and len(dup["ci95"]) == 2 and dup["ci95"][0] <= dup["rate_per_100k"] <= dup["ci95"][1]
    assert doc["variants"]["idempotence-on"]["metrics"]["duplicates"]["max"] == 0
    assert 'id="aggregate"' in (series[0] / "index.html").read_text()
    assert series[0].name in (out / "index.html").read_text()
    suites = ET.parse(tmp_path / "junit.xml").getroot().findall("testsuite")
    assert [s.get("name") for s in suites] == ["tiny-repeat #1 (seed 11)", "tiny-repeat #2 (seed 12)"]
