"""The analysis on Spark: the anomaly definitions (analysis/anomalies.py) run once per topic partition, the
partitions of every variant of a run shared among as many Spark tasks as there are cores, in one Spark job.

    found = analyze_variants(spark, {"a": VariantFiles(log_files, acks_files), "b": ...})
    metrics, tables, timing = found["a"]
    metrics, tables, timing = analyze_variant(spark, log_files, acks_files)   # one variant

One job for the whole run rather than one a variant: a job costs ~0.2 s of its own (scheduling, the Python
workers' round trips), as much as checking a quickstart variant's 200,000 records.

For each of its partitions, a Spark task reads that partition's delivery log and records straight from
the Parquet files with pyarrow, in its Python worker (rowgroups.py), and streams them through
anomalies.check_partition. Only findings (counts and anomaly rows, never records) cross back to the
driver, so nothing is shuffled and nothing passes through the JVM. A partition split over files is
read in offset order, and one whose records are out of order is sorted in its task before it is
checked, so results never depend on layout.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..analysis import metrics
from ..analysis.anomalies import (TABLES, TXN_TABLES, DeliveryLogError, OutOfOrder, changed_offsets, check_partition,
                                  torn_transactions)
from ..analysis.timing import TIMING_TABLES, variant_timing
from ..formats import ACKS_SCHEMA, LOG_SCHEMA
from .rowgroups import DATA_ERROR, DataError, partitions_in, read_partition, read_transactions

ALL_TABLES = {**TABLES, **TIMING_TABLES, **TXN_TABLES}
ACKS_COLUMNS, LOG_COLUMNS = tuple(ACKS_SCHEMA.names), tuple(LOG_SCHEMA.names)


# What a task sends back: one row per chunk of one findings table, the chunk as an Arrow IPC stream.
# Each table keeps its own narrow columns: a single row type for all tables would be the union of their
# columns, mostly null yet allocated, and a per-send table (ack ticks of a slow run) then took ~500 bytes
# a row through the JVM and ran the driver out of heap.
FINDINGS = pa.schema([("variant", pa.string()), ("table_name", pa.string()), ("payload", pa.binary())])
FINDINGS_DDL = "variant string, table_name string, payload binary"
CHUNK_ROWS = 1 << 18  # rows per payload: a cell stays a few MB


def check_files(partition: int, log_files: list[str], acks_files: list[str], periods: list = (),
                txn_files: list[str] = (), sends: int | None = None, read: tuple[int, int] | None = None,
                other_files: list[str] = ()):
    """anomalies.check_partition over files; a log out of offset order is sorted first.
    sends: rows of the whole delivery log, an upper bound of any value it may hold;
    read: (log start, end) of this partition's complete final read, or None;
    other_files: the partition read again with read_uncommitted (transactional variants), compared offset
    by offset."""
    def acks():
        return read_partition(acks_files, partition, ACKS_COLUMNS)

    def table(files):
        batches = list(read_partition(files, partition, ("offset", "value")))
        return pa.Table.from_batches(batches) if batches else pa.table({"offset": pa.array([], pa.int64()),
                                                                        "value": pa.array([], pa.int64())})

    transactions = read_transactions(list(txn_files))
    changed = changed_offsets(table(log_files), table(other_files), "read_uncommitted") if other_files else []
    try:
        try:
            return check_partition(partition, acks(), read_partition(log_files, partition, LOG_COLUMNS), periods,
                                   transactions, sends, read, changed)
        except OutOfOrder:
            table = pa.Table.from_batches(list(read_partition(log_files, partition, LOG_COLUMNS))).sort_by("offset")
            try:
                return check_partition(partition, acks(), [table], periods, transactions, sends, read, changed)
            except OutOfOrder:  # sorted and still not increasing: an offset is there twice
                raise DataError(", ".join(log_files), f"partition {partition}: an offset appears more than once "
                                                       "(a topic partition's offsets are unique)") from None
    except DeliveryLogError as e:
        raise DataError(", ".join(acks_files + list(txn_files)), f"contradictory delivery log: {e}") from None


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def findings_batches(variant: str, findings) -> list[pa.RecordBatch]:
    """A partition's findings as FINDINGS rows: (variant, table name, Arrow IPC of up to CHUNK_ROWS of its rows)."""
    names, payloads = [], []
    for name in ALL_TABLES:
        table = findings.table(name)  # in the table's own schema
        for offset in range(0, table.num_rows, CHUNK_ROWS):
            names.append(name)
            payloads.append(_ipc(table.slice(offset, CHUNK_ROWS)))
    if not names:
        return []
    return [pa.RecordBatch.from_arrays([pa.array([variant] * len(names), pa.string()), pa.array(names, pa.string()),
                                        pa.array(payloads, pa.binary())], schema=FINDINGS)]


TASK_DDL = ("variant string, partition int, log_files string, acks_files string, periods string, txn_files string, "
            "sends long, read string, other_files string")


def _task(batches):
    """mapInArrow body: rows (variant, partition, log_files, acks_files, periods, txn_files, sends, read,
    other_files) -> findings rows, or one row whose table_name is the DataError's message."""
    names = [c.split()[0] for c in TASK_DDL.split(", ")]
    for batch in batches:
        for v, p, logs, acks, periods, txns, sends, read, others in zip(*(batch.column(c).to_pylist() for c in names)):
            try:
                found = check_files(p, json.loads(logs), json.loads(acks), json.loads(periods), json.loads(txns),
                                    sends, tuple(json.loads(read)) if read else None, json.loads(others))
            except DataError as e:
                yield pa.RecordBatch.from_arrays([pa.array([v], pa.string()), pa.array([str(e)], pa.string()),
                                                  pa.nulls(1, pa.binary())], schema=FINDINGS)
                continue
            yield from findings_batches(v, found)


def split(findings: pa.Table) -> dict[str, pa.Table]:
    """One variant's findings rows of every partition -> one table per anomaly; the series summed over
    partitions."""
    chunks: dict[str, list[pa.Table]] = {name: [] for name in ALL_TABLES}
    for name, payload in zip(findings.column("table_name").to_pylist(), findings.column("payload").to_pylist()):
        chunks[name].append(pa.ipc.open_stream(payload).read_all())
    out = {name: pa.concat_tables(chunks[name]) if chunks[name] else pa.schema(columns).empty_table()
           for name, columns in ALL_TABLES.items()}
    series = out["series"]
    summed = series.group_by("second").aggregate([(c, "sum") for c in series.column_names if c != "second"])
    out["series"] = summed.rename_columns([c.removesuffix("_sum") for c in summed.column_names]) \
        .select(series.column_names).cast(series.schema)
    # Deterministic order whatever the tasks' order: by the first three columns (partition first).
    return {name: t.sort_by([(c, "ascending") for c in t.column_names[:3]]) for name, t in out.items()}


@dataclass(frozen=True)
class VariantFiles:
    """What the analysis of one variant reads (inputs.VariantInputs gathers them from a run folder).

    periods: the variant's applied faults as {id, kind, start_ms, end_ms}, for figures per fault period;
    txn_files: its transactions log (transactional variants);
    sends: rows of the delivery log (no value it holds may reach it); None: not checked;
    read: the final read's record (read.json); only a complete one proves each partition's range;
    other_files: the same topic read with read_uncommitted (transactional variants), compared offset by offset."""
    log_files: list[str]
    acks_files: list[str]
    periods: list[dict] = field(default_factory=list)
    txn_files: list[str] = field(default_factory=list)
    sends: int | None = None
    read: dict | None = None
    other_files: list[str] = field(default_factory=list)

    def tasks(self, variant: str) -> list[tuple]:
        """One task row (TASK_DDL) per topic partition the files hold, or the complete final read covers."""
        found = partitions_in(self.log_files + self.acks_files)
        if found is None:  # files without statistics: read them all once to learn
            found = set()
            for path in self.log_files + self.acks_files:
                found.update(pq.read_table(path, columns=["partition"]).column("partition").unique().to_pylist())
        ranges = {}
        if self.read is not None and self.read["complete"]:
            ranges = {p: json.dumps([s, e]) for p, (s, e) in enumerate(zip(self.read["start"], self.read["end"]))}
            found |= set(ranges)  # a partition read empty (its start deleted, say) is analysed too
        windows = json.dumps([(p["id"], p["start_ms"], p["end_ms"]) for p in self.periods])
        logs, acks, txns, others = (json.dumps(list(x)) for x in (self.log_files, self.acks_files, self.txn_files,
                                                                  self.other_files))
        return [(variant, p, logs, acks, windows, txns, self.sends, ranges.get(p), others) for p in sorted(found)]


def analyze_variants(spark, variants: dict[str, VariantFiles]) -> dict[str, tuple]:
    """variant -> (metrics, anomaly tables, timing): each topic partition of each variant checked on its own,
    in one Spark job of as many tasks as there are cores."""
    tasks = [row for name, files in variants.items() for row in files.tasks(name)]
    findings = FINDINGS.empty_table()
    if tasks:
        # As many Spark tasks as cores, each checking its share of the partitions in turn: a task costs
        # ~0.08 s of its own, and one per partition made a small run's analysis a third slower.
        slices = max(1, min(len(tasks), spark.sparkContext.defaultParallelism))
        rows = spark.sparkContext.parallelize(tasks, slices).toDF(TASK_DDL)
        findings = rows.mapInArrow(_task, FINDINGS_DDL).toArrow()
        damaged = findings.filter(pc.starts_with(findings.column("table_name"), DATA_ERROR))
        if damaged.num_rows:
            raise RuntimeError(damaged.column("table_name")[0].as_py())
    return {name: _variant_result(findings.filter(pc.equal(findings.column("variant"), name)), files)
            for name, files in variants.items()}


def analyze_variant(spark, log_files: list[str], acks_files: list[str], periods: list[dict] = (),
                    txn_files: list[str] = (), sends: int | None = None, read: dict | None = None,
                    other_files: list[str] = ()) -> tuple:
    """(metrics, anomaly tables, timing) of one variant (VariantFiles says what each input is)."""
    files = VariantFiles(list(log_files), list(acks_files), list(periods), list(txn_files), sends, read,
                         list(other_files))
    return analyze_variants(spark, {"": files})[""]


def _variant_result(findings: pa.Table, files: VariantFiles) -> tuple:
    """One variant's findings rows -> (metrics, anomaly tables, timing)."""
    tables = split(findings)
    timing = variant_timing(tables, list(files.periods))
    series = tables["series"]
    p50 = [timing["seconds"].get(s, (None, None))[0] for s in series.column("second").to_pylist()]
    p99 = [timing["seconds"].get(s, (None, None))[1] for s in series.column("second").to_pylist()]
    tables["series"] = series.set_column(series.schema.get_field_index("latency_p50_ms"), "latency_p50_ms",
                                         pa.array(p50, pa.float64())) \
        .set_column(series.schema.get_field_index("latency_p99_ms"), "latency_p99_ms", pa.array(p99, pa.float64()))
    del timing["seconds"]
    combined = metrics.combine_rows(tables["partitions"].to_pylist())
    # A transaction spans partitions: torn means partly read over all of them, counted here.
    combined["torn_transactions"], tables["torn_transactions"] = torn_transactions(
        tables["transaction_parts"], read_transactions(list(files.txn_files)))
    anomaly_tables = {name: tables[name] for name in TABLES}
    return combined, anomaly_tables, timing
