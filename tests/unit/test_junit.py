import xml.etree.ElementTree as ET
from pathlib import Path

import xmlschema

from harness import junit
from harness.summary import build

SCHEMA = xmlschema.XMLSchema(str(Path(__file__).resolve().parents[1] / "junit.xsd"))


def metrics(duplicates):
    return dict(sent=10, acked=10, rejected=0, unknown=0, received=10 + duplicates, unique=10, duplicates=duplicates,
                jump_back_runs=1 if duplicates else 0, max_jump_back=duplicates, lost=0, missing=0,
                received_unacked=0, reorders=0, unexpected=0)


def summary(on_duplicates, status="complete", reason=""):
    return build("r1", "lost-acks", status, {"off": metrics(7), "on": metrics(on_duplicates)},
                 {"on": {"duplicates": 0, "lost": 0}, "off": {"duplicates": "> 0"}},
                 {"started_at": "2026-11-21T05:41:23+00:00", "seed": 3, "reason": reason})


def test_passing_run_is_valid_junit_with_one_case_per_expectation(tmp_path):
    path = tmp_path / "junit.xml"
    junit.write(path, summary(0), 12.5)
    SCHEMA.validate(str(path))
    suite = ET.parse(path).getroot().find("testsuite")
    names = [(c.get("classname"), c.get("name")) for c in suite.findall("testcase")]
    assert names == [("lost-acks", "run"), ("lost-acks.off", "duplicates > 0"), ("lost-acks.on", "duplicates 0"),
                     ("lost-acks.on", "lost 0")]
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("4", "0", "0")


def test_failing_run_carries_the_counts_in_the_failure(tmp_path):
    path = tmp_path / "junit.xml"
    junit.write(path, summary(5), 3.0)
    SCHEMA.validate(str(path))
    failures = ET.parse(path).getroot().findall(".//failure")
    assert len(failures) == 1
    assert "duplicates 0 did not hold (actual 5)" in failures[0].get("message")
    assert "duplicates=5" in failures[0].text and "jump_back_runs=1" in failures[0].text


def test_errored_run_is_an_error_case(tmp_path):
    path = tmp_path / "junit.xml"
    junit.write(path, summary(0, status="error", reason="broker 0 died outside the fault schedule"))
    SCHEMA.validate(str(path))
    error = ET.parse(path).getroot().find(".//error")
    assert "broker 0 died" in error.get("message")
