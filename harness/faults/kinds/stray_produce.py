"""`stray-produce`: a transactional Produce request that arrives after its producer's transaction was aborted.

KIP-890 names two ways a transactional batch reaches a partition that no ongoing transaction holds: a Produce
delayed in the network until after its transaction ended, and a client that writes a partition it never
added to its transaction. Either way the partition leader, unless it asks the coordinator first
(`transaction.partition.verification.enable`), writes the batch and opens a transaction there that no
coordinator knows of and no marker will ever end (a hanging transaction): the partition's last stable offset
stays at the batch for good, and read_committed readers see nothing after it.

librdkafka does not send such a request itself. Measured (experiments/known-bugs/delayed-produce.yaml): it
retries a timed-out Produce on a new connection, which makes the late original a duplicate. By its code
(rdkafka_txnmgr.c, rdkafka_request.c): it waits for its in-flight requests before EndTxn, and a message that
timed out makes it bump its epoch before the abort, which fences a late original. So the fault makes one, as a
client that aborted without waiting for its in-flight requests, or that wrote a partition it never added, would:

1. a transactional producer of its own (transactional.id `kc-stray-<topic>`, not the workload's) writes
   `records` values to the partition in a transaction and aborts it (librdkafka, as any client);
2. once the abort's marker is at the partition (its last stable offset has passed those values: the coordinator
   answers EndTxn before it writes the markers, and a request sent before them would join the aborted
   transaction and end with it), the batch that producer would have sent next (same producer id and epoch, the next sequence number,
   `records` more values) is sent to the partition's leader as a Produce request of its own, with no
   AddPartitionsToTxn before it, through the address clients use (the broker's proxy).

Its values are not numbers (`stray-<n>`), so a reader that ever sees them counts them as unexpected records.
The fault's journal entry says what the leader answered to each attempt (`answers`: error names, NONE when it
wrote the batch, then also at which `offset`); a retriable answer makes it send the batch again.

The request is encoded here (Produce v3, record batch v2, CRC-32C): no client library sends a batch outside
the transaction protocol, and the stdlib has no CRC-32C (a dependency with a C extension for one checksum of a
few hundred bytes per fault is not worth it).
"""

from __future__ import annotations

import json
import socket
import struct
import time
from pathlib import Path
from typing import Annotated, Literal

from confluent_kafka import KafkaError, Producer
from pydantic import Field, model_validator

from ...logfile import FileLogger
from ...offsets import watermarks
from ..kind import FaultBase, FaultKind, LeaderTarget


PRODUCE_V3 = (0, 3)  # api_key, version: the oldest Produce Kafka 4.x takes, with a transactional_id
TRANSACTIONAL = 0x10  # record batch attributes: the batch belongs to a transaction
STATS_WAIT = 10.0  # seconds to wait for librdkafka's statistics to name the producer id
MARKER_WAIT = 30.0  # seconds to wait for the abort's marker to reach the partition
# Answers a client sends the same batch again on, ATTEMPTS times in all. Kafka 4.1 with verification on answered
# the stray batch NOT_ENOUGH_REPLICAS once right after the abort's marker, and INVALID_TXN_STATE when it came
# again 0.2 s later (measured; we take the first for the coordinator still completing the abort, which
# Kafka's code was not read to confirm).
RETRIABLE = {KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.REQUEST_TIMED_OUT, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
             KafkaError.NOT_ENOUGH_REPLICAS, KafkaError.CONCURRENT_TRANSACTIONS}
ATTEMPTS = 10
RETRY_AFTER = 0.2  # seconds

_CRC32C = []
for _n in range(256):
    _c = _n
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC32C.append(_c)


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc = _CRC32C[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _varint(n: int) -> bytes:
    """Kafka's record fields: zigzag, then base-128 little-endian groups."""
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def record_batch(producer_id: int, epoch: int, sequence: int, values: list[bytes], timestamp_ms: int) -> bytes:
    """A transactional record batch (magic 2) of `values`, keys null, first offset 0."""
    records = b""
    for i, value in enumerate(values):
        body = b"\x00" + _varint(0) + _varint(i) + _varint(-1) + _varint(len(value)) + value + _varint(0)
        records += _varint(len(body)) + body
    after_crc = (struct.pack(">hiqqqhii", TRANSACTIONAL, len(values) - 1, timestamp_ms, timestamp_ms,
                             producer_id, epoch, sequence, len(values)) + records)
    tail = struct.pack(">ibI", -1, 2, crc32c(after_crc)) + after_crc  # partition leader epoch, magic, crc
    return struct.pack(">qi", 0, len(tail)) + tail


def _string(s: str | None) -> bytes:
    if s is None:
        return struct.pack(">h", -1)
    raw = s.encode()
    return struct.pack(">h", len(raw)) + raw


def produce_request(correlation_id: int, transactional_id: str, topic: str, partition: int, batch: bytes) -> bytes:
    """A whole Produce v3 frame (size first): acks all, one topic, one partition."""
    body = (struct.pack(">hhi", *PRODUCE_V3, correlation_id) + _string("kafka-chaos-stray")
            + _string(transactional_id) + struct.pack(">hi", -1, 30000)
            + struct.pack(">i", 1) + _string(topic) + struct.pack(">i", 1)
            + struct.pack(">ii", partition, len(batch)) + batch)
    return struct.pack(">i", len(body)) + body


def produce_answer(frame: bytes) -> tuple[int, int]:
    """(error code, base offset) of the one partition of a Produce v3 response (without its size field)."""
    pos = 4 + 4  # correlation id, number of topics
    (name_len,) = struct.unpack_from(">h", frame, pos)
    pos += 2 + name_len + 4 + 4  # topic name, number of partitions, partition index
    error, offset = struct.unpack_from(">hq", frame, pos)
    return error, offset


def _exchange(address: str, frame: bytes, timeout: float) -> bytes:
    host, _, port = address.rpartition(":")
    with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout) as s:
        s.sendall(frame)
        size = struct.unpack(">i", _read(s, 4))[0]
        return _read(s, size)


def _read(s: socket.socket, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the broker closed the connection before it answered")
        data += chunk
    return bytes(data)


def _aborted_transaction(client: dict, transactional_id: str, topic: str, partition: int,
                         records: int) -> tuple[int, int]:
    """Steps 1 and 2: write `records` values to the partition in a transaction, abort it, and wait for its
    marker there; the producer's (id, epoch), from librdkafka's statistics (no client API tells them)."""
    seen: dict = {}
    failed: list[str] = []

    def stats(text: str) -> None:
        eos = json.loads(text).get("eos", {})
        if eos.get("producer_id", -1) >= 0:
            seen.update(pid=eos["producer_id"], epoch=eos["producer_epoch"])

    offsets: list[int] = []

    def delivered(err, msg) -> None:
        if err is not None:
            failed.append(err.str())
        else:
            offsets.append(msg.offset())

    producer = Producer({**client, "transactional.id": transactional_id, "statistics.interval.ms": 100,
                         "stats_cb": stats, "linger.ms": 0})
    producer.init_transactions(30)
    producer.begin_transaction()
    for n in range(records):
        producer.produce(topic, b"stray-%d" % n, partition=partition, on_delivery=delivered)
    producer.flush(30)
    producer.abort_transaction(30)
    deadline = time.monotonic() + STATS_WAIT
    while "pid" not in seen and time.monotonic() < deadline:
        producer.poll(0.1)
    producer.flush(1)
    if failed:
        raise RuntimeError(f"the stray producer's own transaction failed: {failed[0]}")
    if "pid" not in seen:
        raise RuntimeError(f"librdkafka's statistics named no producer id within {STATS_WAIT:g} s")
    _wait_past(client, topic, partition, max(offsets))
    return seen["pid"], seen["epoch"]


def _wait_past(client: dict, topic: str, partition: int, offset: int) -> None:
    """Until the partition's last stable offset is past `offset`: the transaction that wrote it has ended
    there (a transaction of the workload may hold it back a moment; it ends too)."""
    deadline = time.monotonic() + MARKER_WAIT
    while time.monotonic() < deadline:
        if watermarks(client, topic, partition + 1, "read_committed", timeout=5)[partition][1] > offset:
            return
        time.sleep(0.05)
    raise RuntimeError(f"the stray producer's aborted transaction was still open at partition {partition} "
                       f"after {MARKER_WAIT:g} s")


def stray_produce(client: dict, leader: str, topic: str, partition: int, records: int, log: Path) -> dict:
    """The fault: an aborted transaction of a producer of its own, then that producer's next batch sent
    straight to the leader (address `leader`). What it did, for the journal; its clients log to `log`."""
    transactional_id = f"kc-stray-{topic}"
    with FileLogger(log) as logger:
        pid, epoch = _aborted_transaction({**client, "logger": logger}, transactional_id, topic, partition,
                                          records)
    values = [b"stray-%d" % n for n in range(records, 2 * records)]
    batch = record_batch(pid, epoch, records, values, int(time.time() * 1000))
    answers, sent = [], None
    for attempt in range(1, ATTEMPTS + 1):
        sent = sent or time.monotonic()  # the fault took effect when the first attempt left
        error, offset = produce_answer(_exchange(leader, produce_request(attempt, transactional_id, topic, partition,
                                                                         batch), timeout=35))
        answers.append("NONE" if error == 0 else KafkaError(error).name())
        if error not in RETRIABLE:
            break
        time.sleep(RETRY_AFTER)
    effect = {"transactional_id": transactional_id, "producer_id": pid, "epoch": epoch, "partition": partition,
              "sequence": records, "records": records, "answers": answers, "took_effect": sent}
    if error == 0:
        effect["offset"] = offset
    return effect


class StrayProduce(FaultBase):
    """A transactional Produce request that arrives after its producer's transaction was aborted: a producer of
    the harness's own (not the workload's) writes `records` values to `partition` in a transaction and aborts
    it, then its next batch is sent to the partition's leader with no AddPartitionsToTxn before it, as a late
    request or a buggy client's would be. Without partition verification the leader opens a transaction there
    that never ends (a hanging transaction)."""

    kind: Literal["stray-produce"]
    partition: Annotated[int, Field(ge=0)] = Field(description="the partition of the variant's topic written")
    records: Annotated[int, Field(ge=1, le=1000)] = 5

    @model_validator(mode="after")
    def _leader(self):
        if self.target != "all" and self.target != LeaderTarget(leader_of=self.partition):
            raise ValueError(f"target: a stray Produce goes to the leader of its partition; leave target out "
                             f"(it is {{leader-of: {self.partition}}})")
        self.target = LeaderTarget(leader_of=self.partition)
        return self


# Nothing to heal: the batch is written or refused once sent. Its producer logs to logs/stray-produce.log.
KIND = FaultKind(StrayProduce, "client",
                 lambda c, b, n, p, t: stray_produce(c.client, c.endpoints[b], t, p["partition"], p["records"],
                                                     c.files.fault_log("stray-produce")),
                 lambda c, b, n, p, t: None, needs=("client_proxy", "plaintext_broker"),
                 explore={"records": (1, 100)})
