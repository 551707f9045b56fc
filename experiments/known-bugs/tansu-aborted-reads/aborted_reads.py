"""Tansu 0.6.0 serves the records of an aborted transaction to read_committed consumers.

    python aborted_reads.py BOOTSTRAP [--fetch]

librdkafka (confluent-kafka) writes 5 records in a transaction and aborts it, then 5 in one it commits, to a new
one-partition topic, and a read_committed consumer reads the partition from its start. Exit status 1 when it read
an aborted record (REPRODUCED), 0 otherwise (Apache Kafka: 0). --fetch also sends one raw Fetch v4 at
read_committed and prints what the broker answers: its last stable offset, its list of aborted transactions (what
a read_committed client filters by) and each batch (needs kafka-python on PYTHONPATH, for its protocol classes).
"""

import socket
import struct
import sys
import time
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

bootstrap = sys.argv[1]
topic = f"aborted-reads-{uuid.uuid4().hex[:8]}"
admin = AdminClient({"bootstrap.servers": bootstrap})  # kept: its handle must outlive the request
admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": topic})
producer.init_transactions(30)
for kind, end in (("aborted", producer.abort_transaction), ("committed", producer.commit_transaction)):
    producer.begin_transaction()
    for i in range(5):
        producer.produce(topic, f"{kind}-{i}".encode(), partition=0)
    producer.flush(30)
    end(30)
    print(f"transaction of 5 records {kind}")

consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic, "isolation.level": "read_committed",
                     "enable.auto.commit": False})
consumer.assign([TopicPartition(topic, 0, 0)])
read, deadline = [], time.monotonic() + 10
while time.monotonic() < deadline and len(read) < 10:
    m = consumer.poll(0.5)
    if m is not None and not m.error():
        read.append(f"{m.offset()}:{m.value().decode()}")
consumer.close()
aborted = [r for r in read if ":aborted-" in r]
print(f"read_committed read {read}")

if "--fetch" in sys.argv:
    from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
    from kafka.record.memory_records import MemoryRecords
    partition = FetchRequest.FetchTopic.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
    request = FetchRequest[4](replica_id=-1, max_wait_ms=100, min_bytes=1, max_bytes=1 << 20, isolation_level=1,
                              topics=[FetchRequest.FetchTopic(topic=topic, partitions=[partition])])
    request.with_header(correlation_id=1, client_id="aborted-reads")
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port))) as s:
        s.sendall(bytes(request.encode(header=True, framed=True)))
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
            data += s.recv(1 << 16)
    for t in FetchResponse.decode(data[4:], version=4, header=True).responses:
        for p in t.partitions:
            print(f"Fetch v4 read_committed: high watermark {p.high_watermark}, last stable offset "
                  f"{p.last_stable_offset}, aborted transactions {p.aborted_transactions!r}")
            records = MemoryRecords(bytes(p.records or b""))
            while (batch := records.next_batch()) is not None:
                what = [("ABORT" if r.abort else "COMMIT") if batch.is_control_batch else r.value.decode()
                        for r in batch]
                print(f"  batch at offset {batch.base_offset}: producer {batch.producer_id}, "
                      f"{'control' if batch.is_control_batch else 'data'}: {what}")

print(f"REPRODUCED: {len(aborted)} of 5 aborted records read under read_committed" if aborted
      else "not reproduced: no aborted record read")
sys.exit(1 if aborted else 0)
