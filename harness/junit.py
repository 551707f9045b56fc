"""JUnit XML for CI systems: one test case per variant x check, plus one for the run itself.

The layout is the Ant JUnit format that Jenkins, GitHub Actions reporters and GitLab read:
testsuites > testsuite > testcase (> failure | error | skipped). A check that failed is a
failure whose message carries the rule and the variant's anomaly counts; an allowed anomaly
is `skipped` with "allowed by the experiment" (never a plain pass); a run that ended in error,
was interrupted or could not analyse a variant is an error on the `run` test case. A series of
repeated runs (--repeat) is one testsuite per run, named `<experiment> #i (seed s)`.
"""

from __future__ import annotations

import socket
import xml.etree.ElementTree as ET
from pathlib import Path

from . import verdict as v
from .analysis.metrics import METRICS
from .status import COMPLETE


def _counts(variant: dict) -> str:
    return ", ".join(f"{m.key}={variant[m.key]}" for m in METRICS if m.key in variant)


def to_xml(summary: dict, seconds: float = 0.0) -> bytes:
    return _document([_suite(summary, seconds)])


def series_xml(summaries: list[dict], seconds: list[float]) -> bytes:
    """Repeated runs: one testsuite per run, each named after its place in the series and its seed."""
    suites = []
    for i, (summary, t) in enumerate(zip(summaries, seconds), 1):
        suites.append(_suite(summary, t, f"{summary.get('experiment', 'experiment')} #{i} (seed {summary.get('seed')})"))
    return _document(suites)


def _document(suites: list[ET.Element]) -> bytes:
    root = ET.Element("testsuites", name="kafka-chaos")
    for name in ("tests", "failures", "errors"):
        root.set(name, str(sum(int(s.get(name)) for s in suites)))
    root.set("time", f"{sum(float(s.get('time')) for s in suites):.3f}")
    root.extend(suites)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def _suite(summary: dict, seconds: float, name: str | None = None) -> ET.Element:
    experiment = summary.get("experiment", "experiment")
    suite = ET.Element("testsuite", name=name or experiment,
                       timestamp=(summary.get("started_at") or "")[:19] or "1970-01-01T00:00:00",
                       hostname=socket.gethostname(), time=f"{seconds:.3f}")
    props = ET.SubElement(suite, "properties")
    for key in ("run_id", "status", "verdict", "seed", "cluster"):
        if summary.get(key) not in (None, ""):
            ET.SubElement(props, "property", name=key, value=str(summary[key]))
    for variant, x in summary.get("variants", {}).items():  # the client each variant ran (the client axis)
        if x.get("client"):
            ET.SubElement(props, "property", name=f"client.{variant}", value=str(x["client"]))
    tests = failures = errors = skipped = 0

    run_case = ET.SubElement(suite, "testcase", classname=experiment, name="run", time=f"{seconds:.3f}")
    tests += 1
    incomplete = [f"{name}: {x['incomplete']}" for name, x in summary.get("variants", {}).items() if x.get("incomplete")]
    if summary.get("status") != COMPLETE or incomplete:
        errors += 1
        text = "; ".join(filter(None, [summary.get("reason", ""), *incomplete]))
        ET.SubElement(run_case, "error", message=f"run {summary.get('status')}: {text}",
                      type=str(summary.get("status"))).text = text
    for variant, x in summary.get("variants", {}).items():
        for c in x.get("expectations", []):
            tests += 1
            case = ET.SubElement(suite, "testcase", classname=f"{experiment}.{variant}",
                                 name=f"{c['metric']} {c['rule']}", time="0")
            status = v.status_of(c)
            if status == v.FAIL:
                failures += 1
                ET.SubElement(case, "failure", type="ExpectationFailed",
                              message=f"{variant}: {c['metric']} {c['rule']} did not hold (actual {c['actual']})"
                              ).text = f"{variant}: {_counts(x)}"
            elif status == v.UNKNOWN:  # lost or late, nobody can tell: an error, never a pass
                errors += 1
                ET.SubElement(case, "error", type="Undecided",
                              message=f"{variant}: {c['metric']} = {c['actual']}: the final read could not prove it "
                              "reached the end, so these acknowledged values may be lost or late")
            elif status == v.ALLOWED:
                skipped += 1
                ET.SubElement(case, "skipped", type="AllowedAnomaly",
                              message=f"allowed by the experiment: {c['metric']} = {c['actual']}")
    for name, count in (("tests", tests), ("failures", failures), ("errors", errors), ("skipped", skipped)):
        suite.set(name, str(count))
    return suite


def write(path: Path, summary: dict, seconds: float = 0.0) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(to_xml(summary, seconds))


def write_series(path: Path, summaries: list[dict], seconds: list[float]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(series_xml(summaries, seconds))
