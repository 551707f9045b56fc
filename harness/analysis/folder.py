"""Analyse a run folder: each variant's Parquet files -> metrics, and its anomaly tables written back.

Used by `kafka-chaos run` after the final reads, by `kafka-chaos analyze` and by the Spark
application (job.py). Every file is checked before Spark starts working on it (footer, columns,
types), and a damaged file is named in a RunFolderError, never a Java or Python traceback.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pyarrow as pa
import pyarrow.parquet as pq

from ..runfolder import RunFolder, RunFolderError
from . import consumption, spark as spark_analysis

# Column -> types it may have (older releases, other writers), for the two inputs.
_REQUIRED = {
    "acks": {"partition": "integer", "value": "integer", "outcome": "string"},
    "log": {"partition": "integer", "offset": "integer", "value": "integer"},
    "transactions": {"txn": "integer", "outcome": "string"},
}
_OPTIONAL = {
    "acks": {"offset": "integer", "error": "string", "sent_at": "timestamp", "latency_ms": "number",
             "session": "integer", "txn": "integer"},
    "log": {"timestamp": "timestamp"},
    "transactions": {"session": "integer", "error": "string", "cause": "string"},
}
_KINDS = {"integer": pa.types.is_integer, "string": lambda t: pa.types.is_string(t) or pa.types.is_large_string(t),
          "timestamp": pa.types.is_timestamp, "number": lambda t: pa.types.is_floating(t) or pa.types.is_integer(t)}


def check_files(files: list[str], what: str) -> None:
    """Footer and schema of every file; RunFolderError(damaged) naming the first bad one."""
    for path in files:
        try:
            schema = pq.ParquetFile(path).schema_arrow
        except Exception as e:  # pyarrow raises ArrowInvalid, OSError, ... for truncated or foreign files
            raise RunFolderError(f"{path}: not a readable Parquet file ({_first_line(e)})", damaged=True) from None
        for columns, required in ((_REQUIRED[what], True), (_OPTIONAL[what], False)):
            for name, kind in columns.items():
                if name not in schema.names:
                    if required:
                        raise RunFolderError(f"{path}: no column {name!r} (a {what} file has "
                                             f"{', '.join(_REQUIRED[what])})", damaged=True)
                    continue
                dtype = schema.field(name).type
                if not _KINDS[kind](dtype):
                    raise RunFolderError(f"{path}: column {name!r} is {dtype}, expected {kind}", damaged=True)


def analyze_folder(spark, folder: RunFolder, variants: list[str], partial: bool = False,
                   on_variant: Callable[[str], None] | None = None) -> dict[str, dict]:
    """variant -> metrics, anomaly tables written to the folder.

    A variant whose files are missing raises RunFolderError, or with partial=True comes back as
    {"incomplete": why}. Everything is checked before the first variant is analysed.
    """
    inputs: dict[str, tuple[list[str], list[str], list[str]] | str] = {}
    for v in variants:
        why = folder.missing(v)
        if not why:
            logs, acks = folder.analysis_input(v)
            txns = folder.transactions_input(v)
            check_files(acks, "acks")
            check_files(logs, "log")
            check_files(txns, "transactions")
            if not txns and _has_transactions(acks):
                why = f"{folder.transactions_path(v)} is missing (the delivery log names transactions)"
        if why and not partial:
            raise RunFolderError(f"{why}; analyse what is complete with --partial")
        inputs[v] = why or (logs, acks, txns)
    out: dict[str, dict] = {}
    for v, given in inputs.items():
        if isinstance(given, str):
            out[v] = {"incomplete": given}
            continue
        if on_variant:
            on_variant(v)
        logs, acks, txns = given
        try:
            metrics, tables, timing = spark_analysis.analyze_variant(spark, logs, acks, fault_periods(folder, v), txns)
        except Exception as e:
            found = re.search(re.escape(spark_analysis.DATA_ERROR) + r"(.*)", str(e))
            if found:
                raise RunFolderError(found.group(1).strip(), damaged=True) from None
            raise
        figures = {}
        sink = folder.read_sink(v)
        if sink is not None:  # a consumer group ran: its sink against the log (consumption.py)
            figures = _consumption(sink, logs, metrics, tables)
        folder.write_tables(v, tables)
        out[v] = {**metrics, **timing, **figures}
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
    for f in folder.read_faults():
        try:
            start = datetime.fromisoformat(f["applied_at"]).timestamp()
            end = datetime.fromisoformat(f["healed_at"]).timestamp() if f.get("healed_at") else \
                start + float(f.get("planned_duration") or 0)
        except (KeyError, TypeError, ValueError):
            continue  # not applied (not reached, failed before applying)
        if f.get("variant") == variant:
            out.append({"id": int(f["id"]), "kind": str(f.get("kind")), "start_ms": int(start * 1000),
                        "end_ms": int(end * 1000)})
    return out


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]
