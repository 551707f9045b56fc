"""Records what librdkafka sends a Kafka broker, for the frame parser's tests (tests/unit/test_kafka_frames.py).

One Kafka node from KAFKA_HOME (the harness's local backend), its client proxy pointed at a recorder that
forwards to the broker and keeps every byte each client connection sent; then an idempotent producer, a
transactional producer (commit, abort, offsets sent to a transaction) and a consumer group (classic protocol:
join, sync, heartbeat, fetch, commit, leave) run against it. Writes requests.bin: per connection, an 8-byte
length then the bytes, in the order connections opened.

    KAFKA_HOME=/path/to/kafka python tests/data/kafka-4.1.0/capture_requests.py
"""

import json
import socket
import struct
import tempfile
import threading
import urllib.request
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from harness.cluster import make_cluster
from harness.cluster.topic import create_topic
from harness.spec import LocalClusterSpec

OUT = Path(__file__).with_name("requests.bin")


class Recorder:
    def __init__(self, upstream_port: int):
        self.upstream_port = upstream_port
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.streams: list[bytearray] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            client, _ = self.server.accept()
            try:
                broker = socket.create_connection(("127.0.0.1", self.upstream_port))
            except OSError:  # the broker is stopping: clients still reconnecting are turned away
                client.close()
                continue
            sent = bytearray()
            self.streams.append(sent)
            threading.Thread(target=self._copy, args=(client, broker, sent), daemon=True).start()
            threading.Thread(target=self._copy, args=(broker, client, None), daemon=True).start()

    @staticmethod
    def _copy(src, dst, keep):
        try:
            while data := src.recv(65536):
                if keep is not None:
                    keep += data
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def main():
    cluster = make_cluster(LocalClusterSpec(broker="kafka", brokers=1), Path(tempfile.mkdtemp()))
    cluster.up()
    try:
        api = f"http://127.0.0.1:{cluster.toxi.port}/proxies/{cluster.proxy_name(0)}"
        upstream = json.load(urllib.request.urlopen(api))["upstream"]
        recorder = Recorder(int(upstream.rsplit(":", 1)[1]))
        update = json.dumps({"upstream": f"127.0.0.1:{recorder.port}"}).encode()
        urllib.request.urlopen(urllib.request.Request(api, data=update, method="POST"))
        conf = dict(cluster.client)
        create_topic(conf, "capture", 2, 1)
        create_topic(conf, "capture-out", 2, 1)
        producer = Producer({**conf, "enable.idempotence": True, "linger.ms": 5})
        for i in range(200):
            producer.produce("capture", str(i).encode(), partition=i % 2)
        producer.flush(30)
        txn = Producer({**conf, "transactional.id": "capture-tx"})
        txn.init_transactions(30)
        for commit in (True, False):
            txn.begin_transaction()
            for i in range(20):
                txn.produce("capture-out", str(i).encode(), partition=i % 2)
            (txn.commit_transaction if commit else txn.abort_transaction)(30)
        consumer = Consumer({**conf, "group.id": "capture-group", "auto.offset.reset": "earliest",
                             "enable.auto.commit": False})
        consumer.subscribe(["capture"])
        seen = 0
        while seen < 200:
            msgs = consumer.consume(100, 1.0)
            seen += len([m for m in msgs if not m.error()])
        txn.begin_transaction()
        txn.produce("capture-out", b"x", partition=0)
        txn.send_offsets_to_transaction([TopicPartition("capture", 0, 100)], consumer.consumer_group_metadata(), 30)
        txn.commit_transaction(30)
        consumer.commit(asynchronous=False)
        consumer.close()
        producer.flush(10)
    finally:
        cluster.down()
    with open(OUT, "wb") as f:
        for stream in recorder.streams:
            f.write(struct.pack(">q", len(stream)) + bytes(stream))
    print(f"{OUT}: {len(recorder.streams)} connections, {sum(map(len, recorder.streams)):,} bytes")


if __name__ == "__main__":
    main()
