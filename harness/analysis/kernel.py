"""The anomaly definitions as streaming numpy code, one Kafka partition at a time (no Spark here).

checks.py runs these inside Spark (one task per log file or acks file); bench/analysis.py
runs them in one process as the single-core reference. Definitions (DESIGN.md, Words):

  jump-back   a record whose value is not above the highest value read before it
  repeat      a record whose value was read before (duplicates = repeats = received - unique)
  reorder     a jump-back whose value was not read before
  run         consecutive jump-backs; size = highest_before - first_value + 1, length = records

Why it is fast: a record that is not a jump-back is above every earlier value, so it is
new and distinct; only jump-backs (rare) can be repeats, and only they are looked at one
by one. Everything else is whole-array numpy.
"""

from __future__ import annotations

import numpy as np

NONE = np.iinfo(np.int64).min
OUTCOME_CODES = {"acked": 1, "rejected": 2, "unknown": 3}  # 0: never sent


class FirstOffsets:
    """value -> offset of its first copy; a growable array for 0 <= value < 2**32, a dict beyond."""

    CAP = 1 << 32

    def __init__(self) -> None:
        self.array = np.full(1024, -1, dtype=np.int64)
        self.other: dict[int, int] = {}

    def _grow(self, top: int) -> None:
        if top >= len(self.array):
            bigger = np.full(max(top + 1, len(self.array) * 3 // 2), -1, dtype=np.int64)
            bigger[: len(self.array)] = self.array
            self.array = bigger

    def set_new(self, values: np.ndarray, offsets: np.ndarray) -> None:
        inside = (values >= 0) & (values < self.CAP)
        if inside.all():
            if len(values):
                self._grow(int(values.max()))
            self.array[values] = offsets
            return
        self.set_new(values[inside], offsets[inside])
        for v, o in zip(values[~inside].tolist(), offsets[~inside].tolist()):
            self.other[v] = o

    def get(self, value: int) -> int:
        if 0 <= value < self.CAP:
            return int(self.array[value]) if value < len(self.array) else -1
        return self.other.get(value, -1)

    def put(self, value: int, offset: int) -> None:
        if 0 <= value < self.CAP:
            self._grow(value)
            self.array[value] = offset
        else:
            self.other[value] = offset

    def present(self, size: int) -> np.ndarray:
        """Boolean presence of values 0..size-1."""
        out = np.zeros(size, dtype=bool)
        n = min(size, len(self.array))
        out[:n] = self.array[:n] >= 0
        return out

    def present_beyond(self, size: int) -> int:
        """How many distinct values at or above `size` (or negative) were read."""
        return int((self.array[size:] >= 0).sum()) + len(self.other)


class PartitionLog:
    """Feed one partition's records in offset order, batch by batch; read the findings at the end."""

    def __init__(self, partition: int):
        self.partition = partition
        self.received = 0
        self.repeats = 0
        self.reorders = 0
        self.highest = NONE
        self.last_offset = NONE
        self.ordered = True
        self.seen = FirstOffsets()
        self.open_run: list | None = None  # [first_offset, last_offset, first_value, highest_before, length, repeats]
        self.runs: list[tuple] = []
        self.duplicates: list[tuple] = []  # (value, offset, first_offset): one row per extra copy
        self.seconds: dict[int, list[int]] = {}  # epoch second -> [records, duplicates, jump_backs]

    def feed(self, offsets: np.ndarray, values: np.ndarray, timestamps_ms: np.ndarray | None = None) -> None:
        n = len(values)
        if n == 0:
            return
        if offsets[0] <= self.last_offset or (n > 1 and np.any(np.diff(offsets) <= 0)):
            self.ordered = False  # the caller must re-read this partition sorted; results are void
        self.last_offset = int(offsets[-1])
        running = np.maximum.accumulate(values)
        before = np.empty(n, dtype=np.int64)
        before[0] = self.highest
        np.maximum(running[:-1], self.highest, out=before[1:])
        jump = values <= before
        jump[before == NONE] = False
        self.highest = max(self.highest, int(running[-1]))
        self.received += n

        fresh = ~jump  # above everything before: new and distinct
        self.seen.set_new(values[fresh], offsets[fresh])
        repeat = np.zeros(n, dtype=bool)
        for i in np.flatnonzero(jump).tolist():
            v = int(values[i])
            first = self.seen.get(v)
            if first >= 0:
                repeat[i] = True
                self.duplicates.append((v, int(offsets[i]), first))
            else:
                self.seen.put(v, int(offsets[i]))
        n_repeat = int(repeat.sum())
        self.repeats += n_repeat
        self.reorders += int(jump.sum()) - n_repeat
        self._runs(jump, repeat, offsets, values, before)
        if timestamps_ms is not None:
            self._series(timestamps_ms, repeat, jump)

    def _runs(self, jump, repeat, offsets, values, before) -> None:
        if not jump.any():
            self._close_run()
            return
        edges = np.diff(np.concatenate(([0], jump.view(np.int8), [0])))
        starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)  # ends are exclusive
        reps = np.concatenate(([0], np.cumsum(repeat)))
        for s, e in zip(starts.tolist(), ends.tolist()):
            if s == 0 and self.open_run is not None:  # continues the run open at the end of the last batch
                run = self.open_run
                run[1] = int(offsets[e - 1])
                run[4] += e
                run[5] += int(reps[e] - reps[0])
            else:
                self._close_run()
                run = [int(offsets[s]), int(offsets[e - 1]), int(values[s]), int(before[s]), e - s,
                       int(reps[e] - reps[s])]
            self.open_run = run
            if e < len(jump):
                self._close_run()

    def _close_run(self) -> None:
        if self.open_run is not None:
            self.runs.append(tuple(self.open_run))
            self.open_run = None

    def _series(self, timestamps_ms, repeat, jump) -> None:
        secs = timestamps_ms // 1000
        low = int(secs.min())
        span = int(secs.max()) - low + 1
        if span <= 4 * len(secs) + 1024:  # the usual case: a batch covers a few seconds, count in O(n)
            index, keys = secs - low, np.arange(low, low + span)
        else:  # timestamps all over the place
            keys, index = np.unique(secs, return_inverse=True)
        counts = [np.bincount(index, minlength=len(keys)),
                  np.bincount(index[repeat], minlength=len(keys)),
                  np.bincount(index[jump], minlength=len(keys))]
        for k, r, d, j in zip(keys.tolist(), *(c.tolist() for c in counts)):
            if not r:
                continue
            row = self.seconds.setdefault(k, [0, 0, 0])
            row[0] += r
            row[1] += d
            row[2] += j

    def finish(self) -> None:
        self._close_run()

    def runs_with_kind(self) -> list[tuple]:
        """(first_offset, last_offset, first_value, highest_before, size, length, kind)."""
        out = []
        for first_o, last_o, first_v, hb, length, reps in self.runs:
            kind = "duplicate" if reps == length else "reorder" if reps == 0 else "mixed"
            out.append((first_o, last_o, first_v, hb, hb - first_v + 1, length, kind))
        return out


class PartitionAcks:
    """Outcome code per value 0..n-1 of one partition, from the delivery log."""

    def __init__(self, partition: int):
        self.partition = partition
        self.codes = np.zeros(0, dtype=np.int8)

    def feed(self, values: np.ndarray, codes: np.ndarray) -> None:
        if len(values) == 0:
            return
        if values.min() < 0:
            raise ValueError(f"partition {self.partition}: negative value in the delivery log")
        top = int(values.max())
        if top >= len(self.codes):
            grown = np.zeros(max(top + 1, len(self.codes) * 3 // 2), dtype=np.int8)
            grown[: len(self.codes)] = self.codes
            self.codes = grown
        self.codes[values] = codes

    def trimmed(self) -> np.ndarray:
        sent = np.flatnonzero(self.codes)
        return self.codes[: int(sent[-1]) + 1] if len(sent) else self.codes[:0]


def combine(partition: int, present: np.ndarray, beyond: int, codes: np.ndarray) -> tuple[dict, list, list]:
    """Join one partition's read values with its delivery outcomes.

    present: bool per value 0..len(codes)-1 (was it read); beyond: distinct values read outside that range.
    Returns (metrics, lost values, gaps as (first_value, last_value, values, lost, kind)).
    """
    n = len(codes)
    present = present[:n] if len(present) >= n else np.concatenate([present, np.zeros(n - len(present), bool)])
    sent = codes > 0
    acked = codes == 1
    absent = sent & ~present
    lost_mask = absent & acked
    metrics = {
        "sent": int(sent.sum()), "acked": int(acked.sum()), "rejected": int((codes == 2).sum()),
        "unknown": int((codes == 3).sum()), "lost": int(lost_mask.sum()),
        "missing": int((absent & ~acked).sum()), "received_unacked": int((present & sent & ~acked).sum()),
        "unexpected": int((present & ~sent).sum()) + beyond,
    }
    edges = np.diff(np.concatenate(([0], absent.view(np.int8), [0])))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    lost_cum = np.concatenate(([0], np.cumsum(lost_mask)))
    gaps = []
    for s, e in zip(starts.tolist(), ends.tolist()):
        lost = int(lost_cum[e] - lost_cum[s])
        gaps.append((s, e - 1, e - s, lost, "lost" if lost else "missing"))
    return metrics, np.flatnonzero(lost_mask).tolist(), gaps
