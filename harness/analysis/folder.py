"""Analyse a run folder: each variant's Parquet files -> metrics, and its anomaly tables written back.

Used by `kafka-chaos run` after the final reads, by `kafka-chaos analyze` and by the Spark
application (harness/job.py). Everything that can be checked without reading the data is checked before
Spark starts (check_inputs): missing files, each file's footer, columns and types, and from the
Parquet statistics nulls where a value is required, partitions out of range, negative offsets,
and delivery-log values beyond its length (values are 0, 1, 2, ... per partition, so a stray
10^12 would otherwise size the analysis' arrays). What only the data tells (a value recorded
twice, an unknown outcome) is found in the Spark tasks. Either way the damaged file is named in
a RunFolderError, never a Java or Python traceback.
"""

from __future__ import annotations

import re
from pathlib import Path
from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..exits import one_line
from ..formats import NOT_NULL, REQUIRED, SCHEMAS, FaultOutcome
from ..runfolder import RunFolder, RunFolderError
from ..spec import MAX_PARTITIONS  # the bound for a folder analysed without its spec
from ..engine import partitions as spark_analysis
from . import consumption

_WHAT = {"acks": "a delivery log", "log": "a log file", "transactions": "a transactions log"}
_KINDS = {"integer": pa.types.is_integer, "string": lambda t: pa.types.is_string(t) or pa.types.is_large_string(t),
          "timestamp": pa.types.is_timestamp, "number": lambda t: pa.types.is_floating(t) or pa.types.is_integer(t)}


def _kind(dtype: pa.DataType) -> str:
    """A column type as the check accepts it: any integer width, string, timestamp unit, and integers for floats
    (files of older releases and other writers)."""
    return next(kind for kind in ("integer", "timestamp", "number", "string") if _KINDS[kind](dtype))


# Each input's columns (formats.SCHEMAS) -> (the kind of type it must have, required or not).
_COLUMNS = {what: {f.name: (_kind(f.type), f.name in REQUIRED[what]) for f in schema}
            for what, schema in SCHEMAS.items()}


def _facts(pf: pq.ParquetFile, path: str, column: str) -> tuple[int, object, object]:
    """(nulls, min, max) of a column, from the row groups' statistics, or read when a group has none."""
    meta, nulls, lo, hi = pf.metadata, 0, None, None
    for i in range(meta.num_row_groups):
        rg = meta.row_group(i)
        chunk = next((rg.column(j) for j in range(rg.num_columns) if rg.column(j).path_in_schema == column), None)
        st = chunk.statistics if chunk is not None else None
        if st is None or not st.has_null_count or (not st.has_min_max and st.null_count < rg.num_rows):
            try:
                values = pf.read(columns=[column]).column(0)
            except Exception as e:
                raise RunFolderError(f"{path}: not a readable Parquet file ({one_line(e)})", damaged=True) from None
            found = pc.min_max(values).as_py()
            return values.null_count, found["min"], found["max"]
        nulls += st.null_count
        if st.has_min_max:
            lo = st.min if lo is None else min(lo, st.min)
            hi = st.max if hi is None else max(hi, st.max)
    return nulls, lo, hi


def check_files(files: list[str], what: str, partitions: int | None = None) -> dict[str, int]:
    """Footer, schema and statistics of every file; RunFolderError(damaged) naming the first bad one.
    Returns {"rows", "value_max"} over the files."""
    limit = partitions or MAX_PARTITIONS
    rows, value_max = 0, -1
    types: dict[str, tuple[pa.DataType, str]] = {}  # column -> (its type, the first file that has it)
    for path in files:
        try:
            pf = pq.ParquetFile(path)
            schema = pf.schema_arrow
        except Exception as e:  # pyarrow raises ArrowInvalid, OSError, ... for truncated or foreign files
            raise RunFolderError(f"{path}: not a readable Parquet file ({one_line(e)})", damaged=True) from None
        for name, (kind, required) in _COLUMNS[what].items():
            if name not in schema.names:
                if required:
                    raise RunFolderError(f"{path}: no column {name!r} ({_WHAT[what]} has "
                                         f"{', '.join(REQUIRED[what])})", damaged=True)
                continue
            dtype = schema.field(name).type
            if not _KINDS[kind](dtype):
                raise RunFolderError(f"{path}: column {name!r} is {dtype}, expected {kind}", damaged=True)
            # One dataset, one schema: the readers concatenate its files (a file from elsewhere would stop them).
            first, where = types.setdefault(name, (dtype, path))
            if dtype != first:
                raise RunFolderError(f"{path}: column {name!r} is {dtype} where {Path(where).name} beside it has "
                                     f"{first} (a file from elsewhere?)", damaged=True)
        rows += pf.metadata.num_rows
        for name in NOT_NULL[what]:
            nulls, _, _ = _facts(pf, path, name)
            if nulls:
                raise RunFolderError(f"{path}: column {name!r} has {nulls:,} null(s); every row needs one", damaged=True)
        if what == "transactions":  # a row per transaction: no partition, no position
            continue
        _, lo, hi = _facts(pf, path, "partition")
        for p in (lo, hi):
            if p is not None and not 0 <= p < limit:
                raise RunFolderError(f"{path}: partition {p} is not one of the topic's (0..{limit - 1})", damaged=True)
        position = "value" if what == "acks" else "offset"
        _, lo, hi = _facts(pf, path, position)
        if lo is not None and lo < 0:
            raise RunFolderError(f"{path}: negative {position} {lo}", damaged=True)
        if what == "acks" and hi is not None:
            value_max = max(value_max, hi)
    if what == "acks" and value_max >= rows:
        raise RunFolderError(f"{files[0] if len(files) == 1 else ', '.join(files)}: value {value_max:,} but only "
                             f"{rows:,} sends recorded (each partition's values are 0, 1, 2, ...): not a delivery log "
                             "this harness wrote", damaged=True)
    return {"rows": rows, "value_max": value_max}


def check_inputs(folder: RunFolder, variants: list[str], partial: bool = False,
                 partitions: int | None = None) -> dict[str, tuple | str]:
    """variant -> (log files, delivery-log files, fault periods, transactions-log files, sends recorded, the final
    read's record or None, the read_uncommitted read's files), or why it cannot be analysed (only with partial).
    Reads no data, starts no Spark; RunFolderError naming the first problem."""
    inputs: dict[str, tuple | str] = {}
    spec = folder.read_spec() or {}
    for v in variants:
        why = folder.missing(v)
        if not why and _ran_a_group(spec, v):  # its sink is the consumer metrics' only source
            sink = folder.sink_path(v)
            why = "" if sink.exists() else f"{sink} is missing (the variant ran a consumer group)"
            if not why:
                folder.read_sink(v)  # readable, with its tables: RunFolderError (damaged) naming it otherwise
        if not why:
            logs, acks = folder.analysis_input(v)
            txns = folder.transactions_input(v)
            if not acks:
                raise RunFolderError(f"{folder.acks_path(v)}: holds no Parquet file", damaged=True)
            sends = check_files(acks, "acks", partitions)["rows"]
            check_files(logs, "log", partitions)
            check_files(txns, "transactions", partitions)
            read = folder.read_read(v, partitions)
            others = folder.uncommitted_input(v)
            check_files(others, "log", partitions)
            if not txns and _has_transactions(acks):
                why = f"{folder.transactions_path(v)} is missing (the delivery log names transactions)"
        if why and not partial:
            raise RunFolderError(f"{why}; analyse what is complete with --partial")
        inputs[v] = why or (logs, acks, fault_periods(folder, v), txns, sends, read, others)
    return inputs


def _ran_a_group(spec: dict, variant: str) -> bool:
    """The stored spec gives the variant a consumer group (the experiment's section, or the variant's own)."""
    if spec.get("consumer"):
        return True
    entries = spec.get("variants") if isinstance(spec.get("variants"), list) else []
    return any(isinstance(e, dict) and e.get("name") == variant and e.get("consumer") for e in entries)


def analyze_folder(spark, folder: RunFolder, variants: list[str], partial: bool = False,
                   on_variant: Callable[[str], None] | None = None, partitions: int | None = None,
                   inputs: dict | None = None) -> dict[str, dict]:
    """variant -> metrics, anomaly tables written to the folder.

    A variant whose files are missing raises RunFolderError, or with partial=True comes back as
    {"incomplete": why}. Everything is checked before the first variant is analysed (check_inputs,
    or the `inputs` it returned).
    """
    if inputs is None:
        inputs = check_inputs(folder, variants, partial, partitions)
    out: dict[str, dict] = {}
    for v, given in inputs.items():
        if isinstance(given, str):
            out[v] = {"incomplete": given}
            continue
        if on_variant:
            on_variant(v)
        try:
            metrics, tables, timing = spark_analysis.analyze_variant(spark, *given)
        except Exception as e:
            found = re.search(re.escape(spark_analysis.DATA_ERROR) + r"(.*)", str(e))
            if found:
                raise RunFolderError(found.group(1).strip(), damaged=True) from None
            raise
        figures = {}
        sink = folder.read_sink(v)
        if sink is not None:  # a consumer group ran: its sink against the log (consumption.py)
            figures = _consumption(sink, given[0], metrics, tables)
        folder.write_tables(v, tables)
        read = given[5]
        out[v] = {**metrics, **timing, **figures, **({"read": read} if read is not None else {}),
                  "faults_not_applied": faults_not_applied(folder, v)}
    return out


def _consumption(sink: dict, logs: list[str], metrics: dict, tables: dict) -> dict:
    """The consumer metrics into `metrics` (and each partition's into the partitions table), the consumer
    tables into `tables`; returns the dedup-window figures."""
    import pandas as pd

    log = pa.concat_tables([pq.read_table(f, columns=["partition", "offset", "value"]) for f in logs]).to_pandas() \
        if logs else pd.DataFrame({"partition": [], "offset": [], "value": []})
    positions = {int(p): int(x) for p, x in zip(sink["positions"]["partition"], sink["positions"]["position"])
                 if pd.notna(x)}
    found = consumption.analyze(sink["processed"], log, positions, sink["events"])
    metrics.update(found.metrics)
    parts = tables["partitions"]
    ids = parts.column("partition").to_pylist()
    for key in consumption.PER_PARTITION:
        column = pa.array([found.partitions.get(p, {}).get(key, 0) for p in ids], pa.int64())
        parts = parts.set_column(parts.schema.get_field_index(key), key, column)
    rebalances = parts.schema.get_field_index("rebalances")  # a group-wide count: no per-partition value
    tables["partitions"] = parts.set_column(rebalances, "rebalances", pa.nulls(len(ids), pa.int64()))
    tables.update({name: consumption.to_arrow(name, frame) for name, frame in found.tables.items()})
    return found.figures


def _has_transactions(acks: list[str]) -> bool:
    """Some delivery-log row carries a transaction (from the files' column statistics)."""
    for path in acks:
        meta = pq.ParquetFile(path).metadata
        names = meta.schema.to_arrow_schema().names
        if "txn" not in names:
            continue
        col = names.index("txn")
        for i in range(meta.num_row_groups):
            stats = meta.row_group(i).column(col).statistics
            if stats is None or not stats.has_null_count:  # no statistics: read the column
                return pq.read_table(path, columns=["txn"]).column("txn").null_count < meta.num_rows
            if stats.null_count != meta.row_group(i).num_rows:
                return True
    return False


def fault_periods(folder: RunFolder, variant: str) -> list[dict]:
    """The variant's faults as they were applied: {id, kind, start_ms, end_ms} (epoch milliseconds)."""
    from datetime import datetime

    out = []
    for f in folder.read_faults():  # checked there: ids are numbers, times are ISO 8601
        if not f.get("applied_at"):
            continue  # not applied (not reached, failed before applying)
        start = datetime.fromisoformat(f["applied_at"]).timestamp()
        end = datetime.fromisoformat(f["healed_at"]).timestamp() if f.get("healed_at") else \
            start + float(f.get("planned_duration") or 0)
        if f.get("variant") == variant:
            out.append({"id": int(f["id"]), "kind": str(f.get("kind")), "start_ms": int(start * 1000),
                        "end_ms": int(end * 1000)})
    return out


def faults_not_applied(folder: RunFolder, variant: str) -> int:
    """The variant's planned faults that were never applied (not reached, or failed), from faults.jsonl."""
    return sum(1 for f in folder.read_faults() if f.get("variant") == variant
               and f.get("outcome") not in (FaultOutcome.APPLIED, FaultOutcome.HEALED))

