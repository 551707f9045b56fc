"""The consumer workload end to end on the embedded broker (Tansu), through the CLI: a group of member
processes under kills, each commit strategy's signature in the sink, and no member left behind."""

import os
import signal
import sqlite3

import pytest

from tests.integration.test_interrupts import assert_clean_stop, run_dir_of, start, wait_for
from tests.integration.test_quickstart import processes_of, run_experiment

CRASH = {
    "name": "small-consumer-crash",
    "seed": 15,
    "topic": {"partitions": 4},
    "workload": {"messages": 6000, "rate": 8000},
    "producer": {"acks": "all", "enable.idempotence": True, "linger.ms": 5},
    # After the producer: a backlog, so each kill lands while a member is mid-batch.
    "consumer": {"members": 2, "when": "after", "batch": 100, "processing_ms": 2.0,
                 # A killed member's session ends sooner than by default: a shorter rebalance, a faster test.
                 "config": {"session.timeout.ms": 2000, "heartbeat.interval.ms": 500}},
    "fault_window": 6.5,
    "variants": [{"name": "commit-after", "consumer": {"strategy": "commit-after"}},
                 {"name": "commit-before", "consumer": {"strategy": "commit-before"}, "allow": ["skipped"]},
                 {"name": "idempotent-sink", "consumer": {"strategy": "idempotent-sink"}}],
    # The group's first assignment takes ~3 s on the embedded broker: the kill comes after it, and takes a
    # member that holds partitions (each kill costs a rebalance of ~10 s there: one is enough).
    "faults": [{"kind": "consumer-kill", "at": 5.0, "duration": 1.0}],
    "expectations": {"commit-after": {"reprocessed": "> 0"}, "commit-before": {"skipped": "> 0"},
                     "idempotent-sink": {"reprocessed": 0, "unconsumed": 0}},
}


def sink_rows(run_dir, variant, sql):
    db = sqlite3.connect(run_dir / variant / "sink.sqlite")
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


def test_commit_strategies_under_consumer_kills(tmp_path):
    result, run_dir, summary = run_experiment(tmp_path, CRASH)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    after, before, sink = (summary["variants"][v] for v in ("commit-after", "commit-before", "idempotent-sink"))
    assert after["reprocessed"] > 0 and after["skipped"] == 0 and after["unconsumed"] == 0
    assert before["skipped"] > 0 and before["reprocessed"] == 0
    assert (sink["reprocessed"], sink["skipped"], sink["unconsumed"]) == (0, 0, 0)
    for name, v in summary["variants"].items():
        assert v["received"] == 6000, name
        # Every record of the log was processed at least once, but the skipped ones.
        distinct = sink_rows(run_dir, name, "SELECT count(*) FROM (SELECT DISTINCT partition, offset FROM processed)")
        assert distinct[0][0] == 6000 - v["skipped"] and v["processed"] >= distinct[0][0], name
        killed = sink_rows(run_dir, name, "SELECT count(*) FROM events WHERE event = 'killed'")[0][0]
        assert killed == 1, name
        assert v["poll_skips"] == v["nonmonotonic_polls"] == 0, name
    # The window that catches every repeat is at most what one member processes between two commits.
    assert 0 < after["dedup_window_records"]["p100"] and after["dedup_window_ms"]["count"] >= after["reprocessed"]
    # idempotent-sink upserted every value once and stored each partition's end with it.
    assert sink_rows(run_dir, "idempotent-sink", "SELECT count(*) FROM records")[0][0] == 6000
    assert sink_rows(run_dir, "idempotent-sink", "SELECT sum(next_offset) FROM offsets")[0][0] == 6000
    html = (run_dir / "index.html").read_text()
    assert "Consumer group" in html and "dedup window" in html
    assert processes_of(run_dir) == []


def test_kip_848_on_a_broker_without_it_is_an_infrastructure_error_naming_the_protocol(tmp_path):
    doc = {**CRASH, "name": "kip848-on-tansu", "workload": {"messages": 1000, "rate": 5000}, "faults": [],
           "expectations": {}, "consumer": {"members": 1, "group.protocol": "consumer"},
           "variants": [{"name": "kip848"}]}
    result, run_dir, summary = run_experiment(tmp_path, doc)
    assert result.returncode == 3, result.stdout[-3000:] + result.stderr[-3000:]
    assert summary["status"] == "error" and "group.protocol=consumer" in summary["reason"], summary["reason"]
    assert "ConsumerGroupHeartbeat" in summary["reason"]
    assert processes_of(run_dir) == []


LONG = {**CRASH, "name": "interruptible-consumers", "workload": {"messages": 20000, "rate": 4000},
        "consumer": {"members": 3, "when": "during", "batch": 100, "processing_ms": 2.0},
        "variants": [{"name": "a"}], "faults": [{"kind": "consumer-pause", "at": 1.0, "duration": 30.0}],
        "expectations": {}}


def members_of(run_dir):
    return [p for p in processes_of(run_dir) if "harness.workload.member" in " ".join(p)]


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGKILL, None)])
def test_no_member_survives_ctrl_c_or_kill_9_of_the_harness(tmp_path, sig, code):
    proc, out = start(tmp_path, LONG)
    run_dir = run_dir_of(out)
    # Three members, one of them frozen (SIGSTOP) by the pause: a stopped process must die too.
    wait_for(lambda: len(members_of(run_dir)) == 3 and (run_dir / "a" / "sink.sqlite").exists()
             and sink_rows(run_dir, "a", "SELECT count(*) FROM events WHERE event = 'paused'")[0][0] == 1,
             what="three members, one paused")
    if code is None:
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
        wait_for(lambda: processes_of(run_dir) == [], timeout=60, what="no orphan after kill -9")
    else:
        proc.send_signal(sig)
        assert_clean_stop(proc, run_dir, code)
        assert members_of(run_dir) == []
