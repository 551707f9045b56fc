"""The analysis on Spark: the anomaly definitions (anomalies.py) run once per topic partition.

    spark = spark_session()
    metrics, tables = analyze_variant(spark, log_files, acks_files)

Each Spark task reads one topic partition's delivery log and records straight from the Parquet
files with pyarrow, in its Python worker, and streams them through anomalies.check_partition.
Only findings (counts and anomaly rows, never records) cross back to the driver, so nothing is
shuffled and nothing passes through the JVM. Which files hold which partition comes from the
Parquet statistics; a partition split over files is read in offset order, and one whose records
are out of order is sorted in its task before it is checked, so results never depend on layout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..formats import ACKS_SCHEMA, LOG_SCHEMA
from . import metrics
from .classcache import ClassCache
from .anomalies import (TABLES, TXN_TABLES, DeliveryLogError, OutOfOrder, changed_offsets, check_partition,
                        torn_transactions)
from .timing import TIMING_TABLES, variant_timing

ALL_TABLES = {**TABLES, **TIMING_TABLES, **TXN_TABLES}

# A worker's finding that the data is damaged (not a harness failure) starts with this. It comes back
# as a findings row, not as an exception: a failed Spark task would print a Python traceback through
# the JVM's log before the driver could name the damaged file in one line.
DATA_ERROR = "kafka-chaos data error: "


class DataError(RuntimeError):
    def __init__(self, path: str, problem: str):
        super().__init__(f"{DATA_ERROR}{path}: {problem}")

ACKS_COLUMNS, LOG_COLUMNS = tuple(ACKS_SCHEMA.names), tuple(LOG_SCHEMA.names)


# What a task sends back: one row per chunk of one findings table, the chunk as an Arrow IPC stream.
# Each table keeps its own narrow columns: a single row type for all tables would be the union of their
# columns, mostly null yet allocated, and a per-send table (ack ticks of a slow run) then took ~500 bytes
# a row through the JVM and ran the driver out of heap.
FINDINGS = pa.schema([("table_name", pa.string()), ("payload", pa.binary())])
FINDINGS_DDL = "table_name string, payload binary"
CHUNK_ROWS = 1 << 18  # rows per payload: a cell stays a few MB


def spark_session(master: str | None = None, log: Path | None = None):
    """A local Spark session (master local[*] unless given), its Python workers started. Stop it with
    stop_session(), which also keeps the JVM's class cache (classcache.py) when this start wrote it.
    log: the file that takes the JVM's own output (a JDK's `Using incubator modules` warning, log4j's errors,
    a crash's stack), which would otherwise reach the user's terminal; None leaves it there (a notebook)."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    global _writer, _launcher
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # loopback only, and no hostname warning
    log4j = Path(__file__).with_name("log4j2.properties")
    java_options = f"-Dlog4j2.configurationFile={log4j.as_uri()}"
    # Only a JVM started here takes the options (not under spark-submit, nor a JVM already running).
    launching = SparkContext._gateway is None and "PYSPARK_GATEWAY_PORT" not in os.environ
    cache = ClassCache.for_this_machine() if launching else None
    if cache is not None:
        java_options += " " + cache.java_options()
    cores = os.cpu_count() or 2
    builder = (SparkSession.builder.appName("kafka-chaos-analysis")
               .config("spark.sql.shuffle.partitions", str(max(2, cores * 2)))
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.extraJavaOptions", java_options)
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MILLIS")
               .config("spark.driver.memory", os.environ.get("KAFKA_CHAOS_DRIVER_MEMORY", "2g"))
               .config("spark.python.worker.reuse", "true")
               .config("spark.sql.execution.arrow.maxRecordsPerBatch", "100000"))
    if master:
        builder = builder.master(master)
    elif "spark.master" not in SparkSession.builder._options and not os.environ.get("MASTER"):
        builder = builder.master("local[*]")
    try:
        if launching and log is not None:
            SparkContext._ensure_initialized(gateway=_launch(builder, log))
        spark = builder.getOrCreate()
    except Exception:
        if cache is None or cache.writing:
            raise
        cache.discard()  # a damaged archive stops the JVM at start: start again without it
        sys.stderr.write(f"Spark did not start with its class cache {cache.path}: deleted it, starting without\n")
        return spark_session(master, log)
    _writer = (spark, cache) if cache is not None and cache.writing else None
    if launching:
        _launcher = spark
    spark.sparkContext.setLogLevel("ERROR")
    from ..workload.readback import KafkaLogSource

    spark.dataSource.register(KafkaLogSource)
    _warm_up(spark, cores)
    return spark


def _launch(builder, log: Path):
    """The JVM's gateway, as getOrCreate would launch it (spark-submit with the builder's settings), with the
    JVM's stdout and stderr appended to `log`."""
    from pyspark import SparkConf
    from pyspark.java_gateway import launch_gateway

    conf = SparkConf()
    for key, value in builder._options.items():
        conf.set(key, value)
    with open(log, "ab") as out:  # the JVM holds its own copy of the descriptor
        return launch_gateway(conf, popen_kwargs={"stdout": out, "stderr": out})


_writer: tuple | None = None  # (session, ClassCache) when that session's JVM is to write the archive
_launcher = None  # the session whose start launched the running JVM: its stop ends the JVM


def stop_session(spark, keep_classes: bool = True) -> None:
    """Stop the session. If its JVM was started to write the class cache and `keep_classes` (the work
    completed: not on an interrupt), it writes it now (~10 s, once per machine)."""
    global _writer, _launcher
    from pyspark import SparkContext

    spark.stop()
    if _writer is not None and _writer[0] is spark:
        cache, _writer = _writer[1], None
        if keep_classes:
            cache.write(lambda path: _dump_classes(SparkContext._gateway, path))
    if _launcher is spark:  # not a session that found a JVM running (a test's shared one, spark-submit's)
        _launcher = None
        _end_jvm()


def _end_jvm(wait: float = 30.0) -> None:
    """End the JVM this process launched, and wait for it: pyspark leaves it running until the Python process
    exits (it ends on its stdin's end of file, a moment later), so it would outlive the harness, and with its
    output on a log file nothing waits for it. The next session launches a new one."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if proc is None:  # spark-submit's
        return
    try:
        gateway.shutdown()
    except Exception:  # py4j: the JVM is gone already
        pass
    proc.stdin.close()
    try:
        proc.wait(wait)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    SparkContext._gateway = SparkContext._jvm = None


def _dump_classes(gateway, path: Path) -> None:
    """What `jcmd <pid> VM.cds dynamic_dump <path>` does, through the JVM's own DiagnosticCommand MBean (a
    JRE has no jcmd). Called by reflection on the public interface: py4j looks methods up on the
    server's class, which its module does not export."""
    jvm, cls = gateway.jvm, gateway.jvm.java.lang.Class

    def array(kind, items):
        a = gateway.new_array(kind, len(items))
        for i, item in enumerate(items):
            a[i] = item
        return a

    invoke = cls.forName("javax.management.MBeanServerConnection").getMethod("invoke", array(cls, [
        cls.forName("javax.management.ObjectName"), cls.forName("java.lang.String"),
        cls.forName("[Ljava.lang.Object;"), cls.forName("[Ljava.lang.String;")]))
    command = array(jvm.java.lang.String, ["dynamic_dump", str(path)])
    system = jvm.java.lang.System
    stdout = system.out
    system.setOut(jvm.java.io.PrintStream(jvm.java.io.OutputStream.nullOutputStream()))  # its "Dynamic dump to file"
    try:
        invoke.invoke(jvm.java.lang.management.ManagementFactory.getPlatformMBeanServer(), array(jvm.java.lang.Object, [
            jvm.javax.management.ObjectName("com.sun.management:type=DiagnosticCommand"), "vmCds",
            array(jvm.java.lang.Object, [command]), array(jvm.java.lang.String, ["[Ljava.lang.String;"])]))
    finally:
        system.setOut(stdout)


def import_spark() -> None:
    """Import pyspark and the modules of ours that import it, on the calling thread. Two threads importing
    pyspark.sql at once (the starter's thread in spark_session, the run's in the final read's module) can meet
    a partially initialised module: `ImportError: cannot import name 'SQLContext' from partially initialized
    module 'pyspark.sql'` (shrink's first try, 4 of 10 calls on a busy machine). Once imported, later
    imports are lookups."""
    import pyspark.sql  # noqa: F401

    from ..workload import readback  # noqa: F401  (pyspark.sql.datasource)


class SparkStarter:
    """Starts Spark on a thread (a JVM takes seconds), so the run overlaps it with the cluster's start."""

    def __init__(self, master: str | None = None, log: Path | None = None):
        import concurrent.futures

        import_spark()
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="spark-start")
        self._future = self._pool.submit(spark_session, master, log)

    def get(self):
        return self._future.result()

    def stop(self, keep_classes: bool = True) -> None:
        """Stop the session, waiting for it if it is still starting: no JVM outlives the run."""
        if not self._future.cancel():
            try:
                stop_session(self._future.result(), keep_classes)
            except Exception:  # it failed to start, or the JVM is gone already (Ctrl-C reached it too)
                pass
        self._pool.shutdown(wait=False)


class SharedSpark:
    """One Spark session for many runs (a --repeat series, shrink's tries): a JVM start (seconds) paid once.
    Started at once in the background, like SparkStarter; a run that did not complete discards it (the next
    run starts a fresh one), so a session a failure may have left broken is never reused."""

    def __init__(self, master: str | None = None, log: Path | None = None):
        self.master, self.log = master, log
        self._starter: SparkStarter | None = SparkStarter(master, log)

    def get(self):
        if self._starter is None:
            self._starter = SparkStarter(self.master, self.log)
        return self._starter.get()

    def discard(self, keep_classes: bool = False) -> None:
        if self._starter is not None:
            self._starter.stop(keep_classes)
            self._starter = None

    def stop(self, keep_classes: bool = True) -> None:
        self.discard(keep_classes)


def _warm(batches):
    import harness.analysis.anomalies  # noqa: F401  (numpy, pyarrow and the definitions, once per worker)

    yield from batches


def _warm_up(spark, cores: int) -> None:
    """Start the Python workers and import the analysis in them now, as part of Spark's start-up
    (the run overlaps it with the cluster's), rather than inside the first timed analysis; and take the
    final read's path once with nothing to read (its planning and reader workers: the first read of a
    session took 4.4 s for 200,000 records, the next ones 1.1 s; after this one, 1.9 s)."""
    from ..workload.readback import read_topic

    spark.range(cores, numPartitions=cores).mapInArrow(_warm, "id long").collect()
    read_topic(spark, {}, "warm-up", 0, split=0).write.format("noop").mode("overwrite").save()


# -- which row groups hold which partition (driver and workers) -----------------------------

def _stats(rg, column: str) -> tuple | None:
    """(min, max) of a column in one row group, or None when the file does not say."""
    names = [rg.column(i).path_in_schema for i in range(rg.num_columns)]
    if column not in names:
        return None
    st = rg.column(names.index(column)).statistics
    return (st.min, st.max) if st is not None and st.has_min_max else None


def partitions_in(files: list[str]) -> set[int] | None:
    """Topic partitions the files hold, from their statistics; None if some row group does not say."""
    found: set[int] = set()
    for path in files:
        meta = pq.ParquetFile(path).metadata
        for i in range(meta.num_row_groups):
            mm = _stats(meta.row_group(i), "partition")
            if mm is None:
                return None
            found.update(range(mm[0], mm[1] + 1))
    return found


def _pieces(files: list[str], partition: int) -> list[tuple[tuple, str, int, bool]]:
    """(sort key, file, row group, holds only this partition) for every row group that may hold it,
    ordered by their lowest offset when the files say (a partition read in several pieces)."""
    out = []
    for n, path in enumerate(files):
        meta = pq.ParquetFile(path).metadata
        for i in range(meta.num_row_groups):
            rg = meta.row_group(i)
            mm = _stats(rg, "partition")
            if mm is not None and not mm[0] <= partition <= mm[1]:
                continue
            offsets = _stats(rg, "offset")
            out.append(((offsets[0] if offsets else -1, n, i), path, i, mm is not None and mm[0] == mm[1]))
    return sorted(out)


def read_partition(files: list[str], partition: int, wanted: tuple[str, ...]):
    """The rows of one topic partition from Parquet files, batch by batch, in file (offset) order."""
    for _, path, group, alone in _pieces(files, partition):
        try:
            pf = pq.ParquetFile(path)
            columns = [c for c in wanted if c in pf.schema_arrow.names]
            table = pf.read_row_group(group, columns=columns)
        except Exception as e:  # truncated or corrupt data pages
            raise DataError(path, f"unreadable Parquet ({str(e).strip().splitlines()[0] if str(e).strip() else e!r})")
        if not alone:
            table = table.filter(pc.equal(table.column("partition"), partition))
        yield from table.to_batches(max_chunksize=1 << 20)


def read_transactions(files: list[str]) -> pa.Table | None:
    """The transactions log (small: a row per transaction), or None for a variant without transactions."""
    if not files:
        return None
    try:
        return pa.concat_tables([pq.read_table(f) for f in files])
    except Exception as e:
        raise DataError(", ".join(files), f"unreadable Parquet ({str(e).strip().splitlines()[0] if str(e).strip() else e!r})")


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


def findings_batches(findings) -> list[pa.RecordBatch]:
    """A partition's findings as FINDINGS rows: (table name, Arrow IPC of up to CHUNK_ROWS of its rows)."""
    names, payloads = [], []
    for name in ALL_TABLES:
        table = findings.table(name)  # in the table's own schema
        for offset in range(0, table.num_rows, CHUNK_ROWS):
            names.append(name)
            payloads.append(_ipc(table.slice(offset, CHUNK_ROWS)))
    if not names:
        return []
    return [pa.RecordBatch.from_arrays([pa.array(names, pa.string()), pa.array(payloads, pa.binary())],
                                       schema=FINDINGS)]


def _task(batches):
    """mapInArrow body: rows (partition, log_files, acks_files, periods, txn_files, sends, read, other_files) ->
    findings rows, or one row whose table_name is the DataError's message."""
    names = ("partition", "log_files", "acks_files", "periods", "txn_files", "sends", "read", "other_files")
    for batch in batches:
        for p, logs, acks, periods, txns, sends, read, others in zip(*(batch.column(c).to_pylist() for c in names)):
            try:
                found = check_files(p, json.loads(logs), json.loads(acks), json.loads(periods), json.loads(txns),
                                    sends, tuple(json.loads(read)) if read else None, json.loads(others))
            except DataError as e:
                yield pa.RecordBatch.from_arrays([pa.array([str(e)], pa.string()), pa.nulls(1, pa.binary())],
                                                 schema=FINDINGS)
                continue
            yield from findings_batches(found)


def split(findings: pa.Table) -> dict[str, pa.Table]:
    """Findings rows of every partition -> one table per anomaly; the series summed over partitions."""
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


def analyze_variant(spark, log_files: list[str], acks_files: list[str], periods: list[dict] = (),
                    txn_files: list[str] = (), sends: int | None = None, read: dict | None = None,
                    other_files: list[str] = ()) -> tuple:
    """(metrics, anomaly tables, timing) of one variant, one Spark task per topic partition.

    periods: the variant's applied faults as {id, kind, start_ms, end_ms}, for figures per fault period;
    txn_files: its transactions log (transactional variants);
    sends: rows of the delivery log (no value it holds may reach it); None: not checked;
    read: the final read's record (read.json); only a complete one proves each partition's range;
    other_files: the same topic read with read_uncommitted (transactional variants), compared offset by offset."""
    found = partitions_in(log_files + acks_files)
    if found is None:  # files without statistics: read them all once to learn
        found = set()
        for path in log_files + acks_files:
            found.update(pq.read_table(path, columns=["partition"]).column("partition").unique().to_pylist())
    ranges = {}
    if read is not None and read["complete"]:
        ranges = {p: json.dumps([s, e]) for p, (s, e) in enumerate(zip(read["start"], read["end"]))}
        found |= set(ranges)  # a partition read empty (its start deleted, say) is analysed too
    windows = json.dumps([(p["id"], p["start_ms"], p["end_ms"]) for p in periods])
    txns = json.dumps(list(txn_files))
    others = json.dumps(list(other_files))
    tasks = [(p, json.dumps(log_files), json.dumps(acks_files), windows, txns, sends, ranges.get(p), others)
             for p in sorted(found)]
    schema = FINDINGS.empty_table()
    if tasks:
        rows = spark.sparkContext.parallelize(tasks, len(tasks)).toDF(
            "partition int, log_files string, acks_files string, periods string, txn_files string, sends long, "
            "read string, other_files string")
        schema = rows.mapInArrow(_task, FINDINGS_DDL).toArrow()
        damaged = schema.filter(pc.starts_with(schema.column("table_name"), DATA_ERROR))
        if damaged.num_rows:
            raise RuntimeError(damaged.column("table_name")[0].as_py())
    tables = split(schema)
    timing = variant_timing(tables, list(periods))
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
        tables["transaction_parts"], read_transactions(list(txn_files)))
    anomaly_tables = {name: tables[name] for name in TABLES}
    return combined, anomaly_tables, timing
