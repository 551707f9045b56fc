"""A fenced transactional producer resuming against its successor's open transaction, kafka-python for both.

The first instance of a transactional.id begins a transaction and writes 5 records; the second instance's
init_transactions() fences it (aborting that transaction). The second begins a transaction and writes 10 records
(flushed: its transaction is open at the coordinator). Then the first, a zombie, sends 5 more: it gets
InvalidProducerEpochError, and kafka-python bumps its epoch (KIP-360: InitProducerId with its own, stale, epoch).
The script prints how the first's bump ended, what the second's commit_transaction() did, and how many of the
second's 10 records a read_committed consumer reads (-v: kafka-python's debug log on stderr; --control: the first
sends nothing more after it is fenced, so it never bumps).

    PYTHONPATH=.../kafka-python python stale_bump.py BOOTSTRAP TOPIC [-v] [--control]   (partition 0 of TOPIC)
"""

import logging
import sys
import time
import uuid

from kafka import KafkaConsumer, KafkaProducer

bootstrap, topic = sys.argv[1:3]
logging.basicConfig(stream=sys.stderr, level=logging.DEBUG if "-v" in sys.argv else logging.WARNING,
                    format="%(asctime)s %(levelname)s %(name)s: %(message)s")
tid = f"stale-bump-{uuid.uuid4().hex[:8]}"
first = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid)
first.init_transactions()
first.begin_transaction()
for i in range(5):
    first.send(topic, b"%s first %d" % (tid.encode(), i), partition=0)
first.flush()
second = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid)
second.init_transactions()  # fences the first, aborting its open transaction: its epoch is stale from now on
print("first:", first._transaction_manager.producer_id_and_epoch)
print("second:", second._transaction_manager.producer_id_and_epoch)

second.begin_transaction()
for i in range(10):
    second.send(topic, b"%s second %d" % (tid.encode(), i), partition=0)
second.flush()  # written: the second's transaction is open at the coordinator

if "--control" not in sys.argv:
    for i in range(5, 10):  # the zombie goes on: InvalidProducerEpochError, then kafka-python's bump
        first.send(topic, b"%s first %d" % (tid.encode(), i), partition=0)
    manager = first._transaction_manager
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not manager.has_fatal_error():
        time.sleep(0.05)
    print("first:", "fatal error" if manager.has_fatal_error() else "no fatal error in 15 s", "-",
          repr(manager.last_error))

try:
    second.commit_transaction()
    print("second: commit_transaction() returned")
except Exception as e:
    print(f"second: commit_transaction() raised {type(e).__name__}: {e}")

consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed", auto_offset_reset="earliest",
                         consumer_timeout_ms=5000)
from kafka import TopicPartition  # noqa: E402
consumer.assign([TopicPartition(topic, 0)])
mine = [m.value for m in consumer if m.value.startswith(b"%s second" % tid.encode())]
print(f"read_committed reads {len(mine)} of the second's 10 records")
for p in (first, second):
    try:
        p.close(timeout=1)
    except Exception:
        pass
