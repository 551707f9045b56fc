"""The workload experiments on real Apache Kafka (3 local KRaft nodes, KAFKA_HOME): producer restarts,
transactions under faults and consumer crashes, each at a size that keeps this tier within CI's budget,
asserting what each experiment's comments promise. Transactions are larger than shipped: on Kafka 4.1.0 here a
transaction costs ~0.2 s whatever its size (the zombie experiment's 400 took 84 s for a nominal 10 s). (Apart from test_experiments.py so that two test workers
share the real-Kafka runs evenly.)"""

import pytest

from tests.integration.test_quickstart import accounting
from tests.kafka.test_experiments import ok, run, shipped


def test_producer_restarts_duplicate_even_with_idempotence_but_not_in_transactions(tmp_path):
    doc = shipped("producer-restart", topic={"partitions": 3, "replication_factor": 3},
                  workload={"messages": 50000, "rate": 10000, "transaction.size": 1000})
    r, summary, faults = run(tmp_path, doc)
    ok(r, summary)
    v = summary["variants"]
    assert v["idempotence-on"]["duplicates"] > 0, v["idempotence-on"]  # the guarantee is per producer session
    assert v["transactional"]["duplicates"] == 0, v["transactional"]
    for name, x in v.items():
        assert x["lost"] == 0 and x["unexpected"] == 0 and accounting(x), (name, x)
    assert any(f["kind"] == "producer-restart" and f["outcome"] == "healed" for f in faults)


def test_transactions_under_faults_read_each_committed_value_once(tmp_path):
    doc = shipped("transactions", topic={"partitions": 3, "replication_factor": 3},
                  workload={"messages": 30000, "rate": 6000, "transaction.size": 500, "abort_ratio": 0.2},
                  producer={"acks": "all", "linger.ms": 5, "request.timeout.ms": 3000, "socket.timeout.ms": 3000})
    r, summary, faults = run(tmp_path, doc)
    ok(r, summary)
    t = summary["variants"]["transactional"]
    for key in ("duplicates", "aborted_reads", "lost_committed", "torn_transactions", "lost", "unexpected"):
        assert t[key] == 0, (key, t)
    assert t["transactions"]["aborted"] > 0 and t["transactions"]["committed"] > 0, t["transactions"]
    assert {f["kind"] for f in faults if f["outcome"] == "healed"} == {"lost-acks", "reset-connections",
                                                                          "broker-pause"}


@pytest.mark.nightly  # three consumer groups on Kafka: minutes
def test_consumer_crashes_reprocess_or_skip_by_commit_strategy(tmp_path):
    # Each kill must land while members are mid-batch. After a kill nobody processes until the group has expelled
    # the dead member (session timeout 6 s) and rebalanced, so kills 4 s apart mostly landed in that stall (a CI run
    # saw commit-before skip nothing and commit-after reprocess 29): kills 8 s apart, from 5 s (the group formed),
    # over about 20 s of processing a member (4 ms a record, half the shipped records).
    doc = shipped("consumer-crash", topic={"partitions": 6, "replication_factor": 3},
                  workload={"messages": 15000, "rate": 15000}, fault_window=24,
                  consumer={**shipped("consumer-crash")["consumer"], "processing_ms": 4.0},
                  faults=[{"kind": "consumer-kill", "every": 8.0, "jitter": 1.0, "start": 5.0, "duration": 1.0}])
    # auto-commit is left out: its comment promises nothing ("either can happen"), and each variant costs a minute
    doc["variants"] = [v for v in doc["variants"] if v["name"] != "auto-commit"]
    r, summary, faults = run(tmp_path, doc)
    ok(r, summary)
    v = summary["variants"]
    assert v["commit-after"]["reprocessed"] > 0 and v["commit-after"]["skipped"] == 0, v["commit-after"]
    assert v["commit-before"]["skipped"] > 0, v["commit-before"]
    assert (v["idempotent-sink"]["reprocessed"], v["idempotent-sink"]["unconsumed"],
            v["idempotent-sink"]["skipped"]) == (0, 0, 0), v["idempotent-sink"]
    assert any(f["kind"] == "consumer-kill" and f["outcome"] == "healed" for f in faults)
