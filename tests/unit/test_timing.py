"""Latency and availability definitions on hand-made send times, numbers worked out by hand."""

import numpy as np
import pyarrow as pa
import pytest

from harness.analysis.anomalies import check_partition
from harness.analysis.timing import EDGES, TICK, PartitionTiming, longest_unavailable, merge, quantiles, \
    variant_timing


def test_merge_intervals():
    s, e = merge(np.array([5, 0, 2, 20, 21]), np.array([9, 3, 4, 22, 30]))
    assert (s.tolist(), e.tolist()) == ([0, 5, 20], [4, 9, 30])


def test_quantiles_are_within_one_percent():
    lat = np.array([1.0] * 50 + [10.0] * 45 + [100.0] * 4 + [5000.0])
    bins = np.searchsorted(EDGES, lat)
    b, c = np.unique(bins, return_counts=True)
    q = quantiles(b, c)
    assert q["p50"] == pytest.approx(1.0, rel=0.011) and q["p95"] == pytest.approx(10.0, rel=0.011)
    assert q["p99"] == pytest.approx(100.0, rel=0.011) and q["max"] == pytest.approx(5000.0, rel=0.011)
    assert quantiles(np.zeros(0, int), np.zeros(0, int)) is None


def test_longest_unavailable_is_cut_by_acknowledgements():
    # Pending from 0 to 1000 ms; acks in the ticks starting at 100 and 700 ms: free stretches
    # 0-100 (100 ms), 110-700 (590 ms), 710-1000 (290 ms).
    assert longest_unavailable(np.array([0]), np.array([1000]), np.array([10, 70])) == (0.59, 110)
    # Nothing pending: nothing unavailable, whatever the acks.
    assert longest_unavailable(np.zeros(0, int), np.zeros(0, int), np.array([1, 2])) == (0.0, None)
    # Within a fault period only.
    assert longest_unavailable(np.array([0]), np.array([1000]), np.array([10, 70]), within=(650, 1000)) == (0.29, 710)


def test_a_stall_shows_as_unavailable_and_in_the_latency():
    # 100 sends at 1 ms apart acked after 5 ms, then 50 sends acked only after a 3 s stall.
    t = PartitionTiming(periods=[(7, 1_000_100, 1_003_000)])
    sent = np.concatenate([np.arange(0, 100), np.arange(100, 150)]).astype(np.int64)
    latency = np.concatenate([np.full(100, 5.0), 3200.0 - np.arange(50)])
    t.feed(sent + 1_000_000, latency, np.ones(150, bool))
    tables = {name: pa.table({k: pa.array(v, pa.int64()) for k, v in cols.items()})
              for name, cols in t.columns().items()}
    out = variant_timing(tables, [{"id": 7, "kind": "lost-acks", "start_ms": 1_000_100, "end_ms": 1_003_000}])
    # Last quick ack at 99+5 = 104 ms, the stalled ones all report at 100+3200 = 3300 ms: pending
    # throughout, no ack from the tick after 104 (110) to the tick of 3300.
    assert out["unavailable_s"] == pytest.approx(3.19, abs=0.01)
    assert out["latency_ms"]["p50"] == pytest.approx(5.0, rel=0.011)
    assert out["latency_ms"]["max"] == pytest.approx(3200.0, rel=0.011)
    period = out["fault_periods"][0]
    assert period["id"] == 7 and period["latency_ms"]["p50"] > 3000 and period["unavailable_s"] > 2.8


def test_delivery_log_times_reach_the_partition_timing():
    n = 10
    acks = pa.table({"partition": pa.array([0] * n, pa.int32()), "value": pa.array(range(n), pa.int64()),
                     "outcome": ["acked"] * (n - 1) + ["unknown"], "offset": pa.array(list(range(n - 1)) + [None],
                                                                                       pa.int64()),
                     "sent_at": pa.array([1_000_000 + 10 * i for i in range(n)], pa.timestamp("ms")),
                     "latency_ms": pa.array([2.0] * (n - 1) + [None], pa.float64())})
    log = pa.table({"partition": pa.array([0] * (n - 1), pa.int32()), "offset": pa.array(range(n - 1), pa.int64()),
                    "value": pa.array(range(n - 1), pa.int64())})
    f = check_partition(0, [acks], [log])
    assert sum(f.tables["ack_ticks"]["acks"]) == n - 1  # the unknown send has no report time: left out
    assert sum(f.tables["latency"]["count"]) == n - 1
    assert f.tables["pending"]["start_ms"][0] == 1_000_000 and TICK == 10
