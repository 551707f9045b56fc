"""JUnit XML for CI systems: one test case per variant x expectation, plus one for the run itself.

The layout is the Ant JUnit format that Jenkins, GitHub Actions reporters and GitLab read:
testsuites > testsuite > testcase (> failure | error). An expectation that did not hold is a
failure whose message carries the rule and the variant's anomaly counts; a run that ended in
error or was interrupted is an error on the `run` test case.
"""

from __future__ import annotations

import socket
import xml.etree.ElementTree as ET
from pathlib import Path

COUNTS = ("sent", "acked", "received", "duplicates", "jump_back_runs", "max_jump_back", "lost", "missing",
          "received_unacked", "reorders")


def _counts(v: dict) -> str:
    return ", ".join(f"{k}={v[k]}" for k in COUNTS if k in v)


def to_xml(summary: dict, seconds: float = 0.0) -> bytes:
    experiment = summary.get("experiment", "experiment")
    suite = ET.Element("testsuite", name=experiment, timestamp=(summary.get("started_at") or "")[:19] or "1970-01-01T00:00:00",
                       hostname=socket.gethostname(), time=f"{seconds:.3f}")
    props = ET.SubElement(suite, "properties")
    for key in ("run_id", "status", "seed", "cluster"):
        if summary.get(key) not in (None, ""):
            ET.SubElement(props, "property", name=key, value=str(summary[key]))
    tests = failures = errors = 0

    run_case = ET.SubElement(suite, "testcase", classname=experiment, name="run", time=f"{seconds:.3f}")
    tests += 1
    if summary.get("status") != "complete":
        errors += 1
        ET.SubElement(run_case, "error", message=f"run {summary.get('status')}: {summary.get('reason', '')}",
                      type=str(summary.get("status"))).text = summary.get("reason", "")
    for variant, v in summary.get("variants", {}).items():
        for e in v.get("expectations", []):
            tests += 1
            case = ET.SubElement(suite, "testcase", classname=f"{experiment}.{variant}",
                                 name=f"{e['metric']} {e['rule']}", time="0")
            if not e["passed"]:
                failures += 1
                ET.SubElement(case, "failure", type="ExpectationFailed",
                              message=f"{variant}: {e['metric']} {e['rule']} did not hold (actual {e['actual']})"
                              ).text = f"{variant}: {_counts(v)}"
    suite.set("tests", str(tests))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", "0")
    root = ET.Element("testsuites", name="kafka-chaos", tests=str(tests), failures=str(failures),
                      errors=str(errors), time=f"{seconds:.3f}")
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def write(path: Path, summary: dict, seconds: float = 0.0) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(to_xml(summary, seconds))
