"""A run folder's variants as the analysis takes them: each one's input files checked (checks.py) and
gathered once into a VariantInputs before Spark starts, or why it cannot be analysed.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..formats import FaultOutcome
from ..runfolder import RunFolder, RunFolderError
from .checks import check_parquet, has_transactions
from .partitions import VariantFiles


@dataclass(frozen=True)
class VariantInputs:
    """What the analysis of one variant takes, gathered once before Spark starts: one faults.jsonl read and one
    load of the consumer group's sink, which the analysis then takes from here."""
    files: VariantFiles  # what the Spark job reads: the final read (log.parquet/), the delivery log, the faults
    #                      as applied, the transactions log, the read_uncommitted read, read.json's record
    faults_not_applied: int  # planned faults never applied (not reached, or failed)
    sink: dict | None  # the consumer group's sink as DataFrames (processed, events, positions), None without one


def check_inputs(folder: RunFolder, variants: list[str], partial: bool = False,
                 partitions: int | None = None) -> dict[str, VariantInputs | str]:
    """variant -> its inputs, or why it cannot be analysed (only with partial). Reads no Parquet data, starts
    no Spark; RunFolderError naming the first problem."""
    inputs: dict[str, VariantInputs | str] = {}
    spec = folder.read_spec() or {}
    for v in variants:
        given = _gather(folder, spec, v, partitions)
        if isinstance(given, str) and not partial:
            raise RunFolderError(f"{given}; analyse what is complete with --partial")
        inputs[v] = given
    return inputs


def _gather(folder: RunFolder, spec: dict, v: str, partitions: int | None) -> VariantInputs | str:
    """One variant's inputs, checked, or why it cannot be analysed."""
    why = folder.missing(v)
    if why:
        return why
    sink_path = folder.sink_path(v)
    if _ran_a_group(spec, v) and not sink_path.exists():  # its sink is the consumer metrics' only source
        return f"{sink_path} is missing (the variant ran a consumer group)"
    sink = folder.read_sink(v)  # readable, with its tables: RunFolderError (damaged) naming it otherwise
    logs, acks = folder.analysis_input(v)
    txns = folder.transactions_input(v)
    if not acks:
        raise RunFolderError(f"{folder.acks_path(v)}: holds no Parquet file", damaged=True)
    sends = check_parquet(acks, "acks", partitions)["rows"]
    check_parquet(logs, "log", partitions)
    check_parquet(txns, "transactions", partitions)
    read = folder.read_read(v, partitions)
    others = folder.uncommitted_input(v)
    check_parquet(others, "log", partitions)
    if not txns and has_transactions(acks):
        return f"{folder.transactions_path(v)} is missing (the delivery log names transactions)"
    faults = folder.read_faults()
    return VariantInputs(VariantFiles(logs, acks, fault_periods(faults, v), txns, sends, read, others),
                         faults_not_applied(faults, v), sink)


def _ran_a_group(spec: dict, variant: str) -> bool:
    """The stored spec gives the variant a consumer group (the experiment's section, or the variant's own)."""
    if spec.get("consumer"):
        return True
    entries = spec.get("variants") if isinstance(spec.get("variants"), list) else []
    return any(isinstance(e, dict) and e.get("name") == variant and e.get("consumer") for e in entries)


def fault_periods(faults: list[dict], variant: str) -> list[dict]:
    """The variant's faults as they were applied: {id, kind, start_ms, end_ms} (epoch milliseconds), from
    faults.jsonl's rows (RunFolder.read_faults)."""
    from datetime import datetime

    out = []
    for f in faults:  # checked by read_faults: ids are numbers, times are ISO 8601
        if not f.get("applied_at"):
            continue  # not applied (not reached, failed before applying)
        start = datetime.fromisoformat(f["applied_at"]).timestamp()
        end = datetime.fromisoformat(f["healed_at"]).timestamp() if f.get("healed_at") else \
            start + float(f.get("planned_duration") or 0)
        if f.get("variant") == variant:
            out.append({"id": int(f["id"]), "kind": str(f.get("kind")), "start_ms": int(start * 1000),
                        "end_ms": int(end * 1000)})
    return out


def faults_not_applied(faults: list[dict], variant: str) -> int:
    """The variant's planned faults that were never applied (not reached, or failed), from faults.jsonl's rows."""
    return sum(1 for f in faults if f.get("variant") == variant
               and f.get("outcome") not in (FaultOutcome.APPLIED, FaultOutcome.HEALED))
