"""Repeated runs summarised, on synthetic summaries with numbers worked out by hand."""

import pytest

from harness.aggregate import aggregate, metric_stats, t95
from harness.analysis import metrics
from harness.summary import build, variant_entry


def run(run_id, duplicates, acked=100_000, lost=0, status="complete", unavailable=1.0):
    counts = {**{k: 0 for k in metrics.KEYS}, "sent": acked, "acked": acked, "duplicates": duplicates, "lost": lost}
    v = variant_entry({**counts, "unavailable_s": unavailable, "latency_ms": {"p50": 1, "p95": 2, "p99": 3, "max": 9}},
                      {}, [])
    return build(run_id, "exp", status, {"off": v}, {"seed": int(run_id[-1])})


def test_rate_and_interval_over_runs():
    # Duplicates 0, 10, 20 per 100,000 acked: rates 0, 10, 20; mean 10, sd 10, t(2) = 4.303,
    # half-width 4.303 * 10 / sqrt(3) = 24.843 -> [0 (clipped), 34.843].
    s = metric_stats([0, 10, 20], [100_000] * 3)
    assert s == {"runs_with": 2, "mean": 10.0, "min": 0, "max": 20, "rate_per_100k": 10.0,
                 "ci95": [0.0, pytest.approx(34.843, abs=0.001)]}
    assert metric_stats([5], [50_000])["ci95"] is None and metric_stats([5], [50_000])["rate_per_100k"] == 10.0
    assert t95(4) == 2.776 and t95(100) == 1.96


def test_aggregate_counts_complete_runs_and_their_verdicts():
    summaries = [run("r1", 0), run("r2", 10), run("r3", 20, lost=2), run("r4", 99, status="interrupted")]
    a = aggregate(summaries)
    off = a["variants"]["off"]
    assert off["runs"] == 3 and off["acked"] == 300_000 and off["failed_runs"] == 1  # lost is fatal
    assert off["metrics"]["duplicates"]["rate_per_100k"] == 10.0
    assert off["metrics"]["lost"]["runs_with"] == 1
    assert off["unavailable_s"] == {"mean": 1.0, "min": 1.0, "max": 1.0}
    assert a["verdicts"] == {"pass": 2, "fail": 1, "interrupted": 1}
    assert [r["run_id"] for r in a["runs"]] == ["r1", "r2", "r3", "r4"]
    assert set(off["metrics"]) == {m.key for m in metrics.METRICS if not m.accounting and m.key != "acked"}
