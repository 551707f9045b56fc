"""`kafka-chaos evidence` on a stored run of real Apache Kafka (3 local KRaft nodes from KAFKA_HOME): a small run with
--keep-data keeps its brokers' log folders, a truncation is planted in one replica's log (its last batches cut, as
lose-unflushed cuts them), and the command prints each replica's records at the named offsets with the leader epochs
the final read saw and the sequences an idempotent producer gave the values, the truncated replica's offsets absent."""

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import yaml

from harness.cluster.segments import cut_unflushed
from tests.integration.test_interrupts import wait_for
from tests.integration.test_quickstart import processes_of, run_dirs

ROOT = Path(__file__).resolve().parents[2]

EXPERIMENT = {
    "name": "evidence-small",
    "seed": 46,
    "cluster": {"backend": "local", "broker": "kafka", "brokers": 3},
    "topic": {"partitions": 1, "replication_factor": 3, "config": {"min.insync.replicas": 2}},
    "workload": {"messages": 3000, "rate": 1500},
    # idempotent, one producer session, one partition: the value v is the v-th send, so its sequence is v
    "producer": {"acks": "all", "enable.idempotence": True, "linger.ms": 5},
    "variants": [{"name": "idempotent"}],
    "expectations": {"idempotent": {"duplicates": 0, "lost": 0}},
}


def kafka_chaos(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def test_evidence_prints_each_replica_s_records_with_epochs_and_sequences_and_the_planted_truncation(tmp_path):
    exp = tmp_path / "evidence-small.yaml"
    exp.write_text(yaml.safe_dump(EXPERIMENT))
    out = tmp_path / "reports"
    r = kafka_chaos("run", str(exp), "--out", str(out), "--keep-data")
    [run_dir] = list(run_dirs(out))
    wait_for(lambda: processes_of(run_dir) == [], timeout=30, what="every process of the run to exit")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    variant = summary["variants"]["idempotent"]
    assert summary["broker_data"]["why"] == "--keep-data" and summary["broker_data"]["bytes"] > 0
    assert "brokers' logs kept (--keep-data" in " ".join(r.stdout.split())
    end = variant["read"]["end"][0]
    assert end == 3000 and variant["lost"] == 0 and variant["duplicates"] == 0, variant
    topic = variant["topic"]

    # The planted truncation: broker 2's log loses its last 2 batches (the cluster is down; its files are kept).
    [cut] = cut_unflushed(run_dir / "kafka-data" / "node-2", topic, drop_batches=2)
    first_cut, last_cut = cut["first_offset"], cut["last_offset"]
    assert last_cut == end - 1 and cut["cut_records"] == end - first_cut
    first = first_cut - 3  # three offsets every replica holds, then the cut ones
    e = kafka_chaos("evidence", str(run_dir), "--partition", "0", "--offsets", f"{first}-{end - 1}", "--json",
                    timeout=300)
    assert e.returncode == 0, e.stdout[-3000:] + e.stderr[-3000:]
    view = json.loads(e.stdout)
    assert (view["variant"], view["topic"], view["partition"]) == ("idempotent", topic, 0)
    assert [r["broker"] for r in view["replicas"]] == [0, 1, 2]
    assert [r["log_end"] for r in view["replicas"]] == [end, end, first_cut]

    read = pq.read_table(run_dir / "idempotent" / "log.parquet").to_pylist()
    epoch_read = {row["offset"]: row["leader_epoch"] for row in read}
    acks = {row["value"]: row for row in pq.read_table(run_dir / "idempotent" / "acks.parquet").to_pylist()}
    producers = set()
    for at in view["at"]:
        offset = at["offset"]
        [value] = at["acked"]  # the one value the client was told is at this offset
        assert acks[value]["offset"] == offset and acks[value]["session"] == 0
        for rep in at["replicas"]:
            rec = rep["record"]
            if rep["broker"] == 2 and offset >= first_cut:
                assert rec is None, (offset, rec)  # the planted truncation
                continue
            assert rec["value"] == value, (offset, rep)
            assert rec["leader_epoch"] == epoch_read[offset], (offset, rec)  # as the final read saw it
            assert rec["sequence"] == value and rec["producer_id"] >= 0 and rec["producer_epoch"] >= 0, rec
            assert rec["transactional"] is False and rec["control"] is False
            assert rec["told"] == [{"outcome": "acked", "offset": offset, "error": None, "session": 0, "txn": None}]
            assert rec["batch"][0] <= offset <= rec["batch"][1]
            producers.add((rec["producer_id"], rec["producer_epoch"]))
    assert len(producers) == 1  # one idempotent producer wrote them all, on every replica

    table = kafka_chaos("evidence", str(run_dir), "--offsets", f"{first}-{first_cut}", timeout=300)
    assert table.returncode == 0, table.stdout[-3000:] + table.stderr[-3000:]
    assert f"offsets {first}-{first_cut}" in table.stdout and "absent from its log" in table.stdout
    assert "broker 2: read 00000000000000000000.log" in table.stdout and f"log end {first_cut:,}" in table.stdout
