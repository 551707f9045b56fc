"""The consumer definitions: a consumer group's sink against the log read back. Pure pandas/numpy.

    analyze(processed, log, positions, events) -> Consumption (metrics, per-partition rows, tables, figures)

`processed` is the sink's processed table (one row per record processed: partition, offset, value,
member, session, n, processed_at in epoch ms), `log` the topic as read back (partition, offset,
value), `positions` each partition's final position (where the group would start again: its
committed offset, or the offset idempotent-sink stored), `events` what the members saw (assign, ...).
A record is a log position (partition, offset); a value written twice by the producer is two records.

Definitions (the README's Words; metrics.py has one line for each):
  reprocessed   records processed more than once (counted once each, however many repeats)
  skipped       records in the log never processed whose partition's final position is past them:
                the group moved on without them (at-most-once's loss)
  unconsumed    records never processed at or beyond the final position: the group stopped first
  poll skip     within one member session (a member process between two assignment changes or seeks of
                its own), its next record of a partition is beyond the successor in the log of the one
                before (Jepsen's poll-skip); a nonmonotonic poll is at or before it
  rebalances    assignments the members were given (each on_assign callback, every member counted)
  client hangs  members said to hang in a client call (`hung` events; each member counted once)
  dedup window  for each repeat of a reprocessed record (its 2nd, 3rd, ... processing), the distance to
                the record's first processing: in ms (processed_at), and in records (positions in the
                group's processing order, by processed_at, then member and its counter) -- the size of a
                dedup cache of the last W records that would have caught it. `window(d, q)` is the
                smallest window that catches q % of them (nearest rank: sorted d at ceil(q/100*n) - 1).

Why pandas on the driver rather than a Spark task per partition (anomalies.py): the sink is one SQLite
file the group wrote (rows ~ records processed), the window orders the whole group's processing across
partitions, and only two columns of the log are joined.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa

_I32, _I64, _STR, _F64 = pa.int32(), pa.int64(), pa.string(), pa.float64()
# Every consumer table under <variant>/anomalies/, with its columns.
TABLES: dict[str, list[tuple[str, pa.DataType]]] = {
    "reprocessed": [("partition", _I32), ("offset", _I64), ("value", _I64), ("times", _I64), ("members", _STR)],
    "skipped": [("partition", _I32), ("offset", _I64), ("value", _I64)],
    "unconsumed": [("partition", _I32), ("offset", _I64), ("value", _I64)],
    "poll_skips": [("member", _STR), ("session", _I64), ("partition", _I32), ("offset", _I64),
                   ("previous_offset", _I64), ("records", _I64)],
    "nonmonotonic_polls": [("member", _STR), ("session", _I64), ("partition", _I32), ("offset", _I64),
                           ("previous_offset", _I64), ("records", _I64)],
    "dedup_window": [("partition", _I32), ("offset", _I64), ("value", _I64), ("first_member", _STR),
                     ("member", _STR), ("ms", _F64), ("records", _I64)],
}
PER_PARTITION = ("reprocessed", "skipped", "unconsumed", "poll_skips", "nonmonotonic_polls", "processed")
QUANTILES = (50, 99, 100)


@dataclass
class Consumption:
    metrics: dict[str, int]
    partitions: dict[int, dict[str, int]]  # partition -> the PER_PARTITION metrics
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    figures: dict[str, dict | None] = field(default_factory=dict)


def reprocessed(processed: pd.DataFrame) -> pd.DataFrame:
    """Records processed more than once: partition, offset, value, times, members (in processing order)."""
    ordered = in_processing_order(processed)
    key = ["partition", "offset"]
    times = ordered.groupby(key)["offset"].transform("size")
    repeated = ordered[times > 1].assign(times=times[times > 1])
    out = repeated.groupby(key, sort=True).agg(value=("value", "first"), times=("times", "first"),
                                                members=("member", ",".join))
    return out.reset_index()[["partition", "offset", "value", "times", "members"]]


def not_processed(log: pd.DataFrame, processed: pd.DataFrame, positions: dict[int, int | None]) -> tuple:
    """(skipped, unconsumed): log records never processed, below / at or beyond their partition's final
    position (a partition without a position: nothing is past it)."""
    seen = processed[["partition", "offset"]].drop_duplicates()
    merged = log[["partition", "offset", "value"]].merge(seen, on=["partition", "offset"], how="left", indicator=True)
    never = merged[merged["_merge"] == "left_only"].drop(columns="_merge")
    position = never["partition"].map(lambda p: positions.get(int(p))).astype("float64").fillna(-1.0)
    past = never["offset"] < position
    return never[past].reset_index(drop=True), never[~past].reset_index(drop=True)


def in_processing_order(processed: pd.DataFrame) -> pd.DataFrame:
    """The group's processing order (processed_at, then member and its counter), with a `position` column."""
    out = processed.sort_values(["processed_at", "member", "n"], kind="stable").reset_index(drop=True)
    out["position"] = np.arange(len(out), dtype=np.int64)
    return out


def polls(processed: pd.DataFrame, log: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(poll_skips, nonmonotonic_polls) per member session and partition, in the member's own order (n).

    Each record's place in its partition's log (its index among the offsets read back) decides: the next
    record should be the one right after. `records` says how many were jumped over (skip) or how far back
    it went (the previous place - this place + 1: 1 for the same record twice)."""
    cols = ["member", "session", "partition", "offset", "previous_offset", "records"]
    skips, backs = [], []
    for partition, own in processed.groupby("partition", sort=True):
        offsets = np.sort(log.loc[log["partition"] == partition, "offset"].to_numpy(np.int64))
        rows = own.sort_values(["member", "session", "n"], kind="stable")
        place = np.searchsorted(offsets, rows["offset"].to_numpy(np.int64))
        same = ((rows["member"].to_numpy() == np.roll(rows["member"].to_numpy(), 1))
                & (rows["session"].to_numpy() == np.roll(rows["session"].to_numpy(), 1)))
        same[:1] = False
        step = place - np.roll(place, 1)
        offset, previous = rows["offset"].to_numpy(np.int64), np.roll(rows["offset"].to_numpy(np.int64), 1)
        member, session = rows["member"].to_numpy(), rows["session"].to_numpy(np.int64)
        for i in np.flatnonzero(same & (step > 1)):
            skips.append((member[i], session[i], partition, offset[i], previous[i], step[i] - 1))
        for i in np.flatnonzero(same & (step < 1)):
            backs.append((member[i], session[i], partition, offset[i], previous[i], 1 - step[i]))
    return pd.DataFrame(skips, columns=cols), pd.DataFrame(backs, columns=cols)


def dedup_window(processed: pd.DataFrame) -> pd.DataFrame:
    """One row per repeat of a reprocessed record: its distance to the record's first processing, in ms
    and in records (positions in the group's processing order)."""
    ordered = in_processing_order(processed)
    first = ordered.groupby(["partition", "offset"], sort=False).head(1)
    firsts = first.set_index(["partition", "offset"])[["processed_at", "position", "member"]]
    repeats = ordered[ordered.duplicated(["partition", "offset"], keep="first")]
    joined = repeats.join(firsts, on=["partition", "offset"], rsuffix="_first")
    out = pd.DataFrame({
        "partition": joined["partition"], "offset": joined["offset"], "value": joined["value"],
        "first_member": joined["member_first"], "member": joined["member"],
        "ms": joined["processed_at"] - joined["processed_at_first"],
        "records": joined["position"] - joined["position_first"],
    })
    return out.sort_values(["partition", "offset", "records"]).reset_index(drop=True)


def window(distances, q: float):
    """The smallest window that catches q % of the distances (nearest rank); None when there are none."""
    d = np.sort(np.asarray(distances, dtype=np.float64))
    if len(d) == 0:
        return None
    return d[max(0, math.ceil(q / 100.0 * len(d)) - 1)]


def window_figure(distances, whole: bool) -> dict | None:
    """{p50, p99, p100, count} of the distances (ms rounded up to whole ms; records whole)."""
    if len(distances) == 0:
        return None
    out = {f"p{q}": window(distances, q) for q in QUANTILES}
    out = {k: int(math.ceil(v)) if not whole else int(v) for k, v in out.items()}
    return {**out, "count": int(len(distances))}


def rebalances(events: pd.DataFrame) -> int:
    return int((events["event"] == "assign").sum()) if len(events) else 0


def client_hangs(events: pd.DataFrame) -> int:
    """Members said to hang (a `hung` event: a member's watchdog, or the supervisor for a close() after the stop)."""
    return int(events.loc[events["event"] == "hung", "member"].nunique()) if len(events) else 0


def analyze(processed: pd.DataFrame, log: pd.DataFrame, positions: dict[int, int | None],
            events: pd.DataFrame) -> Consumption:
    """Every consumer definition over one variant."""
    again = reprocessed(processed)
    skipped, unconsumed = not_processed(log, processed, positions)
    skips, backs = polls(processed, log)
    windows = dedup_window(processed)
    tables = {"reprocessed": again, "skipped": skipped, "unconsumed": unconsumed, "poll_skips": skips,
              "nonmonotonic_polls": backs, "dedup_window": windows}
    counted = {"reprocessed": again, "skipped": skipped, "unconsumed": unconsumed, "poll_skips": skips,
               "nonmonotonic_polls": backs, "processed": processed}
    partitions = sorted(set(log["partition"].astype(int)) | set(processed["partition"].astype(int)))
    per = {p: {k: int((t["partition"] == p).sum()) for k, t in counted.items()} for p in partitions}
    metrics = {k: int(len(t)) for k, t in counted.items()}
    metrics["rebalances"] = rebalances(events)
    metrics["client_hangs"] = client_hangs(events)
    figures = {"dedup_window_ms": window_figure(windows["ms"].to_numpy(), whole=False),
               "dedup_window_records": window_figure(windows["records"].to_numpy(), whole=True)}
    return Consumption(metrics, per, tables, figures)


def to_arrow(name: str, frame: pd.DataFrame) -> pa.Table:
    """A consumer table with the columns and types TABLES gives it."""
    schema = pa.schema(TABLES[name])

    def column(name: str) -> list:
        if name not in frame:
            return [None] * len(frame)
        values = frame[name].astype(object)
        return values.where(frame[name].notna(), None).tolist()

    return pa.table({f.name: pa.array(column(f.name), f.type) for f in schema}, schema=schema)
