"""The workload: one producer of per-partition counters, and its delivery log.

Partition p receives the values 0, 1, 2, ... in order (message i goes to partition
i % P with value i // P, as ASCII decimal). Every send ends in the delivery log
(acks.parquet) as acked (with the offset the client was told), rejected or unknown
(outcomes.py decides which), with the librdkafka error name, the latency librdkafka
measured from produce() to the delivery report, the time it was handed to the client,
its session (the producer instance that sent it: 0, then one more at every restart) and,
in a transactional variant (transactional.py), its transaction. `sent == acked + rejected
+ unknown`, counted per send, is enforced before the log is closed.

Producer restarts (the workload faults on the producer, applied by the produce loop between two
sends when the nemesis asks): the old instance is closed without
flushing (or frozen, for a pause) and a new one created, and the application sends again,
in the new session, every value it handed over and was not told was acknowledged, as an
at-least-once application does. Those are new rows of the same (partition, value).
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from confluent_kafka import KafkaError, KafkaException, Producer

from ..faults.channel import PAUSE_PRODUCER, RESTART_PRODUCER, FaultTable
from ..formats import ACKS_SCHEMA, Outcome
from .outcomes import outcome

CHUNK = 1024  # sends between two calls to poll(); a chunk is handed to the client in one burst


@dataclass
class ProduceResult:
    sent: int
    acked: int
    rejected: int
    unknown: int
    duration: float
    interrupted: bool
    error: str = ""  # the client's fatal error, when it ended the workload early
    fatal: str = ""  # that error's name as librdkafka reports it (error_cb), e.g. OUT_OF_ORDER_SEQUENCE_NUMBER


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
    # Dictionary encoding only where values repeat: it costs time on the producer's thread for nothing else.
    return pq.ParquetWriter(path, ACKS_SCHEMA, use_dictionary=["outcome", "error"])


class DeliveryLog:
    """Delivery reports, spilled to acks.parquet in batches so a long run stays small in memory.

    on_delivery runs once per message inside poll()/flush(), so it only appends; outcome,
    times and Arrow conversion happen in spill(), off the hot path. Each spill writes one row
    group per topic partition, so the analysis reads a partition's rows without the others.
    Reports are written with the current session: the produce loop switches sessions (and
    spills) only between calls into a producer, so every report lands in its instance's session.
    """

    SPILL = 100_000

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

    def mark_chunk(self) -> None:
        """The next CHUNK messages are handed to the client now."""
        self.chunk_times_ms.append(int(time.time() * 1000))

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
        if sum(len(values) for values, _, _ in self._reports) + len(self._failed) >= self.SPILL:
            self.spill()

    def spill(self) -> None:
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

    def _write(self, part, raw, outcomes, offsets, errors, latency_s, txn, acked: bool) -> None:
        parts = pa.array(part, pa.int32())
        latency = pc.multiply(pa.array(latency_s, pa.float64()), 1000.0)
        offsets = pa.array(offsets, pa.int64())
        if acked and self.offsets_told and offsets.null_count:
            offsets = pc.fill_null(offsets, -1)
        # Parsed straight from the bytes (viewed as text: the cast rejects anything but a decimal anyway).
        values = pc.cast(pa.array(raw, pa.binary()).view(pa.string()), pa.int64())
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


def client_conf(config: dict, client: dict, logger: logging.Logger | None,
                on_fatal: Callable[[str], None] | None = None) -> dict:
    """The client's configuration; on_fatal(name) receives a fatal error's name. librdkafka reports a fatal
    error once, through error_cb, with the underlying code (the produce calls after it only say _FATAL):
    that is the name known-bug experiments need (e.g. OUT_OF_ORDER_SEQUENCE_NUMBER, _INCONSISTENT)."""
    conf = {**config, **client}
    if logger is not None:
        conf["logger"] = logger
    if on_fatal is not None:
        def error_cb(err) -> None:
            if err.fatal():
                on_fatal(err.name())
        conf["error_cb"] = error_cb
        if logger is not None:  # librdkafka's own FATAL line too: a run on 2.4.0 logged one that error_cb never saw
            logger.addFilter(_FatalLine(on_fatal))
    return conf


class _FatalLine(logging.Filter):
    """Passes every line on; a librdkafka FATAL line ("FATAL [rdkafka#producer-1] [thrd:...]: Fatal error: Local:
    Inconsistent state: Unable to reconstruct MessageSet ...") names its error: the KafkaError name whose
    description the line gives (_INCONSISTENT), else the description itself."""

    def __init__(self, on_fatal: Callable[[str], None]):
        super().__init__()
        self.on_fatal = on_fatal

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if text.startswith("FATAL ") and "Fatal error: " in text:
            self.on_fatal(fatal_name(text.split("Fatal error: ", 1)[1]))
        return True


def masked_fatal(e: BaseException) -> bool:
    """A fatal client error confluent-kafka surfaced as an AttributeError. Its error_cb (2.15, 2.16) sets a
    fatal error's KafkaException and leaves it pending when librdkafka reports the error during a call; the next
    librdkafka log line then fails to look up the logger's `log` method, and the call raises "AttributeError:
    'FileLogger' object has no attribute 'log'" instead of the fatal error. The client is as failed as after
    a KafkaException(_FATAL); librdkafka's FATAL log line (_FatalLine) has its name."""
    return isinstance(e, AttributeError) and str(e).endswith("object has no attribute 'log'")


def client_error_text(e: BaseException) -> str:
    """A client exception's words, for producer_error."""
    if masked_fatal(e):
        return f"fatal error (confluent-kafka raised it as AttributeError: {e})"
    return e.args[0].str() if e.args and hasattr(e.args[0], "str") else str(e)


def fatal_name(said: str) -> str:
    """"Local: Inconsistent state: Unable to ..." -> "_INCONSISTENT"; "Broker: Broker received an out of order
    sequence number: ..." -> "OUT_OF_ORDER_SEQUENCE_NUMBER"; a description librdkafka does not know is kept."""
    names = _error_names()
    return next((names[d] for d in sorted(names, key=len, reverse=True) if said.startswith(d)), said.split(": ")[0])


@functools.cache
def _error_names() -> dict[str, str]:
    """librdkafka's error descriptions -> names, from the client's own table."""
    out = {}
    for name in dir(KafkaError):
        code = getattr(KafkaError, name)
        if isinstance(code, int) and not isinstance(code, bool):
            err = KafkaError(code)
            if err.str() and not err.str().startswith("Err-"):  # "Err-1234?": a code it has no words for
                out.setdefault(err.str(), err.name())
    return out


def hand_batch(producer: Producer, topic: str, partition: int, values: list[int], on_delivery: Callable,
               refused: Callable, handed: list[int]) -> KafkaError | None:
    """Hand one partition's values to the client in order, in one produce_batch() call (a fifth faster than
    a produce() per message: bench/producer.py), waiting out a full local queue. `handed` receives each
    value once the client has it (queued, or refused for good).

    The client takes a batch message by message and marks each one it refuses with `_error`. A full
    queue refuses the rest of the batch: that rest is handed again once delivery reports are served.
    Any other refusal (e.g. _FATAL after an idempotent producer's fatal error) is final: each refused
    message is recorded with `refused(partition, value, error)` (rejected: it was never sent) and the
    first such error is returned, for the caller to end the workload as produce() would have. A message
    queued after one refused would break the send order: that is raised as a harness failure."""
    if not hasattr(producer, "produce_batch"):
        return _hand_one_by_one(producer, topic, partition, values, on_delivery, refused, handed)
    done = 0
    batch = [{"value": b"%d" % v} for v in values]
    while batch:
        queued = producer.produce_batch(topic, batch, partition=partition, on_delivery=on_delivery)
        if queued == len(batch):
            handed.extend(values[done:])
            return None
        first = next(k for k, m in enumerate(batch) if "_error" in m)
        error, rest = batch[first]["_error"], batch[first:]
        if queued != first or not all("_error" in m for m in rest):
            raise RuntimeError(f"the client queued a message of {topic}[{partition}] after refusing an earlier one "
                               f"({error.name()}): the send order would break")
        handed.extend(values[done:done + first])
        done += first
        if error.code() != KafkaError._QUEUE_FULL:
            for v, m in zip(values[done:], rest):
                refused(partition, v, m["_error"])
            handed.extend(values[done:])
            return error
        producer.poll(0.01)  # serve delivery reports: that frees the queue
        batch = [{"value": m["value"]} for m in rest]
    return None


def _hand_one_by_one(producer: Producer, topic: str, partition: int, values: list[int], on_delivery: Callable,
                     refused: Callable, handed: list[int]) -> KafkaError | None:
    """hand_batch for clients without produce_batch (confluent-kafka before 2.12, run by the client axis):
    one produce() per message, the same outcomes (a full queue waited out, any other refusal final)."""
    for i, v in enumerate(values):
        while True:
            try:
                producer.produce(topic, b"%d" % v, partition=partition, on_delivery=on_delivery)
                break
            except BufferError:  # the local queue is full: serving delivery reports frees it
                producer.poll(0.01)
            except KafkaException as e:
                error = e.args[0]
                for w in values[i:]:
                    refused(partition, w, error)
                handed.extend(values[i:])
                return error
        handed.append(v)
    return None


def hand_over(producer: Producer, topic: str, partitions: int, indices, log: "DeliveryLog",
              handed: list[list[int]] | None = None) -> None:
    """Hand messages by index (ascending), each partition's in one batch. `handed[p]` receives partition
    p's values once the client has them. A final refusal is raised as produce() would raise it, once
    every message is handed or recorded as refused."""
    handed = handed if handed is not None else [[] for _ in range(partitions)]
    indices = np.asarray(indices, dtype=np.int64)
    errors = [hand_batch(producer, topic, p, (indices[indices % partitions == p] // partitions).tolist(),
                         log.on_delivery_to[p], log.refused, handed[p]) for p in range(partitions)]
    error = next((e for e in errors if e is not None), None)
    if error is not None:
        raise KafkaException(error)


def close_now(producer: Producer, timeout: float = 2.0) -> None:
    """Tear an instance down without flushing, as a crash would: what is queued or in flight is purged
    (its reports say so: unknown), the reports are served, and the instance is dropped."""
    _drain(producer, timeout)


def produce(
    client: dict,
    topic: str,
    partitions: int,
    messages: int,
    config: dict,
    log: DeliveryLog,
    rate: float | None = None,
    flush_timeout: float = 60.0,
    stop: threading.Event | None = None,
    on_progress: Callable[[int], None] | None = None,
    logger: logging.Logger | None = None,
    before_flush: Callable[[], None] | None = None,
    faults=None,
) -> ProduceResult:
    """Send `messages` counters round-robin over the partitions, at `rate` msg/s if given.

    Every report goes to `log`, which is closed (fsynced, with sent == acked + rejected
    + unknown) however this ends, an exception or Ctrl-C included; log.sent and
    log.counts then hold what was recorded.

    `before_flush` runs once every message is handed to the client and before the
    final flush: the run heals all faults there, so the flush can complete. `faults`
    (faults/channel.WorkloadFaults) is served between chunks, by the table `served`: a restart
    and a pause.
    """
    stop = stop or threading.Event()
    fatal: list[str] = []
    conf = client_conf(config, client, logger, fatal.append)
    producer = Producer(conf)
    zombie: tuple[int, Producer] | None = None  # (session, instance) frozen by a pause
    t0 = time.monotonic()
    count = 0  # messages handed to the client
    error = ""

    def replace(paused: bool) -> None:
        """A new instance takes over what was not acknowledged; the old one is closed (restart) or frozen as
        it is, no call reaching it until it resumes (pause)."""
        nonlocal producer, zombie
        if not paused:
            close_now(producer)
        elif zombie is not None:
            raise RuntimeError(f"{PAUSE_PRODUCER}: the paused producer has not resumed yet (one pause at a time)")
        else:
            zombie = (log.session, producer)
        log.new_session(count)
        producer = Producer(conf)
        again = log.unacked(count)
        log.handed_late(again)
        hand_over(producer, topic, partitions, again, log)

    def resume(params: dict) -> None:
        nonlocal zombie
        if zombie is not None:
            resume_plain(log, *zombie, flush_timeout)
            zombie = None

    served: FaultTable = {RESTART_PRODUCER: (lambda params: replace(paused=False), None),
                          PAUSE_PRODUCER: (lambda params: replace(paused=True), resume)}

    try:
        try:
            while count < messages:
                if count:  # between chunks: serve delivery reports, spill, report, pace, apply workload faults
                    producer.poll(0)
                    log.maybe_spill()
                    if on_progress:
                        on_progress(count)
                    if stop.is_set():
                        break
                    if rate:
                        ahead = t0 + count / rate - time.monotonic()
                        if ahead > 0:
                            time.sleep(ahead)
                    if faults is not None and faults.pending:
                        faults.serve(served)
                log.mark_chunk()
                end = min(messages, count + CHUNK)
                handed: list[list[int]] = [[] for _ in range(partitions)]
                try:
                    hand_over(producer, topic, partitions, range(count, end), log, handed)
                finally:
                    if sum(map(len, handed)) == end - count:
                        count = end
                    else:  # cut short inside the chunk: what the client has is not a prefix of it
                        log.handed_late(sorted(v * partitions + p for p, vs in enumerate(handed) for v in vs))
            if on_progress:
                on_progress(count)
            if zombie is not None and not stop.is_set():  # the workload ended while a producer was paused:
                resume({})  # it resumes now (interrupted: the finally drains it)
            if faults is not None:  # the faults still due as the loop ended are served while before_flush waits
                faults.idle = lambda: faults.serve(served)
            if before_flush:
                before_flush()
            if faults is not None:
                faults.idle = None
            if zombie is not None and not stop.is_set():  # paused while the nemesis finished: it resumes now
                resume({})
            left = producer.flush(0.0 if stop.is_set() else flush_timeout)
            if left:
                # Still queued or in flight: purge so each gets its report (never silence).
                _drain(producer, 5.0)
        except (KafkaException, AttributeError) as e:
            # The client failed for good (e.g. an idempotent producer's OUT_OF_ORDER_SEQUENCE_NUMBER after
            # an unclean leader election): what was sent is kept and analysed, the error is reported.
            if isinstance(e, AttributeError) and not masked_fatal(e):
                raise
            error = client_error_text(e)
            if before_flush:
                before_flush()
            _drain(producer, 2.0)  # serves error_cb too: the fatal error's own name
    except BaseException:
        # Interrupted or failed: collect what reports can still come, quickly; the rest become unknown.
        _drain(producer, 2.0)
        raise
    finally:
        if zombie is not None:
            with log.serving(zombie[0]):
                _drain(zombie[1], 2.0)
        try:
            producer.poll(0)
        except KafkaException:
            pass
        except AttributeError as e:
            if not masked_fatal(e):
                raise
        log.close(count)
    return ProduceResult(log.sent, log.counts[Outcome.ACKED], log.counts[Outcome.REJECTED], log.counts[Outcome.UNKNOWN],
                         time.monotonic() - t0, stop.is_set(), error, fatal[0] if fatal else "")


def resume_plain(log: DeliveryLog, session: int, producer: Producer, timeout: float) -> None:
    """A paused (plain) producer resumes: what it had queued or in flight completes, in its own session."""
    with log.serving(session):
        if producer.flush(timeout):
            _drain(producer, 2.0)


def _drain(producer: Producer, timeout: float) -> None:
    """Purge what is queued or in flight so each send gets its report; a failed client may refuse."""
    try:
        producer.purge(in_queue=True, in_flight=True, blocking=False)
        producer.flush(timeout)
    except KafkaException:
        pass
    except AttributeError as e:
        if not masked_fatal(e):
            raise
