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
from confluent_kafka import Producer

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


class DeliveryLog:
    """Delivery reports, spilled to acks.parquet in batches so a long run stays small in memory.

    on_delivery runs once per message inside poll()/flush(), so it only appends; outcome,
    times and Arrow conversion happen in spill(), off the hot path. Each spill writes one row
    group per topic partition, so the analysis reads a partition's rows without the others.
    """

    SPILL = 100_000

    def __init__(self, path: Path, partitions: int):
        self.path = path
        self.partitions = partitions
        self.chunk_times_ms: list[int] = []  # chunk k (messages k*CHUNK ...) was handed to the client then
        # Acked reports as parallel columns (no per-message tuple); failures are rare.
        self._part: list[int] = []
        self._value: list[bytes] = []
        self._offset: list[int] = []
        self._latency: list[float] = []
        self._failed: list[tuple] = []  # (partition, raw value, KafkaError, latency)
        self._writer = pq.ParquetWriter(path, ACKS_SCHEMA)
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

    def mark_chunk(self) -> None:
        """The next CHUNK messages are handed to the client now."""
        self.chunk_times_ms.append(int(time.time() * 1000))

    def maybe_spill(self) -> None:
        if len(self._part) + len(self._failed) >= self.SPILL:
            self.spill()

    def spill(self) -> None:
        if self._part:
            n = len(self._part)
            self._write(self._part, self._value, [ACKED] * n, self._offset, [None] * n, self._latency)
            self.counts[ACKED] += n
            for column in (self._part, self._value, self._offset, self._latency):
                column.clear()
        if self._failed:
            part, raw, errors, latency = zip(*self._failed)
            outcomes = [outcome(e) for e in errors]
            self._write(part, raw, outcomes, [None] * len(part), [e.name() for e in errors], latency)
            for name in outcomes:
                self.counts[name] += 1
            self._failed.clear()

    def _write(self, part, raw, outcomes, offsets, errors, latency_s) -> None:
        parts = np.asarray(part, dtype=np.int32)
        values = pc.cast(pa.array(raw, pa.string()), pa.int64())
        latency = np.asarray(latency_s, dtype=np.float64) * 1000
        self._write_rows(parts, values, pa.array(outcomes, pa.string()), pa.array(offsets, pa.int64()),
                         pa.array(errors, pa.string()), pa.array(latency, mask=latency < 0))

    def _write_rows(self, parts: np.ndarray, values: pa.Array, outcomes, offsets, errors, latency) -> None:
        index = values.to_numpy(zero_copy_only=False) * self.partitions + parts
        times = np.asarray(self.chunk_times_ms, dtype=np.int64)
        sent_at = pa.array(times[np.minimum(index // CHUNK, len(times) - 1)], pa.int64()).cast(
            pa.timestamp("ms", tz="UTC")) if len(times) else pa.nulls(len(parts), pa.timestamp("ms", tz="UTC"))
        table = pa.table([pa.array(parts, pa.int32()), values, outcomes, offsets, errors, sent_at, latency],
                         schema=ACKS_SCHEMA)
        for p in np.unique(parts).tolist():
            self._writer.write_table(table.filter(pa.array(parts == p)))

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
        self._writer = pq.ParquetWriter(self.path, ACKS_SCHEMA)
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
        parts_a, values_a = np.concatenate(parts), np.concatenate(values).astype(np.int64)
        n = len(values_a)
        self._write_rows(parts_a, pa.array(values_a), pa.array([UNKNOWN] * n, pa.string()), pa.nulls(n, pa.int64()),
                         pa.nulls(n, pa.string()), pa.nulls(n, pa.float64()))
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
            producer.purge(in_queue=True, in_flight=True, blocking=False)
            producer.flush(5.0)
    except BaseException:
        # Interrupted or failed: collect what reports can still come, quickly; the rest become unknown.
        producer.purge(in_queue=True, in_flight=True, blocking=False)
        producer.flush(2.0)
        raise
    finally:
        producer.poll(0)
        log.close([count // partitions + (1 if p < count % partitions else 0) for p in range(partitions)])
    return ProduceResult(count, log.counts[ACKED], log.counts[REJECTED], log.counts[UNKNOWN],
                         time.monotonic() - t0, stop.is_set())
