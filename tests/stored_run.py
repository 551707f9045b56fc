"""A stored run folder written by hand (no broker, no Spark): two variants, anomaly tables, faults."""

import json
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa

from harness.analysis import metrics
from harness.analysis.anomalies import TABLES
from harness.runfolder import RunFolder
from harness.summary import build, variant_entry
from harness.verdict import Rule

T0 = 1_790_000_000  # epoch seconds of the fixture's first record


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="milliseconds")


def counts(duplicates, runs, max_jb, lost=0):
    return {**{k: 0 for k in metrics.KEYS}, "sent": 1000, "acked": 1000, "received": 1000 + duplicates,
            "unique": 1000, "duplicates": duplicates, "jump_back_runs": runs, "max_jump_back": max_jb, "lost": lost}


def table(name, rows):
    return pa.Table.from_pylist(rows, schema=pa.schema(TABLES[name]))


def make_run(out: Path, name="fixture", producer_value="harness", n_runs=3, seconds=10,
             run_id="20260101T000000Z-fixture-aaaaaa", off_lost=0, off_allow=()):
    folder = RunFolder(out / run_id)
    folder.logs.mkdir(parents=True)
    faults, variants = [], {}
    for variant, offset in (("off", 0), ("on", 100)):
        folder.variant_dir(variant).mkdir()
        jumps = [] if variant == "on" else [
            {"partition": k % 3, "first_offset": 100 * k, "last_offset": 100 * k + 9, "first_value": 90 * k,
             "highest_before": 90 * k + 9 + k, "size": 9 + k, "length": 10, "kind": "duplicate"} for k in range(n_runs)]
        lost = [{"partition": 0, "value": v, "offset": v} for v in range(off_lost if variant == "off" else 0)]
        tables = {t: table(t, []) for t in TABLES}
        tables["jump_back_runs"] = table("jump_back_runs", jumps)
        tables["lost"] = table("lost", lost)
        tables["series"] = table("series", [{"second": T0 + offset + s, "records": 100_000, "duplicates": s % 3,
                                             "jump_backs": s % 2, "acks": 0 if s == 4 else 100_000}
                                            for s in range(seconds)])
        m = counts(37, n_runs, 9 + n_runs - 1, off_lost) if variant == "off" else counts(0, 0, 0)
        tables["partitions"] = table("partitions", [{"partition": 0, **m}])
        folder.write_tables(variant, tables)
        for k, at in enumerate((1.0, 4.0, 7.5)):
            faults.append({"variant": variant, "id": k, "kind": "lost-acks" if k < 2 else "broker-pause",
                           "target": "all", "planned_at": at, "planned_duration": 0.3, "params": {},
                           "outcome": "healed", "applied_at": iso(T0 + offset + at),
                           "healed_at": iso(T0 + offset + at + 0.3)})
        allow = list(off_allow) if variant == "off" else []
        rules = {"duplicates": Rule("==", 0)} if variant == "on" else {}
        variants[variant] = variant_entry(m, rules, allow)
    folder.append_faults(faults)
    spec = {"name": name, "producer": {"linger.ms": 5},
            "variants": [{"name": "off", "producer": {"enable.idempotence": False, "client.id": producer_value},
                          "allow": list(off_allow)},
                         {"name": "on", "producer": {"enable.idempotence": True}}],
            "expectations": {"on": {"duplicates": "== 0"}}}
    folder.write_spec(spec)
    summary = build(run_id, name, "complete", variants,
                    {"cluster": "local · tansu", "seed": 4, "started_at": iso(T0 - 5), "ended_at": iso(T0 + 200),
                     "reason": ""})
    folder.write_summary(summary)
    return folder, summary, faults


def rewrite_summary(folder: RunFolder, summary: dict) -> None:
    (folder.path / "summary.json").write_text(json.dumps(summary))


# -- a run folder `kafka-chaos analyze` can analyse (the damaged-folder corpus starts from it) ------------

LOG_SCHEMA = pa.schema([("partition", pa.int32()), ("offset", pa.int64()), ("value", pa.int64()),
                        ("timestamp", pa.timestamp("ms", tz="UTC"))])


def acks_rows(partitions=3, per_partition=20):
    """Every send acked at the offset equal to its value: a run without faults."""
    return [{"partition": p, "value": v, "outcome": "acked", "offset": v, "error": None,
             "sent_at": datetime.fromtimestamp(T0 + v / 100, timezone.utc), "latency_ms": 2.5,
             "session": 0, "txn": None}
            for v in range(per_partition) for p in range(partitions)]


def log_rows(partition, per_partition=20):
    return [{"partition": partition, "offset": v, "value": v,
             "timestamp": datetime.fromtimestamp(T0 + v / 100, timezone.utc)} for v in range(per_partition)]


def acks_table(partitions=3, per_partition=20) -> pa.Table:
    """acks_rows() as a table, built column by column (fast for large runs)."""
    import numpy as np

    from harness.formats import ACKS_SCHEMA

    value = np.repeat(np.arange(per_partition, dtype=np.int64), partitions)
    n = len(value)
    return pa.table({"partition": pa.array(np.tile(np.arange(partitions, dtype=np.int32), per_partition)),
                     "value": value, "outcome": pa.array(["acked"] * n), "offset": value,
                     "error": pa.nulls(n, pa.string()), "sent_at": pa.array(T0 * 1000 + value * 10, pa.int64()),
                     "latency_ms": pa.array(np.full(n, 2.5)), "session": pa.array(np.zeros(n, np.int32)),
                     "txn": pa.nulls(n, pa.int64())},
                    schema=ACKS_SCHEMA.set(5, pa.field("sent_at", pa.int64()))).cast(ACKS_SCHEMA)


def log_table(partition, per_partition=20) -> pa.Table:
    """log_rows() as a table."""
    import numpy as np

    offset = np.arange(per_partition, dtype=np.int64)
    return pa.table({"partition": pa.array(np.full(per_partition, partition, dtype=np.int32)), "offset": offset,
                     "value": offset, "timestamp": pa.array(T0 * 1000 + offset * 10, pa.int64())},
                    schema=LOG_SCHEMA.set(3, pa.field("timestamp", pa.int64()))).cast(LOG_SCHEMA)


def make_analysable_run(out: Path, run_id="20260101T000000Z-stored-bbbbbb", partitions=3, per_partition=20):
    """Two variants (off, on), `partitions` partitions of `per_partition` values each, nothing lost:
    analysed, it passes. Written as the harness writes it (acks.parquet, log.parquet/ with _SUCCESS,
    read.json of a complete read, spec.yaml, summary.json, faults.jsonl)."""
    import pyarrow.parquet as pq

    folder = RunFolder(out / run_id)
    folder.logs.mkdir(parents=True)
    variants = {}
    for variant in ("off", "on"):
        folder.variant_dir(variant).mkdir()
        pq.write_table(acks_table(partitions, per_partition), folder.acks_path(variant))
        log = folder.log_path(variant)
        log.mkdir()
        for p in range(partitions):
            pq.write_table(log_table(p, per_partition), log / f"part-{p:05d}.parquet")
        (log / "_SUCCESS").write_text("")
        folder.write_read(variant, {"isolation": "read_committed", "complete": True, "reads": 1,
                                    "start": [0] * partitions, "end": [per_partition] * partitions})
        n = partitions * per_partition
        variants[variant] = variant_entry({**{k: 0 for k in metrics.KEYS}, "sent": n, "acked": n, "received": n,
                                           "unique": n, "produce_seconds": 1.0}, {}, [])
    folder.write_spec({"name": "stored", "seed": 3, "topic": {"partitions": partitions},
                       "workload": {"messages": partitions * per_partition, "rate": 1000},
                       "variants": [{"name": "off", "producer": {"enable.idempotence": False}},
                                    {"name": "on", "producer": {"enable.idempotence": True}}],
                       "faults": [{"kind": "lost-acks", "at": 0.01, "duration": 0.02}],
                       "expectations": {"on": {"duplicates": "== 0"}}})
    folder.append_faults([{"variant": v, "id": 0, "kind": "lost-acks", "target": "all", "planned_at": 0.01,
                           "planned_duration": 0.02, "params": {"cut_after_ms": 100}, "outcome": "healed",
                           "applied_at": iso(T0 + 0.01), "healed_at": iso(T0 + 0.03)} for v in ("off", "on")])
    folder.write_summary(build(run_id, "stored", "complete", variants,
                               {"seed": 3, "cluster": "local · tansu", "started_at": iso(T0), "ended_at": iso(T0 + 2),
                                "reason": ""}))
    return folder
