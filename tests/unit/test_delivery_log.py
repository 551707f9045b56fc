"""The delivery log: what each delivery report becomes in acks.parquet (no broker: reports are made here,
and one test produces to librdkafka's in-process mock cluster)."""

import logging

import pyarrow.parquet as pq
import pytest
from confluent_kafka import KafkaError, KafkaException

from harness.workload.deliverylog import CHUNK, DeliveryLog
from harness.workload.producer import produce


class Report:
    """What librdkafka hands to on_delivery (the part the log reads)."""

    def __init__(self, partition, value, offset, latency=0.005):
        self._p, self._v, self._o, self._l = partition, value, offset, latency

    def partition(self):
        return self._p

    def value(self):
        return b"%d" % self._v

    def offset(self):
        return self._o

    def latency(self):
        return self._l


def rows(path):
    return sorted(pq.read_table(path).to_pylist(), key=lambda r: (r["partition"], r["value"]))


def test_reports_become_rows_with_outcome_error_offset_and_times(tmp_path):
    log = DeliveryLog(tmp_path / "acks.parquet", partitions=2)
    log.mark_chunk()
    log.on_delivery(None, Report(0, 0, 0))
    log.on_delivery(None, Report(1, 0, None))  # a negative offset reaches Python as None
    log.on_delivery(KafkaError(KafkaError._MSG_TIMED_OUT), Report(0, 1, None, -1))
    log.on_delivery(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE), Report(1, 1, None))
    log.close(4)
    got = rows(tmp_path / "acks.parquet")
    assert [(r["partition"], r["value"], r["outcome"], r["offset"], r["error"]) for r in got] == [
        (0, 0, "acked", 0, None), (0, 1, "unknown", None, "_MSG_TIMED_OUT"),
        (1, 0, "acked", -1, None), (1, 1, "rejected", None, "MSG_SIZE_TOO_LARGE")]
    assert got[0]["latency_ms"] == pytest.approx(5.0) and got[1]["latency_ms"] is None
    assert len({r["sent_at"] for r in got}) == 1 and got[0]["sent_at"] is not None
    assert log.counts == {"acked": 2, "rejected": 1, "unknown": 1} and log.sent == 4
    assert pq.ParquetFile(tmp_path / "acks.parquet").metadata.num_row_groups == 2 * 2  # a row group per partition


def test_with_acks_0_no_offset_is_told_and_none_is_recorded(tmp_path):
    log = DeliveryLog(tmp_path / "acks.parquet", partitions=1, offsets_told=False)
    log.mark_chunk()
    log.on_delivery(None, Report(0, 0, None))
    log.close(1)
    assert rows(tmp_path / "acks.parquet")[0]["offset"] is None


def test_sends_without_a_report_become_unknown(tmp_path):
    log = DeliveryLog(tmp_path / "acks.parquet", partitions=2)
    log.mark_chunk()
    log.on_delivery(None, Report(0, 0, 0))
    log.close(3)  # messages 0, 1, 2: values 0 and 1 of partition 0 and value 0 of partition 1
    got = rows(tmp_path / "acks.parquet")
    assert [(r["partition"], r["value"], r["outcome"]) for r in got] == [(0, 0, "acked"), (0, 1, "unknown"),
                                                                      (1, 0, "unknown")]
    assert log.counts == {"acked": 1, "rejected": 0, "unknown": 2}


def test_produce_to_librdkafkas_mock_cluster_keeps_the_accounting(tmp_path):
    quiet = logging.getLogger("mock")
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    log = DeliveryLog(tmp_path / "acks.parquet", partitions=3)
    n = 3 * CHUNK + 7
    r = produce({"bootstrap.servers": "unused:1", "test.mock.num.brokers": 1}, "t", 3, n,
                {"enable.idempotence": True}, log, logger=quiet)
    assert (r.sent, r.acked, r.rejected, r.unknown) == (n, n, 0, 0)
    got = rows(tmp_path / "acks.parquet")
    assert len(got) == n and {r["value"] for r in got if r["partition"] == 2} == set(range(n // 3))
    assert len(log.chunk_times_ms) == 4 and all(r["offset"] == r["value"] for r in got)


class QueueOf:
    """A client whose local queue holds `capacity` messages until poll() serves their reports (acked)."""

    def __init__(self, capacity, refuse_after=None):
        self.capacity, self.queue, self.sent, self.refuse_after = capacity, [], [], refuse_after

    def produce_batch(self, topic, batch, partition, on_delivery):
        queued = 0
        for m in batch:
            if self.refuse_after is not None and len(self.sent) == self.refuse_after:
                self.refuse_after = None  # refuses one message, then takes the next: out of order
                m["_error"] = KafkaError(KafkaError._QUEUE_FULL)
            elif len(self.queue) < self.capacity:
                self.queue.append((partition, m["value"], on_delivery))
                self.sent.append((partition, int(m["value"])))
                queued += 1
            else:
                m["_error"] = KafkaError(KafkaError._QUEUE_FULL)
        return queued

    def poll(self, timeout=0):
        for offset, (p, v, cb) in enumerate(self.queue):
            cb(None, Report(p, int(v), offset))
        self.queue.clear()
        return 0


def test_a_client_that_fails_for_good_ends_the_workload_keeping_what_was_sent(tmp_path, monkeypatch):
    from harness.workload import producer as module

    class Failing(QueueOf):
        """Acks everything at once, then refuses every send after 100, as a fatally failed client does: its
        error_cb is told the underlying error once (at the next poll), each refused send only _FATAL."""

        def __init__(self, conf):
            super().__init__(capacity=1 << 30)
            self.error_cb, self.failed = conf["error_cb"], None

        def produce_batch(self, topic, batch, partition, on_delivery):
            refused = batch[max(0, 100 - len(self.sent)):]
            queued = super().produce_batch(topic, batch[:len(batch) - len(refused)], partition, on_delivery)
            for m in refused:
                m["_error"] = KafkaError(KafkaError._FATAL, "Fatal error: sequence desynchronization", fatal=True)
                self.failed = self.failed or False
            return queued

        def poll(self, timeout=0):
            if self.failed is False:
                self.failed = True
                self.error_cb(KafkaError(KafkaError._TRANSPORT, "a broker went away"))  # not fatal: not named
                self.error_cb(KafkaError(KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER, "sequence desync", fatal=True))
            return super().poll(timeout)

        def flush(self, timeout=0):
            return self.poll()

        def purge(self, **kw):
            pass

    monkeypatch.setattr(module, "Producer", Failing)
    log = DeliveryLog(tmp_path / "acks.parquet", partitions=2)
    healed = []
    r = produce({}, "t", 2, 5000, {}, log, before_flush=lambda: healed.append(True))
    # The first chunk (1,024 sends) was handed: 100 queued and acked, the other 924 refused (rejected: never
    # sent); no chunk after it.
    assert (r.sent, r.acked, r.rejected, r.unknown) == (1024, 100, 924, 0)
    assert "sequence desynchronization" in r.error and healed == [True]
    assert r.fatal == "OUT_OF_ORDER_SEQUENCE_NUMBER"  # the name a known-bug experiment looks for
    got = rows(tmp_path / "acks.parquet")
    assert {(x["partition"], x["value"]) for x in got} == {(i % 2, i // 2) for i in range(1024)}
    assert {x["error"] for x in got if x["outcome"] == "rejected"} == {"_FATAL"}
    assert sorted(x["value"] for x in got if x["outcome"] == "acked" and x["partition"] == 0) == list(range(100))


def test_a_full_queue_hands_the_rest_of_a_batch_again_in_order():
    from harness.workload.producer import hand_batch

    client, handed, reported = QueueOf(capacity=7), [], []
    error = hand_batch(client, "t", 1, list(range(30)), lambda err, msg: reported.append(int(msg.value())),
                       refused=None, handed=handed)
    assert error is None and handed == list(range(30))
    assert client.sent == [(1, v) for v in range(30)] and reported == list(range(28))  # 2 still queued


def test_a_client_that_takes_a_message_after_refusing_one_fails_the_harness():
    from harness.workload.producer import hand_batch

    with pytest.raises(RuntimeError, match="send order would break"):
        hand_batch(QueueOf(capacity=100, refuse_after=3), "t", 0, list(range(10)), lambda err, msg: None,
                   refused=None, handed=[])


def test_librdkafka_refuses_the_rest_of_a_batch_when_its_queue_is_full():
    """The real client: a queue of 10 and no broker; each message times out after 0.2 s, which frees the
    queue. All 25 values are handed, and their reports come in value order."""
    from confluent_kafka import Producer

    from harness.workload.producer import hand_batch

    quiet = logging.getLogger("no-broker")
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    client = Producer({"bootstrap.servers": "127.0.0.1:9", "queue.buffering.max.messages": 10,
                       "message.timeout.ms": 200, "logger": quiet})
    reported, handed = [], []
    error = hand_batch(client, "t", 0, list(range(25)), lambda err, msg: reported.append((err.name(), msg.value())),
                       refused=None, handed=handed)
    client.flush(5)
    assert error is None and handed == list(range(25))
    assert reported == [("_MSG_TIMED_OUT", b"%d" % v) for v in range(25)]


class OneByOne(QueueOf):
    """A client without produce_batch (confluent-kafka before 2.12): produce() raises BufferError on a full
    queue and KafkaException on any other refusal."""

    produce_batch = property(lambda self: (_ for _ in ()).throw(AttributeError("produce_batch")))

    def __init__(self, capacity, fail_from=None):
        super().__init__(capacity=capacity)
        self.fail_from = fail_from

    def produce(self, topic, value, partition, on_delivery):
        if self.fail_from is not None and len(self.sent) >= self.fail_from:
            raise KafkaException(KafkaError(KafkaError._FATAL, "fenced", fatal=True))
        if len(self.queue) >= self.capacity:
            raise BufferError("Local: Queue full")
        self.queue.append((partition, value, on_delivery))
        self.sent.append((partition, int(value)))


def test_a_client_without_produce_batch_gets_one_produce_per_message_in_order():
    from harness.workload.producer import hand_batch

    client, handed, reported = OneByOne(capacity=7), [], []
    assert not hasattr(client, "produce_batch")
    error = hand_batch(client, "t", 1, list(range(30)), lambda err, msg: reported.append(int(msg.value())),
                       refused=None, handed=handed)
    assert error is None and handed == list(range(30))
    assert client.sent == [(1, v) for v in range(30)] and reported == list(range(28))  # 2 still queued


def test_a_client_without_produce_batch_that_refuses_for_good_records_the_rest_as_refused():
    from harness.workload.producer import hand_batch

    client, handed, refused = OneByOne(capacity=100, fail_from=4), [], []
    error = hand_batch(client, "t", 0, list(range(10)), lambda err, msg: None,
                       refused=lambda p, v, e: refused.append((p, v, e.name())), handed=handed)
    assert error.name() == "_FATAL" and handed == list(range(10))
    assert client.sent == [(0, v) for v in range(4)] and refused == [(0, v, "_FATAL") for v in range(4, 10)]


def test_librdkafkas_fatal_log_line_names_the_error_when_error_cb_says_nothing(tmp_path):
    # A 2.4.0 producer logged "Fatal error: Local: Inconsistent state: Unable to reconstruct MessageSet" (librdkafka
    # #4736) and its error_cb was never served: the line itself names the error, and is still written.
    from harness.logfile import FileLogger
    from harness.workload.producer import client_conf

    named = []
    with FileLogger(tmp_path / "p.log") as logger:
        conf = client_conf({}, {}, logger, named.append)
        logger.log(logging.INFO, "%s [%s] %s", "FAIL", "rdkafka#producer-1", "[thrd:b]: Disconnected")  # not fatal
        logger.log(logging.CRITICAL, "%s [%s] %s", "FATAL", "rdkafka#producer-1", "[thrd:b]: Fatal error: Local: "
                   "Inconsistent state: Unable to reconstruct MessageSet (currently with 5 message(s))")
        conf["error_cb"](KafkaError(KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER, "desync", fatal=True))
    assert named == ["_INCONSISTENT", "OUT_OF_ORDER_SEQUENCE_NUMBER"]
    assert "Unable to reconstruct MessageSet" in (tmp_path / "p.log").read_text()
