"""Repeated runs of one experiment, summarised: how often each anomaly happens, and at what rate (pure).

    aggregate(summaries) -> aggregate.json's content

Per variant and count metric: `runs_with` (runs in which it was above 0), `mean`, `min`, `max`,
`rate_per_100k` (per 100,000 acknowledged sends, over all runs) and `ci95` [low, high] for that
rate. The interval treats runs as the independent units (anomalies within a run come in bursts:
one lost ack duplicates a whole batch), so it is Student's t over the per-run rates, clipped at 0;
with one run there is no interval.
"""

from __future__ import annotations

import math
import statistics

from . import verdict
from .analysis.metrics import METRICS

# Student's t, two-sided 95 %, by degrees of freedom (1..30); beyond, the normal 1.96 is close enough.
_T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def t95(df: int) -> float:
    return _T95[df - 1] if df <= len(_T95) else 1.96


def _rate(count: int, acked: int) -> float:
    return count * 100_000 / acked if acked else 0.0


def metric_stats(counts: list[int], acked: list[int]) -> dict:
    n = len(counts)
    rates = [_rate(c, a) for c, a in zip(counts, acked)]
    out = {"runs_with": sum(1 for c in counts if c > 0), "mean": round(statistics.fmean(counts), 3),
           "min": min(counts), "max": max(counts), "rate_per_100k": round(_rate(sum(counts), sum(acked)), 3),
           "ci95": None}
    if n > 1:
        half = t95(n - 1) * statistics.stdev(rates) / math.sqrt(n)
        mean = statistics.fmean(rates)
        out["ci95"] = [round(max(0.0, mean - half), 3), round(mean + half, 3)]
    return out


def aggregate(summaries: list[dict]) -> dict:
    """Summaries of the runs of one experiment (complete or not) -> the aggregate."""
    judged = [s for s in summaries if s.get("status") == "complete"]
    variants: dict[str, dict] = {}
    names = list(dict.fromkeys(name for s in judged for name in s.get("variants", {})))
    for name in names:
        runs = [s["variants"][name] for s in judged if name in s.get("variants", {}) and
                not s["variants"][name].get("incomplete")]
        if not runs:
            continue
        acked = [int(r.get("acked", 0)) for r in runs]
        variants[name] = {
            "runs": len(runs), "acked": sum(acked),
            "failed_runs": sum(1 for r in runs if r.get("verdict") == verdict.FAIL),
            "metrics": {m.key: metric_stats([int(r.get(m.key, 0)) for r in runs], acked) for m in METRICS
                        if not m.accounting and m.key != "acked"},
            "unavailable_s": _spread([r.get("unavailable_s") for r in runs]),
            "latency_p99_ms": _spread([(r.get("latency_ms") or {}).get("p99") for r in runs]),
        }
    return {
        "experiment": summaries[0].get("experiment") if summaries else "",
        "runs": [{"run_id": s.get("run_id"), "seed": s.get("seed"), "status": s.get("status"),
                  "verdict": s.get("verdict")} for s in summaries],
        "verdicts": {v: sum(1 for s in summaries if s.get("verdict") == v)
                     for v in dict.fromkeys(s.get("verdict") for s in summaries)},
        "variants": variants,
    }


def _spread(values: list) -> dict | None:
    known = [float(v) for v in values if v is not None]
    if not known:
        return None
    return {"mean": round(statistics.fmean(known), 3), "min": min(known), "max": max(known)}
