import xml.etree.ElementTree as ET
from pathlib import Path

import xmlschema

from harness import junit
from harness.analysis import metrics
from harness.summary import build, variant_entry
from harness.verdict import Rule

SCHEMA = xmlschema.XMLSchema(str(Path(__file__).resolve().parents[1] / "junit.xsd"))


def counts(duplicates, lost=0):
    return {**{k: 0 for k in metrics.KEYS}, "sent": 10, "acked": 10, "received": 10 + duplicates, "unique": 10,
            "duplicates": duplicates, "jump_back_runs": 1 if duplicates else 0, "lost": lost}


def summary(on_duplicates, status="complete", reason="", off_lost=0):
    variants = {"off": variant_entry(counts(7, off_lost), {"duplicates": Rule(">", 0)}, ["lost"]),
                "on": variant_entry(counts(on_duplicates), {"duplicates": Rule("==", 0)}, [])}
    return build("r1", "lost-acks", status, variants,
                 {"started_at": "2026-11-21T05:41:23+00:00", "seed": 3, "reason": reason})


def cases(path):
    suite = ET.parse(path).getroot().find("testsuite")
    return suite, [(c.get("classname"), c.get("name")) for c in suite.findall("testcase")]


def test_passing_run_is_valid_junit_with_one_case_per_check(tmp_path):
    path = tmp_path / "junit.xml"
    junit.write(path, summary(0), 12.5)
    SCHEMA.validate(str(path))
    suite, names = cases(path)
    assert names[:3] == [("lost-acks", "run"), ("lost-acks.off", "duplicates > 0"), ("lost-acks.off", "lost allowed")]
    assert ("lost-acks.on", "duplicates == 0") in names and ("lost-acks.on", "lost == 0 (fatal)") in names
    # A check per fatal metric and per undecided one (unseen), in each variant, and the two rules.
    assert len(names) == 1 + 2 * len(metrics.FATAL | metrics.UNDECIDED) + 2
    assert (suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("0", "0", "0")


def test_failing_run_carries_the_counts_in_the_failure(tmp_path):
    path = tmp_path / "junit.xml"
    junit.write(path, summary(5), 3.0)
    SCHEMA.validate(str(path))
    failures = ET.parse(path).getroot().findall(".//failure")
    assert len(failures) == 1
    assert "duplicates == 0 did not hold (actual 5)" in failures[0].get("message")
    assert "duplicates=5" in failures[0].text and "jump_back_runs=1" in failures[0].text


def test_allowed_anomaly_is_skipped_with_its_count_not_passed(tmp_path):
    path = tmp_path / "junit.xml"
    junit.write(path, summary(0, off_lost=12), 3.0)
    SCHEMA.validate(str(path))
    skipped = ET.parse(path).getroot().findall(".//skipped")
    assert [s.get("message") for s in skipped] == ["allowed by the experiment: lost = 12"]
    assert ET.parse(path).getroot().find("testsuite").get("skipped") == "1"


def test_errored_run_is_an_error_case(tmp_path):
    path = tmp_path / "junit.xml"
    junit.write(path, summary(0, status="error", reason="broker 0 died outside the fault schedule"))
    SCHEMA.validate(str(path))
    error = ET.parse(path).getroot().find(".//error")
    assert "broker 0 died" in error.get("message")


def test_each_variant_names_the_client_it_ran(tmp_path):
    doc = summary(0)
    doc["variants"]["off"]["client"] = "confluent-kafka 2.2.0, librdkafka 2.2.0"
    doc["variants"]["on"]["client"] = "confluent-kafka 2.16.1, librdkafka 2.16.0"
    path = tmp_path / "junit.xml"
    junit.write(path, doc, 1.0)
    SCHEMA.validate(str(path))
    props = {p.get("name"): p.get("value") for p in ET.parse(path).getroot().iter("property")}
    assert props["client.off"] == "confluent-kafka 2.2.0, librdkafka 2.2.0"
    assert props["client.on"].startswith("confluent-kafka 2.16.1")
