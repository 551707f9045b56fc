"""A topic partition's rows from a variant's Parquet files, read in a Spark task with pyarrow: which row
groups hold which partition (from the files' statistics), read in offset order. A file that cannot be read
is a DataError naming it, never a traceback.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

# A worker's finding that the data is damaged (not a harness failure) starts with this. It comes back
# as a findings row, not as an exception: a failed Spark task would print a Python traceback through
# the JVM's log before the driver could name the damaged file in one line.
DATA_ERROR = "kafka-chaos data error: "


class DataError(RuntimeError):
    def __init__(self, path: str, problem: str):
        super().__init__(f"{DATA_ERROR}{path}: {problem}")


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
