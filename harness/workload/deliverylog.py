"""The delivery log (acks.parquet): what became of every send, written as the delivery reports come.

Every send ends in it as acked (with the offset the client was told), rejected or unknown
(outcomes.py decides which), with the librdkafka error name, the latency librdkafka
measured from produce() to the delivery report, the time it was handed to the client,
its session (the producer instance that sent it: 0, then one more at every restart) and,
in a transactional variant (transactional.py), its transaction. `sent == acked + rejected
+ unknown`, counted per send, is enforced before the log is closed. Kept apart from the
produce loops (producer.py, transactional.py), which both write it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from confluent_kafka import KafkaException, Producer

from ..formats import ACKS_SCHEMA, Outcome
from .outcomes import outcome

# Sends between two calls to poll() in the produce loops; a chunk is handed to the client in one burst, and
# its sends share the time it was handed (mark_chunk).
CHUNK = 1024

# An offset told_many was not told (the frame's sentinel, as the Java child writes it; its null in the log).
NO_OFFSET = np.iinfo(np.int64).min


@dataclass
class _Session:
    """What one producer instance handed over: fresh message indices [lo, hi), and sends out of counter
    order (late: resends, a zombie's rest of its transaction)."""

    lo: int
    hi: int | None = None  # None while the session may still hand fresh messages
    late: list[int] = field(default_factory=list)
    reported: int = 0  # rows written for it

    def handed(self, count: int) -> int:
        return (count if self.hi is None else self.hi) - self.lo + len(self.late)


def _writer(path: Path) -> pq.ParquetWriter:
    # Dictionary encoding only where values repeat, statistics only where a reader looks (engine/rowgroups.py:
    # partition, offset): each costs the run's CPU, beside the client's, for nothing else.
    return pq.ParquetWriter(path, ACKS_SCHEMA, use_dictionary=["outcome", "error"],
                            write_statistics=["partition", "offset"])


class DeliveryLog:
    """Delivery reports, spilled to acks.parquet in batches so a long run stays small in memory.

    on_delivery runs once per message inside poll()/flush(), so it only appends; outcome,
    times and Arrow conversion happen in spill(), off the hot path. Each spill writes one row
    group per topic partition, so the analysis reads a partition's rows without the others.
    Reports are written with the current session: the produce loop switches sessions (and
    spills) only between calls into a producer, so every report lands in its instance's session.
    """

    SPILL = 100_000
    # A foreign child's frames (told_many) are kept longer, as arrays (~32 bytes a send: 128 MB at most): writing
    # them costs the run's CPU, which a 2-core machine takes from the child and the broker while they send, so a
    # workload of up to this many sends is written once it has ended.
    SPILL_MANY = 4_000_000

    def __init__(self, path: Path, partitions: int, offsets_told: bool = True):
        self.path = path
        self.partitions = partitions
        # confluent-kafka gives None for a negative offset. With acks=0 no offset is ever told (null);
        # otherwise an acked send without one was told a negative offset: kept as -1 for the analysis.
        self.offsets_told = offsets_told
        self.chunk_times_ms: list[int] = []  # chunk k (messages k*CHUNK ...) was handed to the client then
        # Acked reports as parallel columns per topic partition (values, offsets, latencies; no per-message
        # tuple, no partition to ask or sort): the callback runs once per message on the producer's thread.
        self._reports = [([], [], []) for _ in range(partitions)]
        self._txns: list[list[int]] = [[] for _ in range(partitions)]  # transaction of each (reports_for() only)
        # A foreign child's frames of acks (told_many) as arrays: (message indices, offsets or None, latencies,
        # txns or None); no Python object per send (a Java child reports a million a second).
        self._many: list[tuple] = []
        self._in_many = 0
        self._failed: list[tuple] = []  # (partition, raw value, KafkaError, latency, txn, outcome or None)
        self._writer = _writer(path)
        self.counts = {Outcome.ACKED: 0, Outcome.REJECTED: 0, Outcome.UNKNOWN: 0}
        self.sent = 0  # set by close()
        self.session = 0
        self._sessions = [_Session(0)]
        self._late_at: dict[int, dict[int, int]] = {}  # session -> message index -> handed at (ms)
        self._acked = np.zeros(0, dtype=bool)  # message index -> acknowledged in some session
        # The delivery callback of each partition's sends (the produce loop's), and one for any send.
        self.on_delivery_to = [self._on_delivery_to(p) for p in range(partitions)]
        to = self.on_delivery_to
        self.on_delivery = lambda err, msg: to[msg.partition()](err, msg)
        pc.cast(pa.array(["0"]), pa.int64())  # loads Arrow's compute kernels now, not in the first spill

    def _on_delivery_to(self, partition: int) -> Callable:
        value, offset, latency = (column.append for column in self._reports[partition])
        failed = self._failed.append

        def on_delivery(err, msg) -> None:  # a closure: no attribute look-ups per message
            if err is None:
                value(msg.value())
                offset(msg.offset())
                latency(msg.latency())
            else:
                failed((partition, msg.value(), err, msg.latency(), None, None))

        return on_delivery

    def reports_for(self, txn: int) -> Callable:
        """The delivery callback of the messages of transaction `txn` (one closure per transaction)."""
        reports, txns, failed = self._reports, self._txns, self._failed.append

        def on_delivery(err, msg) -> None:
            p = msg.partition()
            if err is None:
                value, offset, latency = reports[p]
                value.append(msg.value())
                offset.append(msg.offset())
                latency.append(msg.latency())
                txns[p].append(txn)
            else:
                failed((p, msg.value(), err, msg.latency(), txn, None))

        return on_delivery

    def refused(self, partition: int, value: int, err, txn: int | None = None) -> None:
        """A send the client refused in produce() (nothing was transmitted): rejected, with its error."""
        self._failed.append((partition, b"%d" % value, err, -1.0, txn, Outcome.REJECTED))

    def mark_chunk(self, at_ms: int | None = None) -> None:
        """The next CHUNK messages are handed to the client now (or at `at_ms`, as a child process said)."""
        self.chunk_times_ms.append(int(time.time() * 1000) if at_ms is None else at_ms)

    # -- a foreign client's reports (workload/foreignproc.py: the child's lines, one per send) --------------
    def told(self, partition: int, value: int, offset: int | None, latency_s: float, txn: int | None = None) -> None:
        """Acknowledged at `offset` (None: the broker tells none, acks=0); txn: its transaction (every report of
        a transactional variant names one)."""
        values, offsets, latencies = self._reports[partition]
        values.append(b"%d" % value)
        offsets.append(offset)
        latencies.append(latency_s)
        if txn is not None:
            self._txns[partition].append(txn)

    def told_many(self, indices: np.ndarray, offsets: np.ndarray | None, latencies_s: np.ndarray,
                  txns: np.ndarray | None = None) -> None:
        """Messages `indices` acknowledged at `offsets` (None: the broker tells none, acks=0; NO_OFFSET: this one
        was not told), one latency (and one transaction, in txns) each: a foreign child's frame of
        acknowledgements, in one call."""
        self._many.append((indices, offsets, np.asarray(latencies_s, np.float64), txns))
        self._in_many += len(indices)

    def failed(self, partition: int, value: int, error: str, latency_s: float, rejected: bool,
               txn: int | None = None) -> None:
        """Failed with the implementation's error `error` (harness/clients.py names it): rejected when it proves
        nothing was written (or the client refused the send), else unknown."""
        self._failed.append((partition, b"%d" % value, NamedError(error), latency_s, txn,
                             Outcome.REJECTED if rejected else Outcome.UNKNOWN))

    # -- sessions --------------------------------------------------------------------------
    def new_session(self, handed: int, fresh_from: int | None = None) -> int:
        """The current session handed fresh messages up to index `handed`; a new one starts (it hands
        fresh messages from `fresh_from`, default `handed`) and reports go to it from now on."""
        self.spill()
        current = self._sessions[self.session]
        if current.hi is None:
            current.hi = handed
        self._sessions.append(_Session(handed if fresh_from is None else fresh_from))
        self.session = len(self._sessions) - 1
        return self.session

    @contextmanager
    def serving(self, session: int):
        """Reports served inside this block are another (earlier) session's: a zombie's."""
        self.spill()
        current, self.session = self.session, session
        try:
            yield
        finally:
            self.spill()
            self.session = current

    def handed_late(self, indices) -> None:
        """Messages handed now by the current session out of counter order (resends, a zombie's rest)."""
        now = int(time.time() * 1000)
        late = self._late_at.setdefault(self.session, {})
        for i in indices:
            late[int(i)] = now
        self._sessions[self.session].late.extend(int(i) for i in indices)

    def unacked(self, below: int) -> np.ndarray:
        """Message indices below `below` that no session was told were acknowledged (after a spill)."""
        self.spill()
        acked = np.zeros(below, dtype=bool)
        n = min(below, len(self._acked))
        acked[:n] = self._acked[:n]
        return np.flatnonzero(~acked)

    # -- writing -----------------------------------------------------------------------------
    def maybe_spill(self) -> None:
        if sum(len(values) for values, _, _ in self._reports) + len(self._failed) >= self.SPILL \
                or self._in_many >= self.SPILL_MANY:
            self.spill()

    def spill(self) -> None:
        self._spill_many()
        for p, ((values, offsets, latency), txns) in enumerate(zip(self._reports, self._txns)):
            n = len(values)
            if not n:
                continue
            if txns and len(txns) != n:
                raise RuntimeError("delivery log: transactional and plain reports mixed in one session")
            txn = pa.array(txns, pa.int64()) if txns else pa.nulls(n, pa.int64())
            self._write(np.full(n, p, np.int32), values, pa.repeat(Outcome.ACKED, n), offsets, pa.nulls(n, pa.string()),
                        latency, txn, acked=True)
            self.counts[Outcome.ACKED] += n
            for column in (values, offsets, latency, txns):
                column.clear()
        if self._failed:
            part, raw, errors, latency, txn, forced = zip(*self._failed)
            outcomes = [f or outcome(e) for e, f in zip(errors, forced)]
            self._write(part, raw, pa.array(outcomes, pa.string()), [None] * len(part),
                        pa.array([e.name() for e in errors], pa.string()), latency, pa.array(txn, pa.int64()),
                        acked=False)
            for name in outcomes:
                self.counts[name] += 1
            self._failed.clear()

    def _spill_many(self) -> None:
        if not self._many:
            return
        indices, offsets, latency, txns = zip(*self._many)
        if len({t is None for t in txns}) > 1:
            raise RuntimeError("delivery log: transactional and plain reports mixed in one session")
        index = np.concatenate(indices)
        # In partition order here, where numpy sorts plain arrays (a stable sort of 16-bit keys is a radix sort):
        # _write_rows would sort the whole Arrow table.
        part = (index % self.partitions).astype(np.int16 if self.partitions < 1 << 15 else np.int32)
        order = np.argsort(part, kind="stable")
        index, part = index[order], part[order]
        n = len(index)
        if offsets[0] is None:
            told = pa.nulls(n, pa.int64())
        else:
            told = np.concatenate(offsets)[order]
            untold = told == NO_OFFSET  # null: _write keeps it as an untold offset
            # Arrow's masked conversion takes 50 ns a row where a plain one is free: only when one is untold.
            told = pa.array(told, mask=untold) if untold.any() else pa.array(told)
        txn = pa.nulls(n, pa.int64()) if txns[0] is None else pa.array(np.concatenate(txns)[order], pa.int64())
        self._write(part.astype(np.int32), pa.array(index // self.partitions),
                    pa.repeat(Outcome.ACKED, n), told, pa.nulls(n, pa.string()), np.concatenate(latency)[order], txn,
                    acked=True)
        self.counts[Outcome.ACKED] += n
        self._many.clear()
        self._in_many = 0

    def _write(self, part, raw, outcomes, offsets, errors, latency_s, txn, acked: bool) -> None:
        """raw: the values as the client gave them (bytes), or already an int64 Arrow array (a child's frames)."""
        parts = pa.array(part, pa.int32())
        latency = pc.multiply(pa.array(latency_s, pa.float64()), 1000.0)
        offsets = pa.array(offsets, pa.int64())
        if acked and self.offsets_told and offsets.null_count:
            offsets = pc.fill_null(offsets, -1)
        # Parsed straight from the bytes (viewed as text: the cast rejects anything but a decimal anyway).
        values = raw if isinstance(raw, pa.Array) else pc.cast(pa.array(raw, pa.binary()).view(pa.string()), pa.int64())
        index = self._write_rows(parts, values, outcomes, offsets, errors, pc.if_else(pc.less(latency, 0), None, latency),
                                 txn, self.session)
        if acked:
            top = int(index.max()) + 1
            if top > len(self._acked):
                grown = np.zeros(max(top, len(self._acked) * 2), dtype=bool)
                grown[: len(self._acked)] = self._acked
                self._acked = grown
            self._acked[index] = True

    def _write_rows(self, parts: pa.Array, values: pa.Array, outcomes, offsets, errors, latency, txn,
                    session: int) -> np.ndarray:
        """One row group per partition; sent_at from the time the message's chunk was handed over (or,
        for a late send, from when it was). Returns the rows' message indices."""
        p = parts.to_numpy(zero_copy_only=False)
        index = values.to_numpy(zero_copy_only=False) * self.partitions + p
        times = np.asarray(self.chunk_times_ms, dtype=np.int64)
        stamp = pa.timestamp("ms", tz="UTC")
        sent_ms = times[np.minimum(index // CHUNK, len(times) - 1)] if len(times) else None
        late = self._late_at.get(session)
        if late and sent_ms is not None:
            hit = np.flatnonzero(np.isin(index, np.fromiter(late, dtype=np.int64, count=len(late))))
            sent_ms[hit] = [late[int(i)] for i in index[hit]]
        sent_at = pa.array(sent_ms).cast(stamp) if sent_ms is not None else pa.nulls(len(p), stamp)
        sessions = pa.array(np.full(len(p), session, dtype=np.int32))
        table = pa.table([parts, values, outcomes, offsets, errors, sent_at, latency, sessions, txn], schema=ACKS_SCHEMA)
        if np.any(p[1:] < p[:-1]):
            # An Arrow index: with a numpy one, table.take() took 8x longer (45 ms for 300k rows, pyarrow 26).
            order = np.argsort(p, kind="stable")
            table, p = table.take(pa.array(order)), p[order]
        bounds = np.flatnonzero(np.diff(p)) + 1
        for lo, hi in zip(np.concatenate(([0], bounds)), np.concatenate((bounds, [len(p)]))):
            self._writer.write_table(table.slice(lo, hi - lo))
        self._sessions[session].reported += len(p)
        return index

    def close(self, count: int) -> None:
        """Write the rest (count: fresh messages handed in all); any send with no report becomes unknown;
        fsync the file."""
        self.spill()
        if self._sessions[self.session].hi is None:
            self._sessions[self.session].hi = count
        for s in self._sessions:
            s.hi = count if s.hi is None else s.hi
        self.sent = sum(s.handed(count) for s in self._sessions)
        if sum(self.counts.values()) != self.sent:
            self._add_unreported()
        self._writer.close()
        with open(self.path, "rb+") as f:
            os.fsync(f.fileno())

    def _add_unreported(self) -> None:
        """Sends that got no delivery report at all (the client was torn down): unknown, error null."""
        self._writer.close()
        table = pq.read_table(self.path)
        self._writer = _writer(self.path)
        for p in range(self.partitions):  # rewrite what was there, one row group per partition
            self._writer.write_table(table.filter(pc.equal(table["partition"], p)))
        index = (table["value"].to_numpy(zero_copy_only=False) * self.partitions
                 + table["partition"].to_numpy(zero_copy_only=False))
        sessions = table["session"].to_numpy(zero_copy_only=False)
        for number, s in enumerate(self._sessions):
            if s.reported == s.handed(s.hi):
                continue
            sent = np.concatenate((np.arange(s.lo, s.hi, dtype=np.int64), np.asarray(s.late, dtype=np.int64)))
            missing = np.setdiff1d(sent, index[sessions == number])
            n = len(missing)
            if n == 0:
                continue
            self._write_rows(pa.array((missing % self.partitions).astype(np.int32)),
                             pa.array(missing // self.partitions), pa.repeat(Outcome.UNKNOWN, n),
                             pa.nulls(n, pa.int64()), pa.nulls(n, pa.string()), pa.nulls(n, pa.float64()), pa.nulls(n, pa.int64()), number)
            self.counts[Outcome.UNKNOWN] += n


class NamedError:
    """A foreign client's error as the delivery log records it: its name only."""

    __slots__ = ("_name",)

    def __init__(self, name: str):
        self._name = name

    def name(self) -> str:
        return self._name


def drain(producer: Producer, timeout: float) -> None:
    """Purge what is queued or in flight so each send gets its report; a failed client may refuse."""
    try:
        producer.purge(in_queue=True, in_flight=True, blocking=False)
        producer.flush(timeout)
    except KafkaException:
        pass
    except AttributeError as e:
        if not masked_fatal(e):
            raise


def masked_fatal(e: BaseException) -> bool:
    """A fatal client error confluent-kafka surfaced as an AttributeError. Its error_cb (2.15, 2.16) sets a
    fatal error's KafkaException and leaves it pending when librdkafka reports the error during a call; the next
    librdkafka log line then fails to look up the logger's `log` method, and the call raises "AttributeError:
    'FileLogger' object has no attribute 'log'" instead of the fatal error. The client is as failed as after
    a KafkaException(_FATAL); librdkafka's FATAL log line (producer._FatalLine) has its name. Here because
    drain must tell it from a harness bug; the produce loops ask it too."""
    return isinstance(e, AttributeError) and str(e).endswith("object has no attribute 'log'")
