"""Transactions end to end on the embedded broker (Tansu), through the CLI.

Tansu takes the transactions API (init, commit, abort, fencing) but serves the records of aborted
transactions to read_committed consumers. The harness must say so: the run fails (exit 1) with
aborted_reads named, every committed value is still read once, and the aborted values it lists are
exactly those of transactions aborted on purpose. (The same small experiment passes on Apache Kafka:
tests/kafka/test_transactions.py.) Should Tansu learn to hide aborted records, this test fails and
says where.
"""

import pandas as pd

from tests.integration.test_quickstart import run_experiment

SMALL = {
    "name": "small-transactions",
    "seed": 3,
    "topic": {"partitions": 3},
    "workload": {"messages": 6000, "rate": 3000, "transaction.size": 50, "abort_ratio": 0.3},
    "producer": {"acks": "all", "linger.ms": 5},
    "variants": [{"name": "transactional", "producer": {"transactional.id": "kc-small"}}],
}


def test_aborted_records_served_under_read_committed_fail_the_run_by_name(tmp_path):
    result, run_dir, summary = run_experiment(tmp_path, SMALL)
    v = summary["variants"]["transactional"]
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    assert "FAIL  transactional: aborted_reads == 0 (fatal)" in result.stdout
    txns = pd.read_parquet(run_dir / "transactional" / "transactions.parquet")
    planned = txns[txns.cause == "planned"]
    assert v["transactions"] == {"committed": len(txns) - len(planned), "aborted": len(planned), "unknown": 0}
    acks = pd.read_parquet(run_dir / "transactional" / "acks.parquet")
    aborted_values = acks[acks.txn.isin(planned.txn)]
    reads = pd.read_parquet(run_dir / "transactional" / "anomalies" / "aborted_reads.parquet")
    # Every record of every aborted transaction was written (acked) before the abort, and Tansu serves each.
    assert len(aborted_values) == (aborted_values.outcome == "acked").sum() == v["aborted_reads"] == len(reads)
    assert set(reads.txn) == set(planned.txn)
    # Committed transactions are whole and read once: only the aborted reads are wrong.
    for key in ("lost_committed", "torn_transactions", "zombie_writes_visible", "duplicates", "lost",
                "inconsistent_offsets", "unexpected"):
        assert v[key] == 0, (key, v)
    assert v["acked"] == (txns.outcome == "committed").sum() * 50
