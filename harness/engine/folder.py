"""Analyse a run folder: each variant's Parquet files -> metrics, and its anomaly tables written back.

Used by `kafka-chaos run` after the final reads, by `kafka-chaos analyze` and by the Spark
application (harness/job.py). Everything that can be checked without reading the data is checked before
Spark starts (inputs.check_inputs); what only the data tells is found in the Spark tasks. Either way the
damaged file is named in a RunFolderError, never a Java or Python traceback.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pyarrow as pa
import pyarrow.parquet as pq

from ..analysis import consumption
from ..runfolder import RunFolder, RunFolderError
from . import partitions as spark_analysis
from .inputs import VariantInputs, check_inputs


def analyze_folder(spark, folder: RunFolder, variants: list[str], partial: bool = False,
                   on_start: Callable[[list[str]], None] | None = None, partitions: int | None = None,
                   inputs: dict[str, VariantInputs | str] | None = None) -> dict[str, dict]:
    """variant -> metrics, anomaly tables written to the folder.

    A variant whose files are missing raises RunFolderError, or with partial=True comes back as
    {"incomplete": why}. Everything is checked before the analysis starts (check_inputs, or the `inputs` it
    returned); then every variant is analysed in one Spark job (on_start is told which).
    """
    if inputs is None:
        inputs = check_inputs(folder, variants, partial, partitions)
    ready = {v: given for v, given in inputs.items() if not isinstance(given, str)}
    if on_start and ready:
        on_start(list(ready))
    try:
        found = spark_analysis.analyze_variants(spark, {v: given.files for v, given in ready.items()})
    except Exception as e:
        damaged = re.search(re.escape(spark_analysis.DATA_ERROR) + r"(.*)", str(e))
        if damaged:
            raise RunFolderError(damaged.group(1).strip(), damaged=True) from None
        raise
    out: dict[str, dict] = {}
    for v, given in inputs.items():
        if isinstance(given, str):
            out[v] = {"incomplete": given}
            continue
        metrics, tables, timing = found[v]
        figures = {}
        if given.sink is not None:  # a consumer group ran: its sink against the log (consumption.py)
            figures = _consumption(given.sink, given.files.log_files, metrics, tables)
        folder.write_tables(v, tables)
        read = given.files.read
        out[v] = {**metrics, **timing, **figures, **({"read": read} if read is not None else {}),
                  "faults_not_applied": given.faults_not_applied}
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
    for key in ("rebalances", "client_hangs"):  # group-wide counts: no per-partition value
        parts = parts.set_column(parts.schema.get_field_index(key), key, pa.nulls(len(ids), pa.int64()))
    tables["partitions"] = parts
    tables.update({name: consumption.to_arrow(name, frame) for name, frame in found.tables.items()})
    return found.figures
