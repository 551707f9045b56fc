"""Shipped experiments on real Apache Kafka (3 local KRaft nodes from KAFKA_HOME) at a size that keeps this tier
within CI's budget, asserting what their comments promise: unclean election here, the workload experiments in
test_workloads.py, failover and leader isolation in test_local_kafka.py, transactions and zombie fencing in
test_transactions.py; and the quickstart behind a real toxiproxy-server with the verdicts it has behind the
embedded proxy."""

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from harness.cluster.toxiproxy import find_toxiproxy_server
from harness.exits import exit_for_verdict
from tests.integration.test_interrupts import wait_for
from tests.integration.test_quickstart import SMALL, accounting, processes_of, run_dirs
from tests.kafka.conftest import server_log
from tests.recount import miscounted

ROOT = Path(__file__).resolve().parents[2]
LOCAL = {"backend": "local", "broker": "kafka", "brokers": 3}
real_toxiproxy = pytest.mark.skipif(find_toxiproxy_server() is None,
                                    reason="no toxiproxy-server on PATH or in $TOXIPROXY_SERVER")


def shipped(name, **over):
    doc = yaml.safe_load((ROOT / "experiments" / f"{name}.yaml").read_text())
    doc.update(cluster=LOCAL, **over)
    return doc


def run(tmp_path, doc):
    exp = tmp_path / f"{doc['name']}.yaml"
    exp.write_text(yaml.safe_dump(doc))
    out = tmp_path / "reports"
    r = subprocess.run([sys.executable, "-m", "harness", "run", str(exp), "--out", str(out)], cwd=ROOT,
                       capture_output=True, text=True, timeout=900)
    [run_dir] = list(run_dirs(out))
    faults = [json.loads(line) for line in (run_dir / "faults.jsonl").read_text().splitlines()]
    summary = json.loads((run_dir / "summary.json").read_text())
    # SIGKILLed JVMs may take a moment to be gone on a loaded machine
    wait_for(lambda: processes_of(run_dir) == [], timeout=30, what="every process of the run to exit")
    return r, summary, faults


def ok(r, summary):
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert summary["status"] == "complete" and summary["cluster"].startswith("local · kafka 4.1.0 × 3")


@real_toxiproxy
def test_quickstart_on_kafka_behind_the_real_toxiproxy(tmp_path):
    # The lost acks start at 2 s, once the producer is surely sending: on a loaded machine its first connection to
    # three nodes took 1.7 s, and lost acks that only ever cut its connecting left nothing to send twice (a CI run
    # of 2026-11-27 had 0 duplicates without idempotence, every send acknowledged at the end, all faults applied).
    doc = {**SMALL, "name": "small-quickstart-kafka", "cluster": {**LOCAL, "proxy": "toxiproxy"},
           "topic": {"partitions": 3, "replication_factor": 3}, "workload": {"messages": 40000, "rate": 8000},
           "faults": [{**SMALL["faults"][0], "start": 2.0}, {**SMALL["faults"][1], "at": 3.3}]}
    r, summary, faults = run(tmp_path, doc)
    ok(r, summary)
    assert " · proxy: toxiproxy-server 2." in summary["cluster"]
    off, on = summary["variants"]["idempotence-off"], summary["variants"]["idempotence-on"]
    assert off["duplicates"] > 0, off
    assert (on["duplicates"], on["lost"], off["lost"]) == (0, 0, 0), (on, off)
    assert accounting(off) and accounting(on)
    assert all(f["outcome"] == "healed" for f in faults), faults


def test_unclean_election_loses_what_the_old_leader_acknowledged_alone_and_says_so(tmp_path):
    # The same timeline, the leader down 10 s instead of 20 (the follower rejoins at 20 s while it is still down):
    # 28 s of workload at half the rate instead of 40.
    doc = shipped("unclean-election", workload={"messages": 56000, "rate": 2000})
    doc["faults"][1]["downtime"] = 10
    r, summary, faults = run(tmp_path, doc)
    assert summary["status"] == "complete" and summary["cluster"].startswith("local · kafka 4.1.0 × 3"), summary
    assert {f["outcome"] for f in faults} == {"healed"}, faults
    assert summary["variants"]["acks-1"]["lost"] > 0  # acknowledged by the leader alone, truncated when it came back
    # What else Kafka does here varies from run to run (one CI run of acks=all found 683 acknowledged values in
    # the log at other offsets than the client was told; issue 46 investigates): the test asserts that the
    # harness names whatever happened, as the oracle recounts it from the run's files, and that the exit code
    # follows the verdicts.
    [run_dir] = list(run_dirs(tmp_path / "reports"))
    for name in ("acks-1", "acks-all"):
        v = summary["variants"][name]
        assert accounting(v) and miscounted(run_dir, summary, name) == {}, (name, v)
        assert {f["kind"] for f in faults if f["variant"] == name} == {"isolate", "broker-kill"}
    assert r.returncode == exit_for_verdict(summary["verdict"]), r.stdout[-3000:] + r.stderr[-3000:]


@pytest.mark.nightly  # a known-bug reproduction, minutes long
def test_last_replica_standing_loses_acknowledged_writes_without_eligible_leader_replicas_only(tmp_path):
    # The shipped timeline (its faults end at 50 s) with 55 s of workload instead of 65.
    doc = shipped("known-bugs/last-replica-standing", workload={"messages": 110000, "rate": 2000})
    r, summary, faults = run(tmp_path, doc)
    ok(r, summary)
    off, on = summary["variants"]["elr-off"], summary["variants"]["elr-on"]
    assert (off["features"], on["features"]) == ({"eligible.leader.replicas.version": 0},
                                                 {"eligible.leader.replicas.version": 1})
    assert off["lost"] > 0 and on["lost"] == 0, (off, on)  # acks=all, acknowledged, then truncated away
    assert off["verdict"] == on["verdict"] == "pass" and off["allowed"] == ["lost"]
    for name in ("elr-off", "elr-on"):
        [cut] = [f for f in faults if f["variant"] == name and f["kind"] == "lose-unflushed"]
        assert cut["outcome"] == "healed", cut
        [(broker, effect)] = cut["effect"].items()
        assert cut["brokers"] == [int(broker)]
        [partition] = effect["cut"]  # the variant's topic only, every batch (nothing was flushed)
        assert partition["topic"] == summary["variants"][name]["topic"] and partition["cut_records"] > 0


@pytest.mark.nightly  # a known-bug reproduction, minutes long
def test_delayed_transaction_requests_reach_the_broker_after_the_client_gave_up_on_them(tmp_path):
    # The shipped pattern over 15 s instead of 30: EndTxn requests held 4 s past the client's 2 s timeout.
    doc = shipped("known-bugs/delayed-endtxn", workload={"messages": 30000, "rate": 2000, "transaction.size": 100,
                                                         "abort_ratio": 0.5})
    r, summary, faults = run(tmp_path, doc)
    assert summary["status"] == "complete" and summary["cluster"].startswith("local · kafka 4.1.0 × 3"), summary
    v = summary["variants"]["transactional"]
    held = [f["effect"][b]["kafka_requests"]["held"] for f in faults for b in f.get("effect", {})]
    assert faults and all(f["outcome"] == "healed" for f in faults) and max(held) > 0, faults
    [run_dir] = list(run_dirs(tmp_path / "reports"))
    assert "Timed out EndTxnRequest" in (run_dir / "logs" / "producer-transactional.log").read_text()
    # What Kafka 4.1 does with a late EndTxn(commit) varies from run to run: landing in a later transaction
    # the client is aborting, it commits it (aborted reads; CI's run of 2026-11-26 saw 100). The harness must
    # say exactly that and nothing else, and the exit code must follow the verdict.
    assert (v["duplicates"], v["lost"], v["lost_committed"], v["unexpected"]) == (0, 0, 0, 0), v
    assert accounting(v)
    failed = {e["metric"] for e in v["expectations"] if not e["passed"]}
    assert failed <= {"aborted_reads", "torn_transactions"}, v["expectations"]
    assert r.returncode == (1 if failed else 0), r.stdout[-3000:] + r.stderr[-3000:]
    for fatal in v.get("instances_replaced", {}):
        assert any(fatal in w for w in summary["warnings"])
    if v["aborted_reads"]:
        # each one is in a transaction the client aborted and whose abort the coordinator refused, because
        # the late commit had already committed it
        vt = run_dir / "transactional"
        txns = set(pq.read_table(vt / "anomalies" / "aborted_reads.parquet").column("txn").to_pylist())
        book = pq.read_table(vt / "transactions.parquet").to_pylist()
        assert {(t["outcome"], t["cause"], t["error"]) for t in book if t["txn"] in txns} == {
            ("aborted", "planned", "INVALID_TXN_STATE")}, [t for t in book if t["txn"] in txns]
        brokers = "".join(server_log(run_dir, b) for b in range(3))
        assert "state is COMPLETE_COMMIT, but received transaction marker result to send: ABORT" in brokers


@pytest.mark.nightly  # a known-bug reproduction, minutes long
def test_a_stray_transactional_produce_hangs_the_partition_only_without_verification(tmp_path):
    # The shipped pattern over 6 s per variant instead of 10: the stray Produce at 3 s.
    doc = shipped("known-bugs/hanging-transaction", workload={"messages": 12000, "rate": 2000,
                                                              "transaction.size": 100, "abort_ratio": 0.5})
    doc["faults"][0]["at"] = 3
    r, summary, faults = run(tmp_path, doc)
    ok(r, summary)  # the expectations held: values unseen with verification off, none with it on
    off, on = summary["variants"]["verification-off"], summary["variants"]["verification-on"]
    assert off["broker_config"] == {"transaction.partition.verification.enable": "false"}
    [run_dir] = list(run_dirs(tmp_path / "reports"))
    for broker in range(3):  # the variant's setting reached every broker, and the next variant's too
        log = (run_dir / "logs" / f"broker-{broker}.log").read_text()
        changes = log.count("Reconfigure transaction.partition.verification.enable from")
        assert "Reconfigure transaction.partition.verification.enable from true to false" in log and changes == 2
    effect = {f["variant"]: next(iter(f["effect"].values())) for f in faults}
    assert all(f["outcome"] == "healed" for f in faults), faults
    # Without verification the leader wrote the stray batch, and the transaction it opened never ended: the
    # last stable offset stayed at its offset, and what the workload wrote after it was unseen.
    assert effect["verification-off"]["answers"] == ["NONE"], effect
    assert off["lso_stalled"]["0"][0] == effect["verification-off"]["offset"], (off, effect)
    assert off["lso_stall_s"] >= 15 and off["unseen"] > 0, off
    # With it the leader refused the batch (after retriable answers, at times: NOT_ENOUGH_REPLICAS right after the abort).
    *retried, final = effect["verification-on"]["answers"]
    assert final == "INVALID_TXN_STATE" and set(retried) <= {"NOT_ENOUGH_REPLICAS"}, effect
    assert on["lso_stall_s"] == 0.0 and "lso_stalled" not in on and on["unseen"] == 0, on
    for v in (off, on):  # the stray values were never read, and the workload's transactions kept their promises
        assert (v["duplicates"], v["lost"], v["unexpected"]) == (0, 0, 0), v
        assert (v["aborted_reads"], v["lost_committed"], v["torn_transactions"]) == (0, 0, 0), v
        assert accounting(v)
