"""Everything a report shows, read from a run folder into plain data (render.py turns it into HTML).

    view = load(RunFolder(path))          # one run
    views = load_index(out_folder)         # every run of an --out folder, newest first
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..analysis.anomalies import TABLES
from ..analysis.consumption import TABLES as CONSUMER_TABLES
from ..analysis.metrics import BY_KEY
from ..aggregate import ranking
from ..evidence import commands, fault_lines
from ..formats import Outcome, TxnCause, TxnOutcome
from ..runfolder import SUMMARY, RunFolder, RunFolderError, SeriesFolder, entry_name, runs_in, series_in
from ..spec import masked
from ..verdict import run_verdict, status_of

LISTING_CAP = 200  # jump-back runs and anomaly rows shown in the page; all of them are in the Parquet
FAULT_CAP = 1_000  # rows of the page's fault table; all of them are in faults.jsonl (up to 200,000)
CLOUD_CAP = 4_000  # sends drawn per variant in the latency cloud; beyond it they are thinned, and the page says so
# Tables listed row by row in the page: those named after a metric (lost, unseen, ...), but the two the
# jump-back listing already shows.
DETAIL_TABLES = tuple(t for t in TABLES if t in BY_KEY and t not in ("duplicates", "jump_back_runs"))


def _epoch(iso) -> float | None:
    try:
        return datetime.fromisoformat(iso).timestamp() if isinstance(iso, str) and iso else None
    except ValueError:
        return None


def _differing_settings(spec: dict) -> tuple[list[str], dict[str, dict]]:
    """Producer settings that differ between variants: (keys, {variant: {key: value}}), secrets masked
    (spec.yaml holds them masked; a folder written by an older release may not)."""
    common = spec.get("producer") if isinstance(spec.get("producer"), dict) else {}
    variants = spec.get("variants") if isinstance(spec.get("variants"), list) else []
    per = {v["name"]: masked({**common, **(v.get("producer") if isinstance(v.get("producer"), dict) else {})})
           for v in variants if isinstance(v, dict) and "name" in v}
    keys = sorted({k for conf in per.values() for k in conf
                   if len({json.dumps(c.get(k), sort_keys=True, default=str) for c in per.values()}) > 1})
    return keys, per


def _rows(folder: RunFolder, variant: str, table: str) -> list[dict]:
    try:
        found = folder.read_table(variant, table)
    except RunFolderError:
        return []
    return found.to_pylist() if found is not None else []


def target_text(target) -> str:
    """A fault's target as faults.jsonl writes it ("all", {"broker": 1}, {"leader-of": 0}) -> "leader-of 0"."""
    if isinstance(target, dict):
        return ", ".join(f"{k} {v}" for k, v in target.items())
    return str(target)


def fault_rows(faults: list[dict], cap: int = FAULT_CAP) -> list[dict]:
    """The rows of the page's fault table, in their order: all when at most `cap`; else those that went wrong
    (a deviation, an error, not healed) first, up to half the cap, then the earliest others."""
    if len(faults) <= cap:
        return faults
    wrong = [i for i, f in enumerate(faults) if f.get("deviation") or f.get("error") or f.get("outcome") != "healed"]
    keep = set(wrong[: cap // 2])
    keep.update([i for i in range(len(faults)) if i not in keep][: cap - len(keep)])
    return [faults[i] for i in sorted(keep)]


def _fault_periods(faults: list[dict], variant: str) -> list[dict]:
    """Each applied fault of a variant as {start, end, kind, label} in epoch seconds."""
    out = []
    for f in faults:
        start = _epoch(f.get("applied_at"))
        if f.get("variant") != variant or start is None:
            continue
        end = _epoch(f.get("healed_at")) or start + float(f.get("planned_duration") or 0)
        out.append({"start": start, "end": end, "kind": str(f.get("kind", "")),
                    "label": f"{f.get('kind')} #{f.get('id')} on {target_text(f.get('target'))}"})
    return out


def _transactions(folder: RunFolder, variant: str) -> dict | None:
    """A transactional variant's transactions: counts by outcome and cause, the ones that did not commit
    (capped), and how many records each final read saw. None for a variant without transactions."""
    try:
        table = folder.read_transactions(variant)
        uncommitted = folder.uncommitted_records(variant)
    except RunFolderError:
        return None
    if table is None:
        return None
    rows = table.to_pylist()
    outcomes, causes = {}, {}
    for r in rows:
        outcomes[r["outcome"]] = outcomes.get(r["outcome"], 0) + 1
        if r.get("cause"):
            causes[r["cause"]] = causes.get(r["cause"], 0) + 1
    keep = ("txn", "session", "outcome", "cause", "error", "sends")
    other = [{k: r.get(k) for k in keep} for r in rows if r["outcome"] != TxnOutcome.COMMITTED
             and r.get("cause") != TxnCause.PLANNED]
    return {"total": len(rows), "outcomes": outcomes, "causes": causes, "read_uncommitted": uncommitted,
            "not_committed": _capped(other)}


def _consumer(folder: RunFolder, variant: str) -> dict | None:
    """A consumer variant's group: what its members saw and did (events by kind), the dedup-window
    distances, and the consumer tables (capped). None for a variant without a group."""
    try:
        sink = folder.read_sink(variant)
    except RunFolderError:
        return None
    if sink is None:
        return None
    events = sink["events"]["event"].value_counts().to_dict() if len(sink["events"]) else {}
    window = _rows(folder, variant, "dedup_window")
    return {"events": {str(k): int(n) for k, n in sorted(events.items())},
            "window_ms": [r["ms"] for r in window], "window_records": [r["records"] for r in window],
            "tables": {t: _capped(_rows(folder, variant, t)) for t in CONSUMER_TABLES if t != "dedup_window"}}


def _thin(indices: np.ndarray, budget: int) -> tuple[np.ndarray, int]:
    """Every k-th of `indices` (in send order), k the smallest that keeps at most `budget`; and k."""
    every = max(1, math.ceil(len(indices) / max(budget, 1)))
    return indices[::every], every


def _latency_cloud(folder: RunFolder, variant: str) -> dict | None:
    """Each send's latency for the report's point cloud: {points: [(sent_at epoch s, latency ms, outcome)],
    sends, counts: {outcome: n}, every: {outcome: k}}, the sends not acknowledged kept first (at most half of CLOUD_CAP, thinned
    alike beyond it), then 1 in k acknowledged ones. None without a delivery log holding send times and
    latencies (a damaged one is for analyze to name; older releases wrote no latency)."""
    try:
        table = folder.read_dataset(folder.acks_path(variant), "acks")
    except RunFolderError:
        return None
    if not {"sent_at", "latency_ms"} <= set(table.schema.names):
        return None
    table = table.filter(pc.and_(pc.is_valid(table["sent_at"]), pc.is_valid(table["latency_ms"])))
    sent = pc.cast(pc.cast(table["sent_at"], pa.timestamp("ms")), pa.int64()).to_numpy(zero_copy_only=False)
    latency = table["latency_ms"].to_numpy(zero_copy_only=False)
    outcome = np.asarray(table["outcome"].to_pylist(), dtype=object)
    order = np.argsort(sent, kind="stable")
    acked = outcome[order] == Outcome.ACKED.value
    others, every_other = _thin(order[~acked], CLOUD_CAP // 2)
    kept, every_acked = _thin(order[acked], CLOUD_CAP - len(others))
    every = {o.value: (every_acked if o == Outcome.ACKED else every_other) for o in Outcome}
    keep = np.sort(np.concatenate([others, kept]))
    counts = {o.value: int(np.count_nonzero(outcome == o.value)) for o in Outcome}
    return {"points": [(float(sent[i]) / 1000, float(latency[i]), str(outcome[i])) for i in keep],
            "sends": int(len(order)), "counts": counts, "every": every}


def load(folder: RunFolder) -> dict:
    """The view of one run: summary, settings, faults and, per variant, its tables."""
    summary = folder.read_summary()
    if summary is None:
        raise RunFolderError(f"{folder.path}: no summary.json; run `kafka-chaos analyze {folder.path}` first")
    spec = folder.read_spec() or {}
    faults = [{**f, "target": target_text(f.get("target"))} for f in folder.read_faults()]
    keys, settings = _differing_settings(spec)
    for name in summary.get("variants", {}):  # each a folder of this run, refused before anything is read
        entry_name(name, "variant", folder.path / SUMMARY)
        folder.variant_dir(name)
    variants = {}
    for name in summary.get("variants", {}):
        runs = _rows(folder, name, "jump_back_runs")
        variants[name] = {
            "series": _rows(folder, name, "series"),
            "partitions": _rows(folder, name, "partitions"),
            "runs": runs[:LISTING_CAP], "runs_total": len(runs), "sizes": [r["size"] for r in runs],
            "details": {t: _capped(_rows(folder, name, t)) for t in DETAIL_TABLES},
            "faults": _fault_periods(faults, name),
            "has_tables": folder.table_path(name, "partitions").exists(),
            "transactions": _transactions(folder, name),
            "consumer": _consumer(folder, name),
            "cloud": _latency_cloud(folder, name),
        }
    for var in summary.get("variants", {}).values():  # one status per check, whatever release wrote it
        var["expectations"] = [{**c, "status": status_of(c)} for c in var.get("expectations", [])]
        var.setdefault("allowed", [])
    return {"summary": summary, "verdict": summary.get("verdict") or run_verdict(summary),
            "evidence": commands(folder, summary), "fault_lines": fault_lines(folder, summary),
            "setting_keys": keys, "settings": settings, "faults": fault_rows(faults), "faults_total": len(faults),
            "variants": variants,
            "tables": list(TABLES) + [t for t in CONSUMER_TABLES if any(v["consumer"] for v in variants.values())],
            "ranking": ranking(summary.get("variants", {}))}


def load_aggregate(folder: SeriesFolder) -> dict:
    """The view of a series of repeated runs: its aggregate, the settings of its variants, the ranking."""
    doc = folder.read_aggregate()
    spec = {}
    runs = [folder.run_folder(run) for run in doc.get("runs", [])]  # each beside the series, or refused
    for run in runs:  # the settings as the runs were made (every run has the same spec)
        try:
            spec = run.read_spec() or {}
        except RunFolderError:
            continue
        if spec:
            break
    keys, settings = _differing_settings(spec)
    allowed = {v["name"]: v["allow"] for v in spec.get("variants", []) if isinstance(v, dict) and v.get("allow")}
    return {"aggregate": doc, "setting_keys": keys, "settings": settings, "allowed": allowed,
            "ranking": ranking(doc.get("variants", {}), aggregated=True)}


def _capped(rows: list[dict]) -> dict:
    return {"rows": rows[:LISTING_CAP], "total": len(rows)}


def load_index(out: Path) -> list[dict]:
    """Every run of a folder, newest first: its folder name (the link), summary and verdict."""
    runs = []
    for folder in runs_in(out):
        try:
            s = folder.read_summary()
        except RunFolderError:
            continue
        if s is not None:
            runs.append({"folder": folder.path.name, "summary": s, "verdict": s.get("verdict") or run_verdict(s)})
    runs.sort(key=lambda r: (str(r["summary"].get("started_at") or ""), r["folder"]), reverse=True)
    return runs


def load_series(out: Path) -> list[dict]:
    """Every series of repeated runs of a folder, newest first: its folder name and aggregate."""
    found = []
    for folder in series_in(out):
        try:
            found.append({"folder": folder.path.name, "aggregate": folder.read_aggregate()})
        except RunFolderError:
            continue
    found.sort(key=lambda r: (str(r["aggregate"].get("started_at") or ""), r["folder"]), reverse=True)
    return found


def load_compare(folders: list[RunFolder]) -> dict:
    """Runs side by side: each run's summary, and the variants they share by name (in the first run's order,
    then the others'). RunFolderError (exit 2) naming a folder that is not an analysed run."""
    runs = []
    for folder in folders:
        summary = folder.read_summary()
        if summary is None:
            raise RunFolderError(f"{folder.path}: not a run folder (no summary.json); compare takes folders that "
                                 "`kafka-chaos run` or `analyze` wrote")
        runs.append({"folder": folder.path.name, "path": str(folder.path), "summary": summary})
    names: list[str] = []
    for r in runs:
        names += [n for n in r["summary"].get("variants", {}) if n not in names]
    return {"runs": runs, "variants": names}
