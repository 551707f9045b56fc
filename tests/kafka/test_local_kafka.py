"""Real Apache Kafka (KAFKA_HOME, 3 KRaft nodes as local processes) through the CLI: failover under
leader kills with the fault timeline held, and the partition fault where Kafka loses acknowledged writes."""

import json
import subprocess
import sys
from pathlib import Path

import yaml

from harness.cluster.toxiproxy import find_toxiproxy_server
from tests.integration.test_quickstart import run_dirs
from tests.journal import journal_problems

ROOT = Path(__file__).resolve().parents[2]
LOCAL = {"backend": "local", "broker": "kafka", "brokers": 3}


def run(tmp_path, name, **over):
    doc = yaml.safe_load((ROOT / "experiments" / f"{name}.yaml").read_text())
    doc.update(**{"cluster": LOCAL, **over})
    exp = tmp_path / f"{name}.yaml"
    exp.write_text(yaml.safe_dump(doc))
    out = tmp_path / "reports"
    r = subprocess.run([sys.executable, "-m", "harness", "run", str(exp), "--out", str(out)], cwd=ROOT,
                       capture_output=True, text=True, timeout=1200)
    [run_dir] = list(run_dirs(out))
    faults = [json.loads(line) for line in (run_dir / "faults.jsonl").read_text().splitlines()]
    return r, run_dir, json.loads((run_dir / "summary.json").read_text()), faults


def test_failover_keeps_idempotence_clean_and_its_journal_tells_when_each_fault_took_effect(tmp_path):
    # Behind the real Toxiproxy when there is one (what the Compose path uses), else behind the embedded proxy,
    # which every other test of this tier uses.
    proxy = "embedded" if find_toxiproxy_server() is None else "toxiproxy"
    r, run_dir, summary, faults = run(tmp_path, "broker-failover", cluster={**LOCAL, "proxy": proxy})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert summary["status"] == "complete" and summary["cluster"].startswith("local · kafka ")
    assert summary["cluster"].endswith("proxy: embedded" if proxy == "embedded" else ""), summary["cluster"]
    assert proxy == "embedded" or " · proxy: toxiproxy-server 2." in summary["cluster"]
    on, off = summary["variants"]["idempotence-on"], summary["variants"]["idempotence-off"]
    assert on["duplicates"] == 0 and on["lost"] == 0 and off["lost"] == 0, (on, off)
    assert all(f["outcome"] == "healed" for f in faults), faults
    # How late each fault took effect is the machine's (bench/ measures it); that the journal says so is the code's.
    assert journal_problems(faults, summary) == []
    assert [f for f in faults if f["kind"] == "broker-kill"][0]["heal_s"] > 1  # a real JVM start, on its own thread
    assert all((run_dir / "logs" / f"kafka-{i}" / "server.log").exists() for i in range(3))
    assert not (run_dir / "kafka-data").exists()


def test_an_isolated_leader_loses_acks_1_writes_and_no_acks_all_write(tmp_path):
    r, run_dir, summary, faults = run(tmp_path, "leader-isolation", workload={"messages": 100000, "rate": 4000})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    one, all_ = summary["variants"]["acks-1"], summary["variants"]["acks-all"]
    # Acknowledged by the isolated leader, truncated when it rejoined: lost, under that one name (their offsets
    # now hold new records, which is not counted again), after a read that proved it reached every end.
    assert one["lost"] > 0 and one["inconsistent_offsets"] == 0 and one["unseen"] == 0, one
    assert one["read"]["complete"] and one["read"]["start"] == [0] * len(one["read"]["end"]), one["read"]
    assert all_["lost"] == 0 and all_["duplicates"] == 0, all_
    assert {f["kind"] for f in faults} == {"isolate"} and all(f["outcome"] == "healed" for f in faults)
    # The same folder with acks-all's last 25 acknowledged records of partition 0 removed: a truncated tail fails.
    cut = remove_tail(run_dir, "acks-all", partition=0, count=25)
    assert cut > 0  # acknowledged values among the 25 records (no duplicates here: each is one value)
    a = subprocess.run([sys.executable, "-m", "harness", "analyze", str(run_dir)], cwd=ROOT, capture_output=True,
                       text=True, timeout=600)
    assert a.returncode == 1, a.stdout[-3000:] + a.stderr[-3000:]
    assert f"acks-all: lost == 0 (fatal) (actual {cut})" in a.stdout


def remove_tail(run_dir: Path, variant: str, partition: int, count: int) -> int:
    """Remove the last `count` records of one partition from a stored final read (log.parquet/) and return how
    many of them carried an acknowledged value."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    acked = pq.read_table(run_dir / variant / "acks.parquet", filters=[("partition", "=", partition),
                                                                        ("outcome", "=", "acked")])
    acked_values = set(acked.column("value").to_pylist())
    for path in (run_dir / variant / "log.parquet").glob("*.parquet"):
        table = pq.read_table(path).sort_by("offset")
        mine = pc.equal(table.column("partition"), partition)
        if not pc.any(mine).as_py():
            continue
        kept, gone = table.filter(pc.invert(mine)), table.filter(mine)
        gone, tail = gone.slice(0, gone.num_rows - count), gone.slice(gone.num_rows - count)
        pq.write_table(pa_concat(kept, gone), path)
        return sum(1 for v in tail.column("value").to_pylist() if v in acked_values)
    return 0


def pa_concat(*tables):
    import pyarrow as pa

    return pa.concat_tables(tables).sort_by([("partition", "ascending"), ("offset", "ascending")])
