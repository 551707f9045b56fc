"""What can be checked of a variant's Parquet files before Spark starts, without reading the data: each
file's footer, columns and types, and from the Parquet statistics nulls where a value is required,
partitions out of range, negative offsets, and delivery-log values beyond its length (values are 0, 1, 2,
... per partition, so a stray 10^12 would otherwise size the analysis' arrays). What only the data tells
(a value recorded twice, an unknown outcome) is found in the Spark tasks. Either way the damaged file is
named in a RunFolderError, never a Java or Python traceback.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..exits import one_line
from ..formats import NOT_NULL, REQUIRED, SCHEMAS
from ..runfolder import RunFolderError
from ..spec import MAX_PARTITIONS  # the bound for a folder analysed without its spec

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


def check_parquet(files: list[str], what: str, partitions: int | None = None) -> dict[str, int]:
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


def has_transactions(acks: list[str]) -> bool:
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
