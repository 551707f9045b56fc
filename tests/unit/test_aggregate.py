"""Repeated runs summarised, on synthetic summaries with numbers worked out by hand."""

import pytest

from harness.aggregate import aggregate, metric_stats, ranking, t95
from harness.analysis import metrics
from harness.summary import build, variant_entry


def run(run_id, duplicates, acked=100_000, lost=0, status="complete", unavailable=1.0, seconds=10.0):
    counts = {**{k: 0 for k in metrics.KEYS}, "sent": acked, "acked": acked, "duplicates": duplicates, "lost": lost}
    v = variant_entry({**counts, "unavailable_s": unavailable, "latency_ms": {"p50": 1, "p95": 2, "p99": 3, "max": 9},
                       "produce_seconds": seconds}, {}, [])
    return build(run_id, "exp", status, {"off": v}, {"seed": int(run_id[-1])})


def test_rate_and_interval_over_runs():
    # Duplicates 0, 10, 20 per 100,000 acked: rates 0, 10, 20; mean 10, sd 10, t(2) = 4.303,
    # half-width 4.303 * 10 / sqrt(3) = 24.843 -> [0 (clipped), 34.843].
    s = metric_stats([0, 10, 20], [100_000] * 3)
    assert s.pop("runs_with_ci95") == [pytest.approx(0.208, abs=0.001), pytest.approx(0.939, abs=0.001)]
    assert s == {"runs_with": 2, "mean": 10.0, "mean_ci95": [0.0, pytest.approx(34.843, abs=0.001)],
                 "min": 0, "max": 20, "rate_per_100k": 10.0, "ci95": [0.0, pytest.approx(34.843, abs=0.001)]}
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
    assert a["verdict"] == "fail"  # verdict.series_verdict's
    assert [r["run_id"] for r in a["runs"]] == ["r1", "r2", "r3", "r4"]
    assert set(off["metrics"]) == {m.key for m in metrics.METRICS if not m.accounting and m.key != "acked"}


def test_mean_interval_is_over_counts_and_rates_weight_by_acked():
    # Counts 4, 8 with 50,000 and 200,000 acked: rates 8 and 4 per 100k; overall 12 / 250,000 = 4.8.
    # Mean count 6, sd 2.828, t(1) = 12.706: half-width 12.706 * 2.828 / sqrt(2) = 25.412 -> [0, 31.412].
    s = metric_stats([4, 8], [50_000, 200_000])
    assert s["rate_per_100k"] == 4.8
    assert s["mean_ci95"] == [0.0, pytest.approx(31.412, abs=0.001)]
    # Rates 8, 4: mean 6, the same spread -> the same interval.
    assert s["ci95"] == [0.0, pytest.approx(31.412, abs=0.001)]


def test_duplicates_per_jump_back_run_pools_the_runs():
    one, two = run("r1", 100), run("r2", 20)
    one["variants"]["off"]["jump_back_runs"], two["variants"]["off"]["jump_back_runs"] = 1, 5
    assert aggregate([one, two])["variants"]["off"]["duplicates_per_jump_back_run"] == 20.0  # 120 / 6


def test_anomaly_rate_throughput_and_ranking():
    # r1: 10 duplicates + 2 lost per 100,000 acked in 10 s; r2: 30 duplicates, 0 lost in 20 s.
    a = aggregate([run("r1", 10, lost=2), run("r2", 30, seconds=20.0)])["variants"]["off"]
    assert a["anomaly_rate"]["mean"] == 21.0 and a["anomaly_rate"]["rate_per_100k"] == 21.0
    assert a["duplicates_per_jump_back_run"] is None  # these synthetic runs have no jump-back runs
    assert a["acked_per_s"] == {"mean": 7500.0, "min": 5000.0, "max": 10000.0}
    clean = {**run("r3", 0)["variants"]["off"], "latency_ms": {"p99": 50}}
    slow = {**run("r4", 0)["variants"]["off"], "latency_ms": {"p99": 90}}
    dirty = run("r5", 5)["variants"]["off"]
    order = ranking({"dirty": dirty, "slow": slow, "clean": clean})
    assert [r["variant"] for r in order] == ["clean", "slow", "dirty"]
    assert order[2]["anomalies"] == 5 and order[2]["anomaly_rate"] == 5.0 and order[0]["acked_per_s"] == 10000.0
    agg = ranking(aggregate([run("r1", 10, lost=2), run("r2", 30, seconds=20.0)])["variants"], aggregated=True)
    assert agg[0]["anomaly_rate"] == 21.0 and agg[0]["anomaly_rate_ci95"] is not None


def test_fatal_client_errors_count_the_runs_they_ended_a_producer_in_and_the_stall_spreads():
    runs = [run("r1", 0), run("r2", 0), run("r3", 0), run("r4", 0)]
    runs[0]["variants"]["off"].update(client_fatal="_INVALID_MSG", lso_stall_s=0.0)  # the plain producer ended
    runs[1]["variants"]["off"].update(instances_replaced={"OUT_OF_ORDER_SEQUENCE_NUMBER": 2, "_INVALID_MSG": 1},
                                      lso_stall_s=15.0, lso_stalled={"0": [60, 80]})
    runs[2]["variants"]["off"].update(instances_replaced={"OUT_OF_ORDER_SEQUENCE_NUMBER": 1}, lso_stall_s=3.0)
    off = aggregate(runs)["variants"]["off"]
    failures = off["client_failures"]
    assert {k: (f["runs_with"], f["times"]) for k, f in failures.items()} == {
        "OUT_OF_ORDER_SEQUENCE_NUMBER": (2, 3), "_INVALID_MSG": (2, 2)}
    # Wilson, 2 of 4: centre (0.5 + 0.48) / 1.96 = 0.5, half 1.96 * sqrt(0.0625 + 0.06) / 1.96 = 0.35
    assert failures["_INVALID_MSG"]["runs_with_ci95"] == [pytest.approx(0.15, abs=0.001), pytest.approx(0.85, abs=0.001)]
    assert off["lso_stall_s"] == {"mean": 6.0, "min": 0.0, "max": 15.0} and off["lso_stalled_runs"] == 1
    plain = aggregate([run("r1", 0)])["variants"]["off"]
    assert plain["client_failures"] == {} and plain["lso_stall_s"] is None
