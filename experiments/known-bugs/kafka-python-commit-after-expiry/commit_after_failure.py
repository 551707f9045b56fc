"""A transaction in which half the sends time out (their broker paused past delivery_timeout_ms), then committed.

One transactional kafka-python producer begins a transaction and sends 10 records to partition 0 of TOPIC, all
acknowledged (flush). Then the script pauses the broker (SIGSTOP to PID, a local single-node cluster: the partition's
leader and the transaction coordinator at once), sends 10 more, waits until their futures fail (delivery_timeout_ms
is 5 s), resumes the broker (SIGCONT) and calls commit_transaction(). It prints what each send's future said, whether
the commit returned or raised (if it raised, the transaction is aborted) and how many of the transaction's 20
records a read_committed consumer reads (TOPIC is created, one partition, if it is not there). A client that keeps a transaction atomic refuses the commit of a
transaction with a failed send (the Java client's commitTransaction() throws): 0 are read. 10 read means a
transaction was committed without half its records, and the application was told it committed.

    PYTHONPATH=.../kafka-python python commit_after_failure.py BOOTSTRAP TOPIC PID [-v]   (-v: the client's debug log)
"""

import collections
import logging
import os
import signal
import sys
import uuid

import kafka
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import TopicAlreadyExistsError

bootstrap, topic, pid = sys.argv[1], sys.argv[2], int(sys.argv[3])
logging.basicConfig(stream=sys.stderr, level=logging.DEBUG if "-v" in sys.argv else logging.CRITICAL,
                    format="%(asctime)s %(levelname)s %(name)s: %(message)s")
admin = KafkaAdminClient(bootstrap_servers=bootstrap)
try:
    admin.create_topics([NewTopic(topic, 1, 1)])
except TopicAlreadyExistsError:
    pass
admin.close()
tid = f"commit-after-failure-{uuid.uuid4().hex[:8]}"
producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid, delivery_timeout_ms=5000,
                         request_timeout_ms=2000, linger_ms=0)
producer.init_transactions()
producer.begin_transaction()


def send_ten(first, label):
    futures = [producer.send(topic, b"%s %d" % (tid.encode(), i), partition=0) for i in range(first, first + 10)]
    said = collections.Counter()
    for future in futures:
        try:
            future.get(timeout=60)
            said["acknowledged"] += 1
        except Exception as e:
            said[type(e).__name__] += 1
    print(f"kafka-python {kafka.__version__}: {label}: {dict(said)}")


send_ten(0, "sends 0-9, broker running")
os.kill(pid, signal.SIGSTOP)
try:
    send_ten(10, "sends 10-19, broker paused")
finally:
    os.kill(pid, signal.SIGCONT)
try:
    producer.commit_transaction()
    print("commit_transaction() returned")
except Exception as e:
    print(f"commit_transaction() raised {type(e).__name__}: {e}")
    producer.abort_transaction()
    print("abort_transaction() returned")
producer.close(timeout=5)

consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed", auto_offset_reset="earliest",
                         consumer_timeout_ms=5000)
consumer.assign([TopicPartition(topic, 0)])
mine = sum(1 for m in consumer if m.value.startswith(tid.encode()))
consumer.close()
print(f"read_committed reads {mine} of the transaction's 20 records")
