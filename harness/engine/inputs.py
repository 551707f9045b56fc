"""A run folder's variants as the analysis takes them: each one's input files checked (checks.py) and
gathered before Spark starts, or why it cannot be analysed.
"""

from __future__ import annotations

from ..formats import FaultOutcome
from ..runfolder import RunFolder, RunFolderError
from .checks import check_parquet, has_transactions


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
            sends = check_parquet(acks, "acks", partitions)["rows"]
            check_parquet(logs, "log", partitions)
            check_parquet(txns, "transactions", partitions)
            read = folder.read_read(v, partitions)
            others = folder.uncommitted_input(v)
            check_parquet(others, "log", partitions)
            if not txns and has_transactions(acks):
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
