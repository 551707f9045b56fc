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
    # batches of at most 50 records: the workload hands the client 1,024 sends at a time
    "producer": {"acks": "all", "enable.idempotence": True, "linger.ms": 5, "batch.num.messages": 50},
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
    assert last_cut == end - 1 and cut["cut_records"] == end - first_cut and 2 <= end - first_cut <= 100, cut
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


TRUNCATION = {
    "name": "evidence-truncation",
    "seed": 46,
    "cluster": {"backend": "local", "broker": "kafka", "brokers": 1},
    "topic": {"partitions": 1, "replication_factor": 1},
    "workload": {"messages": 6000, "rate": 2000},
    # acks=1 without idempotence: what the broker acknowledged and then lost is not sent again
    # (batches of at most 20 records: the workload hands the client 1,024 sends at a time)
    "producer": {"acks": "1", "enable.idempotence": False, "retries": 10000000, "linger.ms": 5,
                 "request.timeout.ms": 5000, "batch.num.messages": 20},
    "variants": [{"name": "acks-1"}],
    # the broker loses power at 1 s: its last 5 batches go, and it is back 1 s later
    "faults": [{"kind": "lose-unflushed", "at": 1.0, "downtime": 1.0, "target": {"broker": 0}, "drop_batches": 5}],
}


def test_a_failed_run_keeps_its_logs_and_evidence_shows_kafka_s_own_truncation(tmp_path):
    exp = tmp_path / "evidence-truncation.yaml"
    exp.write_text(yaml.safe_dump(TRUNCATION))
    out = tmp_path / "reports"
    r = kafka_chaos("run", str(exp), "--out", str(out))  # no --keep-data: the failed verdict keeps them
    [run_dir] = list(run_dirs(out))
    wait_for(lambda: processes_of(run_dir) == [], timeout=30, what="every process of the run to exit")
    summary = json.loads((run_dir / "summary.json").read_text())
    variant = summary["variants"]["acks-1"]
    assert r.returncode == 1 and variant["lost"] > 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert summary["broker_data"]["why"] == "the verdict is fail"
    said = " ".join(r.stdout.split())
    assert "acks-1: first lost at partition 0 offset " in said and f"kafka-chaos evidence {run_dir} " in said
    [fault] = [json.loads(line) for line in (run_dir / "faults.jsonl").read_text().splitlines()]
    [cut] = fault["effect"]["0"]["cut"]
    first, last = cut["first_offset"], cut["last_offset"]
    e = kafka_chaos("evidence", str(run_dir), "--offsets", f"{first - 1}-{last}", "--json", timeout=300)
    assert e.returncode == 0, e.stdout[-3000:] + e.stderr[-3000:]
    view = json.loads(e.stdout)
    [replica] = view["replicas"]
    assert replica["broker"] == 0 and replica["log_end"] == variant["read"]["end"][0]
    before, *cut_offsets = view["at"]
    old_epoch = before["replicas"][0]["record"]["leader_epoch"]
    lost = {row["value"] for row in pq.read_table(run_dir / "acks-1" / "anomalies" / "lost.parquet").to_pylist()}
    twice = 0
    for at in cut_offsets:
        rec = at["replicas"][0]["record"]
        # the offset was written again, after the restart, by a later leader epoch; both values were acknowledged
        # there, and the one the log lost is lost
        assert rec is not None and rec["leader_epoch"] > old_epoch, (at, old_epoch)
        assert rec["value"] in at["acked"] and {"outcome": "acked", "offset": at["offset"]}.items() <= \
            rec["told"][0].items(), at
        if len(at["acked"]) == 2:
            twice += 1
            [gone] = set(at["acked"]) - {rec["value"]}
            assert gone in lost, (at, gone)
        assert rec["producer_id"] == -1 and rec["sequence"] == -1  # not idempotent: no producer id, no sequence
    assert twice > 0
