"""Anomaly checks on Spark: DataFrames in, DataFrames out, the definitions in kernel.py.

    findings = checks.analyze(log, acks)        # one pass over the data (or analyze_files for a stored run)
    checks.jump_back_runs(findings), checks.duplicates(findings), checks.lost(findings),
    checks.gaps(findings), checks.partitions(findings), checks.series(findings)
    checks.summarize(findings) -> dict            # the summary table's numbers

Inputs: log (partition int, offset long, value long, timestamp), the topic as read back;
acks (partition int, value long, outcome string, offset long), the delivery log.

How it runs: every Spark task streams one file through the numpy kernel (mapInArrow),
with no shuffle of records: the final read writes one file per topic partition, in
offset order. Each task emits small findings per topic partition (counts, jump-back
runs, duplicate copies, a bitmap of the values it read, or the outcome of every value
sent); a second, small step (applyInArrow) joins bitmaps and outcomes per partition. Input laid out
any other way (a partition split over files, or out of offset order) is detected and
re-read through a shuffle sorted by (partition, offset), so results never depend on
the layout.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from . import kernel

SCAN_SCHEMA = (
    "kind string, partition int, fragment long, ordered boolean, received long, repeats long, reorders long, "
    "bits binary, beyond long, first_offset long, last_offset long, first_value long, highest_before long, "
    "size long, length long, run_kind string, value long, offset long, second long, records long, "
    "duplicates long, jump_backs long"
)
_SCAN = pa.schema([
    ("kind", pa.string()), ("partition", pa.int32()), ("fragment", pa.int64()), ("ordered", pa.bool_()),
    ("received", pa.int64()), ("repeats", pa.int64()), ("reorders", pa.int64()), ("bits", pa.binary()),
    ("beyond", pa.int64()), ("first_offset", pa.int64()), ("last_offset", pa.int64()), ("first_value", pa.int64()),
    ("highest_before", pa.int64()), ("size", pa.int64()), ("length", pa.int64()), ("run_kind", pa.string()),
    ("value", pa.int64()), ("offset", pa.int64()), ("second", pa.int64()), ("records", pa.int64()),
    ("duplicates", pa.int64()), ("jump_backs", pa.int64()),
])
PARTITION_SCHEMA = (
    "kind string, partition int, sent long, acked long, rejected long, unknown long, received long, unique long, "
    "duplicates long, jump_back_runs long, max_jump_back long, lost long, missing long, received_unacked long, "
    "reorders long, unexpected long, value long, first_value long, last_value long, values long, gap_kind string"
)
METRICS = ("sent", "acked", "rejected", "unknown", "received", "unique", "duplicates", "jump_back_runs",
           "max_jump_back", "lost", "missing", "received_unacked", "reorders", "unexpected")


def _rows(kind: str, partition: int, fragment: int, rows: list[dict]) -> pa.RecordBatch:
    cols = {name: [r.get(name) for r in rows] for name in _SCAN.names}
    cols["kind"], cols["partition"], cols["fragment"] = [kind] * len(rows), [partition] * len(rows), [fragment] * len(rows)
    return pa.record_batch([pa.array(cols[f.name], f.type) for f in _SCAN], schema=_SCAN)


class Scanner:
    """One task's share of the data: log and acks batches in, findings batches out."""

    def __init__(self, fragment: int):
        self.fragment = fragment
        self.logs: dict[int, kernel.PartitionLog] = {}
        self.acks: dict[int, kernel.PartitionAcks] = {}

    @staticmethod
    def _by_partition(batch):
        parts = batch.column("partition").to_numpy(zero_copy_only=False)
        if (parts == parts[0]).all():  # the usual case: a file holds one topic partition
            return [(int(parts[0]), batch)]
        return [(int(p), batch.filter(pa.array(parts == p))) for p in np.unique(parts)]  # keeps row order

    def feed_log(self, batch) -> None:
        if batch.num_rows == 0:
            return
        for p, rows in self._by_partition(batch):
            ts = None
            if "timestamp" in rows.schema.names and rows.column("timestamp").null_count == 0:
                ts = rows.column("timestamp").cast(pa.timestamp("ms")).cast(pa.int64()).to_numpy(zero_copy_only=False)
            self.logs.setdefault(p, kernel.PartitionLog(p)).feed(
                rows.column("offset").to_numpy(zero_copy_only=False), rows.column("value").to_numpy(zero_copy_only=False), ts)

    def feed_acks(self, batch) -> None:
        if batch.num_rows == 0:
            return
        for p, rows in self._by_partition(batch):
            codes = np.zeros(rows.num_rows, dtype=np.int8)
            for name, code in kernel.OUTCOME_CODES.items():  # Arrow compute: no Python strings
                codes[pc.fill_null(pc.equal(rows.column("outcome"), name), False).to_numpy(zero_copy_only=False)] = code
            self.acks.setdefault(p, kernel.PartitionAcks(p)).feed(rows.column("value").to_numpy(zero_copy_only=False), codes)

    def findings(self):
        frag = self.fragment
        for p, st in self.logs.items():
            st.finish()
            present = st.seen.present(len(st.seen.array))
            yield _rows("log", p, frag, [{
                "ordered": st.ordered, "received": st.received, "repeats": st.repeats, "reorders": st.reorders,
                "bits": np.packbits(present).tobytes(), "size": len(present), "beyond": len(st.seen.other)}])
            runs = st.runs_with_kind()
            if runs:
                keys = ("first_offset", "last_offset", "first_value", "highest_before", "size", "length", "run_kind")
                yield _rows("run", p, frag, [dict(zip(keys, r)) for r in runs])
            if st.duplicates:
                yield _rows("duplicate", p, frag, [{"value": v, "offset": o, "first_offset": f} for v, o, f in st.duplicates])
            if st.seconds:
                yield _rows("second", p, frag, [{"second": sec, "records": r, "duplicates": d, "jump_backs": j}
                                                for sec, (r, d, j) in st.seconds.items()])
        for p, st in self.acks.items():
            codes = st.trimmed()
            yield _rows("acks", p, frag, [{"bits": codes.tobytes(), "size": len(codes)}])


def _task_id() -> int:
    from pyspark import TaskContext

    return TaskContext.get().taskAttemptId()


def _scan(batches):
    """mapInArrow body over DataFrame rows tagged with their source (log or acks)."""
    scanner = Scanner(_task_id())
    for batch in batches:
        if batch.num_rows:
            source = batch.column("source")[0].as_py()
            (scanner.feed_acks if source == "acks" else scanner.feed_log)(batch)
    yield from scanner.findings()


def _scan_files(batches):
    """mapInArrow body over (path, source) rows: read each Parquet file right here, in the worker."""
    import pyarrow.parquet as pq

    scanner = Scanner(_task_id())
    for batch in batches:
        for path, source in zip(batch.column("path").to_pylist(), batch.column("source").to_pylist()):
            columns = ["partition", "value", "outcome"] if source == "acks" else None
            feed = scanner.feed_acks if source == "acks" else scanner.feed_log
            for rows in pq.ParquetFile(path).iter_batches(batch_size=1 << 20, columns=columns):
                feed(rows)
    yield from scanner.findings()


_PARTITION = pa.schema([(c.split()[0], {"string": pa.string(), "int": pa.int32(), "long": pa.int64()}[c.split()[1]])
                        for c in PARTITION_SCHEMA.split(", ")])


def _combine(table: pa.Table) -> pa.Table:
    """applyInArrow body, one topic partition: its log, acks and run rows -> metrics, lost values, gaps."""
    rows = table.to_pylist()
    p = rows[0]["partition"]
    log = [r for r in rows if r["kind"] == "log"]
    runs = [r for r in rows if r["kind"] == "run"]
    if log:
        r = log[0]
        present = np.unpackbits(np.frombuffer(r["bits"], dtype=np.uint8), count=r["size"]).astype(bool)
        received, repeats, reorders, beyond = r["received"], r["repeats"], r["reorders"], r["beyond"]
    else:
        present, received, repeats, reorders, beyond = np.zeros(0, bool), 0, 0, 0, 0
    acks = [np.frombuffer(r["bits"], dtype=np.int8) for r in rows if r["kind"] == "acks"]
    codes = np.zeros(max((len(c) for c in acks), default=0), dtype=np.int8)
    for c in acks:  # one per acks file holding this partition; their values are disjoint
        np.maximum(codes[: len(c)], c, out=codes[: len(c)])
    n = len(codes)
    metrics, lost_values, gaps = kernel.combine(p, present[:n], int(present[n:].sum()) + beyond, codes)
    out = [{"kind": "partition", "partition": p, **metrics, "received": received, "unique": received - repeats,
            "duplicates": repeats, "reorders": reorders, "jump_back_runs": len(runs),
            "max_jump_back": max((r["size"] for r in runs), default=0)}]
    out += [{"kind": "lost", "partition": p, "value": v} for v in lost_values]
    out += [{"kind": "gap", "partition": p, "first_value": f, "last_value": last, "values": k, "lost": lost,
             "gap_kind": kind} for f, last, k, lost, kind in gaps]
    return pa.Table.from_pylist(out, schema=_PARTITION)


@dataclass
class Findings:
    scan: DataFrame  # kinds log, acks, run, duplicate, second
    per_partition: DataFrame  # kinds partition, lost, gap

    def unpersist(self) -> None:
        self.scan.unpersist()
        self.per_partition.unpersist()


def _tagged(log: DataFrame, acks: DataFrame) -> DataFrame:
    ts = F.col("timestamp").cast("timestamp") if "timestamp" in log.columns else F.lit(None).cast("timestamp")
    return log.select(F.lit("log").alias("source"), F.col("partition").cast("int"), F.col("offset").cast("long"),
                      F.col("value").cast("long"), ts.alias("timestamp"), F.lit(None).cast("string").alias("outcome")
                      ).unionByName(
        acks.select(F.lit("acks").alias("source"), F.col("partition").cast("int"),
                    F.col("offset").cast("long"), F.col("value").cast("long"),
                    F.lit(None).cast("timestamp").alias("timestamp"), F.col("outcome")))


def _needs_sorting(scan: DataFrame) -> bool:
    logs = scan.where("kind = 'log'").groupBy("partition").agg(
        F.count("*").alias("fragments"), F.min(F.col("ordered").cast("int")).alias("ordered")).collect()
    return any(r["fragments"] > 1 or r["ordered"] == 0 for r in logs)


def _join(scan: DataFrame) -> Findings:
    joined = (scan.where("kind in ('log', 'acks', 'run')")
              .groupBy("partition").applyInArrow(_combine, PARTITION_SCHEMA).cache())
    return Findings(scan, joined)


def analyze(log: DataFrame, acks: DataFrame) -> Findings:
    """One pass over log and acks DataFrames; the result is cached (it is small: findings, not records)."""
    scan = _tagged(log, acks).mapInArrow(_scan, SCAN_SCHEMA).cache()
    if _needs_sorting(scan):
        scan.unpersist()
        n = max(1, int(log.sparkSession.conf.get("spark.sql.shuffle.partitions")))
        ordered_log = log.repartition(n, "partition").sortWithinPartitions("partition", "offset")
        scan = _tagged(ordered_log, acks).mapInArrow(_scan, SCAN_SCHEMA).cache()
    return _join(scan)


def analyze_files(spark, log_files: list[str], acks_files: list[str]) -> Findings:
    """The same, for a stored run: one task per Parquet file, each read by pyarrow in its Python worker.

    No record crosses between the JVM and Python; only findings do. Files laid out any
    other way than one topic partition per log file, in offset order, go through analyze().
    """
    tasks = [(p, "log") for p in log_files] + [(p, "acks") for p in acks_files]
    paths = spark.sparkContext.parallelize(tasks, len(tasks)).toDF("path string, source string")
    scan = paths.mapInArrow(_scan_files, SCAN_SCHEMA).cache()
    if _needs_sorting(scan):
        scan.unpersist()
        return analyze(spark.read.parquet(*log_files), spark.read.parquet(*acks_files))
    return _join(scan)


def jump_back_runs(f: Findings) -> DataFrame:
    return f.scan.where("kind = 'run'").select(
        "partition", "first_offset", "last_offset", "first_value", "highest_before", "size", "length",
        F.col("run_kind").alias("kind"))


def duplicates(f: Findings) -> DataFrame:
    """One row per extra copy: the value, where this copy is, and where its first copy is."""
    return f.scan.where("kind = 'duplicate'").select("partition", "value", "offset", "first_offset")


def series(f: Findings) -> DataFrame:
    """Per second of record timestamp: records, duplicates and jump-backs read."""
    return (f.scan.where("kind = 'second'").groupBy("second")
            .agg(*(F.sum(c).alias(c) for c in ("records", "duplicates", "jump_backs"))).orderBy("second"))


def partitions(f: Findings) -> DataFrame:
    return f.per_partition.where("kind = 'partition'").select("partition", *METRICS).orderBy("partition")


def lost(f: Findings) -> DataFrame:
    return f.per_partition.where("kind = 'lost'").select("partition", "value")


def gaps(f: Findings) -> DataFrame:
    return f.per_partition.where("kind = 'gap'").select(
        "partition", "first_value", "last_value", "values", "lost", F.col("gap_kind").alias("kind"))


def summarize(f: Findings) -> dict[str, int]:
    row = partitions(f).agg(*(F.max(m) if m == "max_jump_back" else F.sum(m) for m in METRICS)).first()
    return {m: int(v or 0) for m, v in zip(METRICS, row)}
