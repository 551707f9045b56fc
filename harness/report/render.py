"""The HTML reports: one per run (<run>/index.html) and one for a folder of runs (index.html).

Both are single self-contained files (inline CSS and SVG, no script, no network request),
rendered by jinja2 with autoescaping: every value from data or experiment files is escaped.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pyarrow.parquet as pq
import yaml
from jinja2 import Environment, PackageLoader, select_autoescape

from ..summary import ACCOUNTING, TABLE_COLUMNS
from . import charts

LISTING_CAP = 200


def _env() -> Environment:
    return Environment(loader=PackageLoader("harness.report", "templates"),
                       autoescape=select_autoescape(["html", "j2"]), trim_blocks=True, lstrip_blocks=True)


def read_faults(run_dir: Path) -> list[dict]:
    path = run_dir / "faults.jsonl"
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return sorted(rows, key=lambda r: (r.get("variant", ""), r.get("planned_at", 0), r.get("id", 0)))


def _table(path: Path) -> list[dict]:
    return pq.read_table(path).to_pylist() if path.exists() else []


def _epoch(iso: str | None) -> float | None:
    return datetime.fromisoformat(iso).timestamp() if iso else None


def _differing_settings(spec: dict) -> tuple[list[str], dict[str, dict]]:
    """Producer settings that differ between variants: (keys, {variant: {key: value}})."""
    common = spec.get("producer") or {}
    per = {v["name"]: {**common, **(v.get("producer") or {})} for v in spec.get("variants", [])}
    keys = sorted({k for conf in per.values() for k in conf
                   if len({json.dumps(c.get(k)) for c in per.values()}) > 1})
    return keys, per


def _dense(rows: list[dict]) -> list[dict]:
    """Per-second rows with the silent seconds in between filled with zeros (a stall shows as a stall)."""
    if not rows:
        return []
    by_second = {r["second"]: r for r in rows}
    lo, hi = min(by_second), max(by_second)
    return [by_second.get(t, {"second": t, "records": 0, "duplicates": 0, "jump_backs": 0}) for t in range(lo, hi + 1)]


def _variant_view(run_dir: Path, name: str, faults: list[dict]) -> dict:
    details = run_dir / name / "anomalies"
    series = _dense(_table(details / "series.parquet"))
    runs = sorted(_table(details / "jump_back_runs.parquet"), key=lambda r: (r["partition"], r["first_offset"]))
    view = {"runs": runs[:LISTING_CAP], "more_runs": max(0, len(runs) - LISTING_CAP),
            "partitions": _table(details / "partitions.parquet"), "charts": [], "details": details.exists()}
    if series:
        t0, t1 = series[0]["second"], series[-1]["second"] + 1
        bars = [(_epoch(f["applied_at"]), _epoch(f.get("healed_at")) or _epoch(f["applied_at"]) + f["planned_duration"],
                 f"{f['kind']} #{f['id']} on {f['target']}")
                for f in faults if f.get("variant") == name and f.get("applied_at")]
        view["charts"].append(charts.timeline(
            f"{name}: records written per second (fault periods shaded)", t0, t1,
            {"records": [(r["second"], r["records"]) for r in series]}, bars))
        view["charts"].append(charts.timeline(
            f"{name}: duplicates and jump-backs per second", t0, t1,
            {"duplicates": [(r["second"], r["duplicates"]) for r in series],
             "jump-backs": [(r["second"], r["jump_backs"]) for r in series]}, bars))
    view["charts"].append(charts.histogram(f"{name}: jump-back sizes ({len(runs)} runs)", [r["size"] for r in runs]))
    return view


def render(run_dir: Path) -> Path:
    summary = json.loads((run_dir / "summary.json").read_text())
    spec = yaml.safe_load((run_dir / "spec.yaml").read_text()) if (run_dir / "spec.yaml").exists() else {}
    faults = read_faults(run_dir)
    keys, settings = _differing_settings(spec or {})
    start, end = _epoch(summary.get("started_at")), _epoch(summary.get("ended_at"))
    html = _env().get_template("run.html.j2").render(
        s=summary, columns=TABLE_COLUMNS, accounting=ACCOUNTING, faults=faults,
        duration=f"{end - start:.0f} s" if start and end else "",
        setting_keys=keys, settings=settings,
        variants={name: _variant_view(run_dir, name, faults) for name in summary["variants"]},
        cap=LISTING_CAP)
    out = run_dir / "index.html"
    out.write_text(html)
    return out


def render_index(folder: Path) -> Path:
    """folder/index.html: every run in the folder, newest first, and the trend of duplicates and lost."""
    runs = []
    for path in folder.glob("*/summary.json"):
        try:
            runs.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    runs.sort(key=lambda s: (s.get("started_at") or "", s.get("run_id", "")), reverse=True)
    for s in runs:
        checks = [e for v in s.get("variants", {}).values() for e in v.get("expectations", [])]
        s["verdict"] = ("error" if s.get("status") == "error" else "interrupted" if s.get("status") == "interrupted"
                        else "pass" if all(e["passed"] for e in checks) else "FAIL")
    oldest_first = list(reversed(runs))
    names = sorted({f"{s['experiment']}/{v}" for s in runs for v in s.get("variants", {})})
    trend = []
    for metric in ("duplicates", "lost"):
        lines = {n: [s["variants"].get(n.split("/", 1)[1], {}).get(metric) if s["experiment"] == n.split("/", 1)[0]
                     else None for s in oldest_first] for n in names}
        trend.append(charts.trend(f"{metric} per variant, oldest run left", [s["run_id"] for s in oldest_first], lines))
    html = _env().get_template("index.html.j2").render(runs=runs, trend=trend)
    out = folder / "index.html"
    out.write_text(html)
    return out
