"""The workload: one producer of per-partition counters, and its delivery log.

Partition p receives the values 0, 1, 2, ... in order (message i goes to partition
i % P with value i // P, as ASCII decimal). Every send ends in the delivery log
(acks.parquet) as acked (with the offset the client was told), rejected or unknown
(outcomes.py decides which), with the librdkafka error name, the latency librdkafka
measured from produce() to the delivery report, and the time it was handed to the
client; `sent == acked + rejected + unknown` is enforced before the log is closed.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from confluent_kafka import KafkaException, Producer

from .outcomes import ACKED, REJECTED, UNKNOWN, outcome

ACKS_SCHEMA = pa.schema([
    ("partition", pa.int32()),
    ("value", pa.int64()),
    ("outcome", pa.string()),
    ("offset", pa.int64()),  # null unless acked
    ("error", pa.string()),  # librdkafka's error name, null when acked
    ("sent_at", pa.timestamp("ms", tz="UTC")),  # handed to the client (to within one chunk of CHUNK sends)
    ("latency_ms", pa.float64()),  # produce() to delivery report, as librdkafka measured it
])
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


def _writer(path: Path) -> pq.ParquetWriter:
    # Dictionary encoding only where values repeat: it costs time on the producer's thread for nothing else.
    return pq.ParquetWriter(path, ACKS_SCHEMA, use_dictionary=["outcome", "error"])


class DeliveryLog:
    """Delivery reports, spilled to acks.parquet in batches so a long run stays small in memory.

    on_delivery runs once per message inside poll()/flush(), so it only appends; outcome,
    times and Arrow conversion happen in spill(), off the hot path. Each spill writes one row
    group per topic partition, so the analysis reads a partition's rows without the others.
    """

    SPILL = 100_000

    def __init__(self, path: Path, partitions: int, offsets_told: bool = True):
        self.path = path
        self.partitions = partitions
        # confluent-kafka gives None for a negative offset. With acks=0 no offset is ever told (null);
        # otherwise an acked send without one was told a negative offset: kept as -1 for the analysis.
        self.offsets_told = offsets_told
        self.chunk_times_ms: list[int] = []  # chunk k (messages k*CHUNK ...) was handed to the client then
        # Acked reports as parallel columns (no per-message tuple); failures are rare.
        self._part: list[int] = []
        self._value: list[bytes] = []
        self._offset: list[int] = []
        self._latency: list[float] = []
        self._failed: list[tuple] = []  # (partition, raw value, KafkaError, latency)
        self._writer = _writer(path)
        self.counts = {ACKED: 0, REJECTED: 0, UNKNOWN: 0}
        self.sent = 0  # set by close()
        part, value, offset, latency = self._part.append, self._value.append, self._offset.append, self._latency.append
        failed = self._failed.append

        def on_delivery(err, msg) -> None:  # a closure: no attribute look-ups per message
            if err is None:
                part(msg.partition())
                value(msg.value())
                offset(msg.offset())
                latency(msg.latency())
            else:
                failed((msg.partition(), msg.value(), err, msg.latency()))

        self.on_delivery = on_delivery
        pc.cast(pa.array(["0"]), pa.int64())  # loads Arrow's compute kernels now, not in the first spill


    def mark_chunk(self) -> None:
        """The next CHUNK messages are handed to the client now."""
        self.chunk_times_ms.append(int(time.time() * 1000))

    def maybe_spill(self) -> None:
        if len(self._part) + len(self._failed) >= self.SPILL:
            self.spill()

    def spill(self) -> None:
        if self._part:
            n = len(self._part)
            self._write(self._part, self._value, pa.repeat(ACKED, n), self._offset, pa.nulls(n, pa.string()),
                        self._latency, acked=True)
            self.counts[ACKED] += n
            for column in (self._part, self._value, self._offset, self._latency):
                column.clear()
        if self._failed:
            part, raw, errors, latency = zip(*self._failed)
            outcomes = [outcome(e) for e in errors]
            self._write(part, raw, pa.array(outcomes, pa.string()), [None] * len(part),
                        pa.array([e.name() for e in errors], pa.string()), latency, acked=False)
            for name in outcomes:
                self.counts[name] += 1
            self._failed.clear()

    def _write(self, part, raw, outcomes, offsets, errors, latency_s, acked: bool) -> None:
        parts = pa.array(part, pa.int32())
        latency = pc.multiply(pa.array(latency_s, pa.float64()), 1000.0)
        offsets = pa.array(offsets, pa.int64())
        if acked and self.offsets_told and offsets.null_count:
            offsets = pc.fill_null(offsets, -1)
        self._write_rows(parts, pc.cast(pa.array(raw, pa.string()), pa.int64()), outcomes, offsets, errors,
                         pc.if_else(pc.less(latency, 0), None, latency))

    def _write_rows(self, parts: pa.Array, values: pa.Array, outcomes, offsets, errors, latency) -> None:
        """One row group per partition; sent_at from the time the message's chunk was handed over."""
        p = parts.to_numpy(zero_copy_only=False)
        index = values.to_numpy(zero_copy_only=False) * self.partitions + p
        times = np.asarray(self.chunk_times_ms, dtype=np.int64)
        stamp = pa.timestamp("ms", tz="UTC")
        sent_at = (pa.array(times[np.minimum(index // CHUNK, len(times) - 1)]).cast(stamp) if len(times)
                   else pa.nulls(len(p), stamp))
        table = pa.table([parts, values, outcomes, offsets, errors, sent_at, latency], schema=ACKS_SCHEMA)
        order = np.argsort(p, kind="stable")
        table, bounds = table.take(order), np.flatnonzero(np.diff(p[order])) + 1
        for lo, hi in zip(np.concatenate(([0], bounds)), np.concatenate((bounds, [len(p)]))):
            self._writer.write_table(table.slice(lo, hi - lo))

    def close(self, sent_per_partition: list[int]) -> None:
        """Write the rest; any send with no report becomes unknown; fsync the file."""
        self.sent = sum(sent_per_partition)
        self.spill()
        if sum(self.counts.values()) != self.sent:
            self._add_unreported(sent_per_partition)
        self._writer.close()
        with open(self.path, "rb+") as f:
            os.fsync(f.fileno())

    def _add_unreported(self, sent_per_partition: list[int]) -> None:
        """Sends that got no delivery report at all (the client was torn down): unknown, error null."""
        self._writer.close()
        table = pq.read_table(self.path)
        self._writer = _writer(self.path)
        for p in range(self.partitions):  # rewrite what was there, one row group per partition
            self._writer.write_table(table.filter(pc.equal(table["partition"], p)))
        parts, values = [], []
        for p, n in enumerate(sent_per_partition):
            have = np.zeros(n, dtype=bool)
            got = pc.filter(table["value"], pc.equal(table["partition"], p)).to_numpy(zero_copy_only=False)
            have[got[got < n]] = True
            missing = np.flatnonzero(~have)
            parts.append(np.full(len(missing), p, dtype=np.int32))
            values.append(missing)
        values_a = np.concatenate(values).astype(np.int64)
        n = len(values_a)
        self._write_rows(pa.array(np.concatenate(parts)), pa.array(values_a), pa.repeat(UNKNOWN, n),
                         pa.nulls(n, pa.int64()), pa.nulls(n, pa.string()), pa.nulls(n, pa.float64()))
        self.counts[UNKNOWN] += n


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
) -> ProduceResult:
    """Send `messages` counters round-robin over the partitions, at `rate` msg/s if given.

    Every report goes to `log`, which is closed (fsynced, with sent == acked + rejected
    + unknown) however this ends, an exception or Ctrl-C included; log.sent and
    log.counts then hold what was recorded.

    `before_flush` runs once every message is handed to the client and before the
    final flush: the run heals all faults there, so the flush can complete.
    """
    stop = stop or threading.Event()
    conf = {**config, **client}
    if logger is not None:
        conf["logger"] = logger
    producer = Producer(conf)
    produce_one, poll, on_delivery = producer.produce, producer.poll, log.on_delivery
    t0 = time.monotonic()
    count = 0  # messages handed to the client
    error = ""
    try:
        try:
            while count < messages:
                if count:  # between chunks: serve delivery reports, spill, report, pace
                    poll(0)
                    log.maybe_spill()
                    if on_progress:
                        on_progress(count)
                    if stop.is_set():
                        break
                    if rate:
                        ahead = t0 + count / rate - time.monotonic()
                        if ahead > 0:
                            time.sleep(ahead)
                log.mark_chunk()
                for i in range(count, min(messages, count + CHUNK)):
                    value = b"%d" % (i // partitions)
                    while True:
                        try:
                            produce_one(topic, value, partition=i % partitions, on_delivery=on_delivery)
                            break
                        except BufferError:  # local queue full: serve callbacks, then retry
                            poll(0.01)
                    count = i + 1
            if on_progress:
                on_progress(count)
            if before_flush:
                before_flush()
            left = producer.flush(0.0 if stop.is_set() else flush_timeout)
            if left:
                # Still queued or in flight: purge so each gets its report (never silence).
                _drain(producer, 5.0)
        except KafkaException as e:
            # The client failed for good (e.g. an idempotent producer's OUT_OF_ORDER_SEQUENCE_NUMBER after
            # an unclean leader election): what was sent is kept and analysed, the error is reported.
            error = e.args[0].str() if e.args and hasattr(e.args[0], "str") else str(e)
            if before_flush:
                before_flush()
            _drain(producer, 2.0)
    except BaseException:
        # Interrupted or failed: collect what reports can still come, quickly; the rest become unknown.
        _drain(producer, 2.0)
        raise
    finally:
        try:
            producer.poll(0)
        except KafkaException:
            pass
        log.close([count // partitions + (1 if p < count % partitions else 0) for p in range(partitions)])
    return ProduceResult(count, log.counts[ACKED], log.counts[REJECTED], log.counts[UNKNOWN],
                         time.monotonic() - t0, stop.is_set(), error)


def _drain(producer: Producer, timeout: float) -> None:
    """Purge what is queued or in flight so each send gets its report; a failed client may refuse."""
    try:
        producer.purge(in_queue=True, in_flight=True, blocking=False)
        producer.flush(timeout)
    except KafkaException:
        pass
