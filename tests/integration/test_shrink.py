"""kafka-chaos shrink end to end on the embedded default: a run that loses data under two lost-acks windows
and a broker kill (the embedded broker keeps its log in memory) shrinks to the kill alone, and the file it
writes replays as the run's own faults.jsonl does. Minutes (five runs): marked slow, CI runs it."""

import json

import pytest
import yaml

from tests.integration.test_quickstart import kafka_chaos

pytestmark = pytest.mark.slow

LOSING = {
    "name": "shrink-me", "seed": 5, "topic": {"partitions": 2},
    "workload": {"messages": 10000, "rate": 4000},
    "producer": {"acks": "all", "retries": 10000000, "linger.ms": 5},
    "variants": [{"name": "idempotence-off", "producer": {"enable.idempotence": False}}],
    "faults": [{"kind": "lost-acks", "at": 0.3, "duration": 0.2, "cut_after_ms": 100},
               {"kind": "lost-acks", "at": 0.9, "duration": 0.2, "cut_after_ms": 100},
               {"kind": "broker-kill", "at": 1.6, "downtime": 0.5}],
}


def test_a_loss_shrinks_to_the_broker_kill_that_caused_it(tmp_path):
    exp = tmp_path / "losing.yaml"
    exp.write_text(yaml.safe_dump(LOSING))
    runs, tries = tmp_path / "runs", tmp_path / "tries"
    r = kafka_chaos("run", str(exp), "--out", str(runs))
    assert r.returncode == 1 and "lost == 0 (fatal)" in r.stdout, r.stdout + r.stderr
    [failed] = [p for p in runs.iterdir() if (p / "summary.json").exists()]
    r = kafka_chaos("shrink", str(failed), "--experiment", str(exp), "--out", str(tries), "--max-runs", "6")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "3 fault(s) -> 1 in" in r.stdout and "no single fault can be left out" in r.stdout, r.stdout
    [written] = tries.glob("*-shrunk.jsonl")
    rows = [json.loads(line) for line in written.read_text().splitlines()]
    assert [(x["kind"], x["variant"]) for x in rows] == [("broker-kill", "idempotence-off")]
    assert f"replay it with: kafka-chaos run {exp} --replay {written}" in r.stdout
    # every try is an ordinary run folder of the variant alone, and the last kept one lost data
    summaries = [json.loads((p / "summary.json").read_text()) for p in tries.iterdir() if (p / "summary.json").exists()]
    assert 2 <= len(summaries) <= 6 and all(list(s["variants"]) == ["idempotence-off"] for s in summaries)
    # the tries share one cluster, kept beside them (the embedded broker's kill empties it, and it is restarted)
    [kept] = tries.glob("*-shrunk-clusters")
    assert [c.name[:8] for c in kept.iterdir()] == ["cluster-"] and {s["cluster_logs"] for s in summaries} == {
        str(next(kept.iterdir()) / "logs")}
    assert any(s["variants"]["idempotence-off"]["lost"] > 0 and s["faults_planned"] == 1 for s in summaries)
