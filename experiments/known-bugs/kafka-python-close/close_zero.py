"""kafka-python (2.1.0 and later): close(timeout=0) with records still queued raises KafkaTimeoutError and leaves
the producer running.

    PYTHONPATH=/path/to/kafka-python python close_zero.py BOOTSTRAP TOPIC

Ten records are queued behind a 5 s linger; close(timeout=0) is called at once. close() starts with
flush(timeout) (dpkp/kafka-python#2537, March 2025), which raises when anything is still out, before the
force-close that timeout 0 asks for: the sender thread keeps running and delivers the records afterwards.
Exit status 1 when that happened (REPRODUCED), 0 when close() closed the producer.
"""

import sys
import threading
import time

import kafka
from kafka import KafkaProducer

bootstrap, topic = sys.argv[1], sys.argv[2]
producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5000, batch_size=1 << 20)
producer.partitions_for(topic)
delivered = []
for i in range(10):
    producer.send(topic, b"%d" % i).add_callback(lambda md: delivered.append(md.offset))
try:
    producer.close(timeout=0)
    print("close(timeout=0) returned")
except Exception as e:
    print(f"close(timeout=0) raised {type(e).__name__}: {e}")
sender_alive = producer._sender.is_alive()
print(f"kafka-python {kafka.__version__}: after close(timeout=0) the sender thread is "
      f"{'alive' if sender_alive else 'gone'}, {len(delivered)} record(s) delivered")
time.sleep(6)
print(f"6 s later: {len(delivered)} record(s) delivered, sender thread "
      f"{'alive' if producer._sender.is_alive() else 'gone'}, threads: {threading.active_count()}")
reproduced = sender_alive and len(delivered) > 0
print("REPRODUCED: close(timeout=0) did not close the producer" if reproduced else "not reproduced")
sys.exit(1 if reproduced else 0)
