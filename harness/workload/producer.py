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
    """Delivery reports, spilled to acks.parquet in batches so a long run stays small in memory."""

    SPILL = 100_000

    def __init__(self, path: Path):
        self.path = path
        self._rows: list[tuple] = []
        self._writer = pq.ParquetWriter(path, ACKS_SCHEMA)
        self.counts = {"acked": 0, "rejected": 0, "unknown": 0}
        self._seen: list[set] = []  # filled only by close(), to find sends without a report

    def on_delivery(self, err, msg) -> None:
        # Runs once per message inside poll()/flush(): keep it to one append.
        self._rows.append((msg.partition(), msg.value(), classify(err), msg.offset() if err is None else None))
        if len(self._rows) >= self.SPILL:
            self._spill()

    def _spill(self) -> None:
        rows, self._rows = self._rows, []
        if not rows:
            return
        part, raw, outcome, offset = zip(*rows)
        values = pc.cast(pc.cast(pa.array(raw, pa.binary()), pa.string()), pa.int64())
        batch = pa.record_batch([pa.array(part, pa.int32()), values, pa.array(outcome, pa.string()),
                                 pa.array(offset, pa.int64())], schema=ACKS_SCHEMA)
        for name, n in zip(*pc.value_counts(batch.column("outcome")).flatten()):
            self.counts[name.as_py()] += n.as_py()
        self._writer.write_batch(batch)

    def close(self, sent_per_partition: list[int]) -> None:
        """Write the rest; any send with no report becomes unknown; fsync the file."""
        self._spill()
        reported = sum(self.counts.values())
        self._writer.close()
        if reported != sum(sent_per_partition):
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
    bootstrap: str,
    topic: str,
    partitions: int,
    messages: int,
    config: dict,
    acks_path: Path,
    rate: float | None = None,
    flush_timeout: float = 60.0,
    stop: threading.Event | None = None,
    on_progress: Callable[[int], None] | None = None,
    logger: logging.Logger | None = None,
    before_flush: Callable[[], None] | None = None,
) -> ProduceResult:
    """Send `messages` counters round-robin over the partitions, at `rate` msg/s if given.

    `before_flush` runs once every message is handed to the client and before the
    final flush: the runner heals all faults there, so the flush can complete.
    """
    stop = stop or threading.Event()
    log = DeliveryLog(acks_path)
    conf = {**config, "bootstrap.servers": bootstrap}
    if logger is not None:
        conf["logger"] = logger
    producer = Producer(conf)
    sent = [0] * partitions
    t0 = time.monotonic()
    i = 0
    try:
        for i in range(messages):
            p = i % partitions
            value = b"%d" % sent[p]
            while True:
                try:
                    producer.produce(topic, value, partition=p, on_delivery=log.on_delivery)
                    break
                except BufferError:  # local queue full: serve callbacks, then retry
                    producer.poll(0.01)
            sent[p] += 1
            if i & 1023 == 1023:
                producer.poll(0)
                if on_progress:
                    on_progress(i + 1)
                if stop.is_set():
                    break
                if rate:
                    ahead = t0 + (i + 1) / rate - time.monotonic()
                    if ahead > 0:
                        time.sleep(ahead)
        total = sum(sent)
        if on_progress:
            on_progress(total)
        if before_flush:
            before_flush()
        left = producer.flush(0.0 if stop.is_set() else flush_timeout)
        if left:
            # Still queued or in flight: purge so each gets its report (never silence).
            producer.purge(in_queue=True, in_flight=True, blocking=False)
            producer.flush(5.0)
    finally:
        producer.poll(0)
        log.close(sent)
    return ProduceResult(sum(sent), log.counts["acked"], log.counts["rejected"], log.counts["unknown"],
                         time.monotonic() - t0, stop.is_set())
