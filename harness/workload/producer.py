"""The workload: one producer of per-partition counters, and its delivery log.

Partition p receives the values 0, 1, 2, ... in order (message i goes to partition
i % P with value i // P, as ASCII decimal). Every send ends in the delivery log as
acked (with its offset), rejected or unknown; `sent == acked + rejected + unknown`
is enforced before the log is closed.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from confluent_kafka import KafkaError, Producer

ACKS_SCHEMA = pa.schema([
    ("partition", pa.int32()),
    ("value", pa.int64()),
    ("outcome", pa.string()),
    ("offset", pa.int64()),
])

# Errors that prove the message was never written: librdkafka never sent it, or the
# broker refused it outright. Anything else (timeouts, lost connections, purged
# in-flight requests) may or may not have been written: unknown.
_NEVER_SENT = {
    KafkaError._PURGE_QUEUE, KafkaError._UNKNOWN_PARTITION,
    KafkaError._UNKNOWN_TOPIC, KafkaError._INVALID_ARG,
}
_BROKER_REFUSED = {
    KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.INVALID_MSG, KafkaError.INVALID_MSG_SIZE,
    KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.INVALID_RECORD, KafkaError.RECORD_LIST_TOO_LARGE,
    KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.CLUSTER_AUTHORIZATION_FAILED,
}


def classify(err: KafkaError | None) -> str:
    if err is None:
        return "acked"
    if err.code() in _NEVER_SENT or err.code() in _BROKER_REFUSED:
        return "rejected"
    return "unknown"


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

    on_delivery runs once per message inside poll()/flush(), so it only appends a
    tuple; classification and Arrow conversion happen in spill(), off the hot path.
    """

    SPILL = 100_000

    def __init__(self, path: Path):
        self.path = path
        # Acked reports as three parallel columns (no per-message tuple); failures are rare.
        self._part: list[int] = []
        self._value: list[bytes] = []
        self._offset: list[int] = []
        self._failed: list[tuple] = []  # (partition, raw value, KafkaError)
        self._writer = pq.ParquetWriter(path, ACKS_SCHEMA)
        self.counts = {"acked": 0, "rejected": 0, "unknown": 0}
        self.sent = 0  # set by close()
        part, value, offset, failed = self._part.append, self._value.append, self._offset.append, self._failed.append

        def on_delivery(err, msg) -> None:  # a closure: no attribute look-ups per message
            if err is None:
                part(msg.partition())
                value(msg.value())
                offset(msg.offset())
            else:
                failed((msg.partition(), msg.value(), err))

        self.on_delivery = on_delivery

    def maybe_spill(self) -> None:
        if len(self._part) + len(self._failed) >= self.SPILL:
            self.spill()

    def spill(self) -> None:
        if self._part:
            n = len(self._part)
            self._write(self._part, self._value, pa.array(["acked"] * n, pa.string()),
                        pa.array(self._offset, pa.int64()))
            self.counts["acked"] += n
            for column in (self._part, self._value, self._offset):
                column.clear()
        if self._failed:
            part, raw, errors = zip(*self._failed)
            outcomes = [classify(e) for e in errors]
            self._write(part, raw, pa.array(outcomes, pa.string()), pa.nulls(len(part), pa.int64()))
            for name in outcomes:
                self.counts[name] += 1
            self._failed.clear()

    def _write(self, part, raw, outcome: pa.Array, offset: pa.Array) -> None:
        values = pc.cast(pa.array(raw, pa.string()), pa.int64())
        self._writer.write_batch(pa.record_batch([pa.array(part, pa.int32()), values, outcome, offset],
                                                 schema=ACKS_SCHEMA))

    def close(self, sent_per_partition: list[int]) -> None:
        """Write the rest; any send with no report becomes unknown; fsync the file."""
        self.sent = sum(sent_per_partition)
        self.spill()
        self._writer.close()
        if sum(self.counts.values()) != sum(sent_per_partition):
            self._add_unreported(sent_per_partition)
        with open(self.path, "rb+") as f:
            os.fsync(f.fileno())

    def _add_unreported(self, sent_per_partition: list[int]) -> None:
        table = pq.read_table(self.path)
        extra_p, extra_v = [], []
        for p, n in enumerate(sent_per_partition):
            have = set(pc.filter(table["value"], pc.equal(table["partition"], p)).to_pylist())
            missing = [v for v in range(n) if v not in have]
            extra_p += [p] * len(missing)
            extra_v += missing
        extra = pa.table([pa.array(extra_p, pa.int32()), pa.array(extra_v, pa.int64()),
                          pa.array(["unknown"] * len(extra_p)), pa.array([None] * len(extra_p), pa.int64())],
                         schema=ACKS_SCHEMA)
        self.counts["unknown"] += len(extra_p)
        pq.write_table(pa.concat_tables([table, extra]), self.path)


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
    final flush: the runner heals all faults there, so the flush can complete.
    """
    stop = stop or threading.Event()
    conf = {**config, **client}
    if logger is not None:
        conf["logger"] = logger
    producer = Producer(conf)
    produce_one, poll, on_delivery = producer.produce, producer.poll, log.on_delivery
    t0 = time.monotonic()
    count = 0  # messages handed to the client: message i -> partition i % P, value i // P
    try:
        for i in range(messages):
            value = b"%d" % (i // partitions)
            while True:
                try:
                    produce_one(topic, value, partition=i % partitions, on_delivery=on_delivery)
                    break
                except BufferError:  # local queue full: serve callbacks, then retry
                    poll(0.01)
            count = i + 1
            if count & 1023 == 0:
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
    return ProduceResult(count, log.counts["acked"], log.counts["rejected"], log.counts["unknown"],
                         time.monotonic() - t0, stop.is_set())
