"""Repeated runs of one experiment, summarised: how often each anomaly happens, and at what rate (pure).

    aggregate(summaries) -> aggregate.json's content

Per variant and count metric: `runs_with` (runs in which it was above 0) with `runs_with_ci95` (the Wilson
95 % interval of that share of runs: how often a bug that needs luck shows), `mean` with `mean_ci95`
[low, high], `min`, `max`, `rate_per_100k` (per 100,000 acknowledged sends, over all runs) and
`ci95` [low, high] for that rate. The intervals treat runs as the independent units (anomalies
within a run come in bursts: one lost ack duplicates a whole batch), so they are Student's t over
the per-run values, clipped at 0; with one run there is no interval.

The price of each variant beside it: `anomaly_rate` (duplicates and fatal anomalies per 100,000
acknowledged, the same statistics), `acked_per_s` (throughput: acknowledged sends per second of
produce time), `unavailable_s`, `latency_p99_ms` and, for transactional variants, `lso_stall_s` (mean, min,
max over runs; `lso_stalled_runs`: runs whose last stable offset never caught up), and `client_failures` (per
fatal client error, the runs it ended a producer in, with their interval). `ranking()` orders
variants by anomaly rate against throughput and p99 latency, for one run's summary or an aggregate.
"""

from __future__ import annotations

import math
import statistics

from . import verdict
from .analysis.metrics import METRICS
from .status import COMPLETE

# Student's t, two-sided 95 %, by degrees of freedom (1..30); beyond, the normal 1.96 is close enough.
_T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def t95(df: int) -> float:
    return _T95[df - 1] if df <= len(_T95) else 1.96


def _rate(count: int, acked: int) -> float:
    return count * 100_000 / acked if acked else 0.0


def interval(values: list[float]) -> list[float] | None:
    """Student's t 95 % interval of the mean of per-run values, clipped at 0; None for one run."""
    n = len(values)
    if n < 2:
        return None
    half = t95(n - 1) * statistics.stdev(values) / math.sqrt(n)
    mean = statistics.fmean(values)
    return [round(max(0.0, mean - half), 3), round(mean + half, 3)]


def share_interval(hits: int, n: int) -> list[float] | None:
    """Wilson score 95 % interval of the share hits/n (it stays inside [0, 1] and is not empty at 0 of n or n
    of n, where the normal approximation is); None for no runs."""
    if n == 0:
        return None
    z, p = 1.96, hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [round(max(0.0, centre - half), 3), round(min(1.0, centre + half), 3)]


def metric_stats(counts: list[int], acked: list[int]) -> dict:
    rates = [_rate(c, a) for c, a in zip(counts, acked)]
    runs_with = sum(1 for c in counts if c > 0)
    return {"runs_with": runs_with, "runs_with_ci95": share_interval(runs_with, len(counts)),
            "mean": round(statistics.fmean(counts), 3),
            "mean_ci95": interval([float(c) for c in counts]),
            "min": min(counts), "max": max(counts), "rate_per_100k": round(_rate(sum(counts), sum(acked)), 3),
            "ci95": interval(rates)}


# What the ranking counts as anomalies: every extra copy, and every fatal anomaly.
RANKED = ("duplicates", *(m.key for m in METRICS if m.fatal))


def anomaly_count(variant: dict) -> int:
    return sum(int(variant.get(k) or 0) for k in RANKED)


def acked_per_s(variant: dict) -> float | None:
    seconds = variant.get("produce_seconds")
    return round(variant.get("acked", 0) / seconds, 1) if seconds else None


def client_failures(runs: list[dict]) -> dict:
    """Per error the client failed for good with (client_fatal: the plain producer ended; instances_replaced:
    the transactional workload made a new instance each time): in how many runs, with its Wilson interval, and
    how many times over all runs. A known bug that shows as a fatal client error is counted here."""
    times: dict[str, list[int]] = {}
    for r in runs:
        seen = dict(r.get("instances_replaced") or {})
        if r.get("client_fatal"):
            seen[r["client_fatal"]] = seen.get(r["client_fatal"], 0) + 1
        for name, count in seen.items():
            times.setdefault(name, []).append(count)
    return {name: {"runs_with": len(counts), "runs_with_ci95": share_interval(len(counts), len(runs)),
                   "times": sum(counts)} for name, counts in sorted(times.items())}


def aggregate(summaries: list[dict]) -> dict:
    """Summaries of the runs of one experiment (complete or not) -> the aggregate."""
    judged = [s for s in summaries if s.get("status") == COMPLETE]
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
            # How long a jump-back run is on average (the seed article's linger finding).
            "duplicates_per_jump_back_run": _ratio(sum(int(r.get("duplicates", 0)) for r in runs),
                                                   sum(int(r.get("jump_back_runs", 0)) for r in runs)),
            "anomaly_rate": metric_stats([anomaly_count(r) for r in runs], acked),
            "acked_per_s": _spread([acked_per_s(r) for r in runs]),
            "unavailable_s": _spread([r.get("unavailable_s") for r in runs]),
            "latency_p99_ms": _spread([(r.get("latency_ms") or {}).get("p99") for r in runs]),
            "client_failures": client_failures(runs),
            "lso_stall_s": _spread([r.get("lso_stall_s") for r in runs]),
            "lso_stalled_runs": sum(1 for r in runs if r.get("lso_stalled")),
        }
    return {
        "experiment": summaries[0].get("experiment") if summaries else "",
        "verdict": verdict.series_verdict([s.get("verdict") for s in summaries]),
        "runs": [{"run_id": s.get("run_id"), "seed": s.get("seed"), "status": s.get("status"),
                  "verdict": s.get("verdict")} for s in summaries],
        "verdicts": {v: sum(1 for s in summaries if s.get("verdict") == v)
                     for v in dict.fromkeys(s.get("verdict") for s in summaries)},
        "variants": variants,
    }


def ranking(variants: dict, aggregated: bool = False) -> list[dict]:
    """Variants ordered by anomaly rate (per 100,000 acked, lowest first), then p99 latency, then
    throughput (highest first): [{variant, anomalies (= duplicates + fatal), duplicates, fatal,
    anomaly_rate, anomaly_rate_ci95, acked_per_s, latency_p99_ms}].

    variants: a summary's (one run) or an aggregate's (aggregated=True: means over runs)."""
    rows = []
    for name, v in variants.items():
        if aggregated:  # an aggregate.json of an older release may lack a statistic: counted as 0
            rate, stats = v.get("anomaly_rate") or {}, v.get("metrics") or {}

            def mean(key: str) -> float:
                return (stats.get(key) or {}).get("mean") or 0

            row = {"variant": name, "anomalies": rate.get("mean") or 0, "anomaly_rate": rate.get("rate_per_100k") or 0,
                   "duplicates": mean("duplicates"), "fatal": round(sum(mean(k) for k in RANKED[1:]), 3),
                   "anomaly_rate_ci95": rate.get("ci95"), "acked_per_s": (v.get("acked_per_s") or {}).get("mean"),
                   "latency_p99_ms": (v.get("latency_p99_ms") or {}).get("mean")}
        elif v.get("incomplete"):
            continue
        else:
            count = anomaly_count(v)
            row = {"variant": name, "anomalies": count, "anomaly_rate": round(_rate(count, v.get("acked", 0)), 3),
                   "duplicates": int(v.get("duplicates") or 0), "fatal": count - int(v.get("duplicates") or 0),
                   "anomaly_rate_ci95": None, "acked_per_s": acked_per_s(v),
                   "latency_p99_ms": (v.get("latency_ms") or {}).get("p99")}
        rows.append(row)
    inf = float("inf")
    return sorted(rows, key=lambda r: (r["anomaly_rate"], inf if r["latency_p99_ms"] is None else r["latency_p99_ms"],
                                       -(r["acked_per_s"] or 0), r["variant"]))


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 1) if b else None


def _spread(values: list) -> dict | None:
    known = [float(v) for v in values if v is not None]
    if not known:
        return None
    return {"mean": round(statistics.fmean(known), 3), "min": min(known), "max": max(known)}
