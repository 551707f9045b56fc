"""Latency and availability from the delivery log's times: pure numpy, no Spark, no I/O.

Every send has a send time (sent_at) and a report time (sent_at + latency_ms: when the
application got its delivery report). Per topic partition, PartitionTiming keeps

  * latency histograms of acknowledged sends per second of send time, and per fault period,
    in fixed log-spaced bins (about 1 % wide), so partitions add up and quantiles are within 1 %;
  * acknowledgements per TICK (10 ms) of report time;
  * the stretches during which some send was pending (sent, not yet reported), merged.

variant_timing() combines the partitions of a variant: p50 / p95 / p99 / max latency,
`unavailable_s` (the longest stretch with a send pending and no acknowledgement, to TICK), the
same per fault period, and per second p50 / p99 latency for the report's chart.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

EDGES = np.geomspace(0.01, 1e7, 2000)  # ms; bin i holds latencies in (EDGES[i-1], EDGES[i]]
TICK = 10  # ms: the resolution of availability
QUANTILES = {"p50": 0.5, "p95": 0.95, "p99": 0.99}
_I64 = pa.int64()
# What each partition's task returns for the driver to combine (not written to the run folder).
TIMING_TABLES: dict[str, list[tuple[str, pa.DataType]]] = {
    "latency": [("second", _I64), ("bin", _I64), ("count", _I64)],
    "period_latency": [("period", _I64), ("bin", _I64), ("count", _I64)],
    "ack_ticks": [("tick", _I64), ("acks", _I64)],
    "pending": [("start_ms", _I64), ("end_ms", _I64)],
}


def merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Intervals [start, end) -> their union as sorted, disjoint intervals."""
    if len(starts) == 0:
        return starts, ends
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    reach = np.maximum.accumulate(e)
    first = np.ones(len(s), dtype=bool)
    first[1:] = s[1:] > reach[:-1]
    idx = np.flatnonzero(first)
    return s[idx], np.maximum.reduceat(e, idx)


def _add(counts: dict, keys: np.ndarray) -> None:
    if len(keys) == 0:
        return
    k, n = np.unique(keys, return_counts=True)
    for key, c in zip(k.tolist(), n.tolist()):
        counts[key] = counts.get(key, 0) + c


class PartitionTiming:
    def __init__(self, periods: list[tuple[int, int, int]] = ()):
        self.periods = list(periods)  # (fault id, start ms, end ms)
        self.seconds: dict[tuple[int, int], int] = {}  # (send second, latency bin) -> acked sends
        self.in_periods: dict[tuple[int, int], int] = {}  # (fault id, latency bin) -> acked sends
        self.ack_ticks: dict[int, int] = {}  # report tick -> acks
        self.pending = (np.zeros(0, np.int64), np.zeros(0, np.int64))

    def feed(self, sent_ms: np.ndarray, latency_ms: np.ndarray, acked: np.ndarray) -> None:
        """One batch of sends; a null latency (no report ever came) arrives as NaN and is left out."""
        known = ~np.isnan(latency_ms)
        sent, latency, acked = sent_ms[known], latency_ms[known], acked[known]
        report = sent + np.ceil(latency).astype(np.int64)
        self.pending = merge(np.concatenate([self.pending[0], sent]), np.concatenate([self.pending[1], report]))
        bins = np.searchsorted(EDGES, latency[acked])
        s_acked = sent[acked]
        _add(self.seconds, (s_acked // 1000) * len(EDGES) * 2 + bins)
        _add(self.ack_ticks, report[acked] // TICK)
        for fid, start, end in self.periods:
            inside = (s_acked >= start) & (s_acked < end)
            if inside.any():
                _add(self.in_periods, fid * len(EDGES) * 2 + bins[inside])

    def columns(self) -> dict[str, dict[str, list]]:
        """Findings tables (see TIMING_TABLES) of this partition."""
        width = len(EDGES) * 2
        sec = sorted(self.seconds.items())
        per = sorted(self.in_periods.items())
        ticks = sorted(self.ack_ticks.items())
        return {
            "latency": {"second": [k // width for k, _ in sec], "bin": [k % width for k, _ in sec],
                        "count": [c for _, c in sec]},
            "period_latency": {"period": [k // width for k, _ in per], "bin": [k % width for k, _ in per],
                               "count": [c for _, c in per]},
            "ack_ticks": {"tick": [k for k, _ in ticks], "acks": [c for _, c in ticks]},
            "pending": {"start_ms": self.pending[0].tolist(), "end_ms": self.pending[1].tolist()},
        }


def quantiles(bins: np.ndarray, counts: np.ndarray) -> dict[str, float] | None:
    """p50 / p95 / p99 / max (ms) of a histogram given as (bin, count) pairs; None when empty."""
    total = int(counts.sum())
    if total == 0:
        return None
    order = np.argsort(bins)
    bins, cum = bins[order], np.cumsum(counts[order])
    upper = EDGES[np.minimum(bins, len(EDGES) - 1)]
    out = {name: float(upper[np.searchsorted(cum, q * total)]) for name, q in QUANTILES.items()}
    out["max"] = float(upper[-1])
    return {k: round(v, 2) for k, v in out.items()}


def longest_unavailable(starts: np.ndarray, ends: np.ndarray, ack_ticks: np.ndarray,
                        within: tuple[int, int] | None = None) -> tuple[float, int | None]:
    """(seconds, start ms) of the longest stretch inside the pending intervals with no acknowledgement.

    Acknowledgements are known to a TICK: a tick with one splits the stretch around it."""
    if within is not None:
        starts, ends = np.maximum(starts, within[0]), np.minimum(ends, within[1])
        keep = ends > starts
        starts, ends = starts[keep], ends[keep]
    best, at = 0, None
    acks_ms = np.sort(ack_ticks) * TICK
    for s, e in zip(starts.tolist(), ends.tolist()):
        lo, hi = np.searchsorted(acks_ms, s - TICK + 1), np.searchsorted(acks_ms, e)
        cuts = acks_ms[lo:hi]
        # Free stretches: from s to the first ack tick, between ack ticks, from the last tick's end to e.
        a = np.concatenate(([s], np.minimum(cuts + TICK, e)))
        b = np.concatenate((np.maximum(cuts, s), [e]))
        gaps = b - a
        k = int(np.argmax(gaps))
        if gaps[k] > best:
            best, at = int(gaps[k]), int(a[k])
    return round(best / 1000, 2), at


def variant_timing(tables: dict, periods: list[dict]) -> dict:
    """Partitions' timing tables (pyarrow) -> latency_ms, unavailable_s and per-fault-period figures,
    plus per-second p50/p99 latency ({second: (p50, p99)}) for the series."""
    lat = tables["latency"]
    sec, bins, counts = (lat.column(c).to_numpy() for c in ("second", "bin", "count"))
    pend = tables["pending"]
    starts, ends = merge(pend.column("start_ms").to_numpy(), pend.column("end_ms").to_numpy())
    ticks = np.unique(tables["ack_ticks"].column("tick").to_numpy())
    order = np.argsort(sec, kind="stable")
    keys, first = np.unique(sec[order], return_index=True)
    seconds = {}
    for s, b, c in zip(keys.tolist(), np.split(bins[order], first[1:]), np.split(counts[order], first[1:])):
        q = quantiles(b, c)
        seconds[s] = (q["p50"], q["p99"])
    unavailable, since = longest_unavailable(starts, ends, ticks)
    pl = tables["period_latency"]
    pid, pbins, pcounts = (pl.column(c).to_numpy() for c in ("period", "bin", "count"))
    by_period = []
    for p in periods:
        mask = pid == p["id"]
        down, _ = longest_unavailable(starts, ends, ticks, within=(p["start_ms"], p["end_ms"]))
        by_period.append({"id": p["id"], "kind": p["kind"], "latency_ms": quantiles(pbins[mask], pcounts[mask]),
                          "unavailable_s": down})
    return {"latency_ms": quantiles(bins, counts), "unavailable_s": unavailable, "unavailable_from_ms": since,
            "fault_periods": by_period, "seconds": seconds}
