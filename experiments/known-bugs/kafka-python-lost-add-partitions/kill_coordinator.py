"""A transactional kafka-python producer whose transaction coordinator is killed and started again between two
transactions.

Transaction 1 (30 records over partitions 0-2 of TOPIC) is committed. The script prints KILL and waits for a line on
stdin: series.py kills the broker then (one local node: the coordinator and every partition's leader) and starts it
again a few seconds later. Transaction 2 begins at once and sends 30 more records; the script prints what their
futures said (delivery_timeout_ms 60 s), whether commit_transaction() returned or raised, and how many of
transaction 2's records a read_committed consumer reads. A client that finds its coordinator again acknowledges the
30 sends once the broker is back and commits them; -v: kafka-python's log (WARNING and up) on stderr.

    python series.py kafka-python-lost-add-partitions/kill_coordinator.py --kafka-python V --kill-on KILL --down 3
"""

import collections
import logging
import sys
import time
import uuid

import kafka
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

bootstrap, topic = sys.argv[1:3]
logging.basicConfig(stream=sys.stderr, level=logging.WARNING if "-v" in sys.argv else logging.CRITICAL + 1)
tid = f"kill-coordinator-{uuid.uuid4().hex[:8]}"
producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid, delivery_timeout_ms=60000,
                         request_timeout_ms=10000)
producer.init_transactions()
producer.begin_transaction()
for future in [producer.send(topic, b"%s 1 %d" % (tid.encode(), i), partition=i % 3) for i in range(30)]:
    future.get(timeout=60)
producer.commit_transaction()
print(f"kafka-python {kafka.__version__}: transaction 1 committed; KILL", flush=True)
sys.stdin.readline()
started = time.monotonic()
producer.begin_transaction()
futures = [producer.send(topic, b"%s 2 %d" % (tid.encode(), i), partition=i % 3) for i in range(30)]
said = collections.Counter()
for future in futures:
    try:
        future.get(timeout=120)
        said["acknowledged"] += 1
    except Exception as e:
        said[type(e).__name__] += 1
print(f"transaction 2's 30 sends, {time.monotonic() - started:.0f} s after the kill: {dict(said)}")
try:
    producer.commit_transaction()
    print("commit_transaction() returned")
except Exception as e:
    print(f"commit_transaction() raised {type(e).__name__}: {e}")
producer.close(timeout=5)

consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed", auto_offset_reset="earliest",
                         consumer_timeout_ms=5000)
consumer.assign([TopicPartition(topic, p) for p in range(3)])
mine = sum(1 for m in consumer if m.value.startswith(b"%s 2 " % tid.encode()))
consumer.close()
print(f"read_committed reads {mine} of transaction 2's 30 records")
