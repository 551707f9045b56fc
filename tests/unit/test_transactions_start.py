"""Why a transactional producer could not start, in words that do not blame the broker for a timeout: a fake
Producer class and a fake clock (each init_transactions call advances it by the time it was given)."""

import pytest
from confluent_kafka import KafkaError, KafkaException

from harness.workload import transactional
from harness.workload.deliverylog import DeliveryLog
from harness.workload.transactional import TransactionalWorkload, TransactionsLog, TransactionsUnavailable


class Clock:
    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        return self.now


def fake_producer(clock, error):
    class FakeProducer:
        calls = 0

        def __init__(self, conf):
            pass

        def init_transactions(self, timeout):
            FakeProducer.calls += 1
            clock.now += timeout  # it waited all it was given
            raise KafkaException(error)

    return FakeProducer


@pytest.fixture
def workload(tmp_path, monkeypatch):
    clock = Clock()
    monkeypatch.setattr(transactional.time, "monotonic", clock.monotonic)

    def make(error, config=None):
        producer = fake_producer(clock, error)
        monkeypatch.setattr(transactional, "Producer", producer)
        w = TransactionalWorkload({"bootstrap.servers": "127.0.0.1:9"}, "t", 3, 10,
                                  {"transactional.id": "x", **(config or {})},
                                  DeliveryLog(tmp_path / "acks.parquet", 3), TransactionsLog(tmp_path / "tx.parquet"),
                                  size=5, abort_ratio=0.0, seed=1, flush_timeout=30.0)
        return w, producer
    return make


TIMED_OUT = KafkaError(KafkaError._TIMED_OUT, "Timed out waiting for operation to finish", retriable=True)


@pytest.mark.parametrize("config, waited", [
    ({}, 70),  # past librdkafka's default socket.timeout.ms (60 s), when it retries a request never answered
    ({"socket.timeout.ms": 5000}, 30),  # the workload's flush timeout, when that is longer
])
def test_an_init_that_keeps_timing_out_waits_past_the_client_s_socket_timeout_and_says_it_timed_out(
        workload, config, waited):
    w, producer = workload(TIMED_OUT, config)
    with pytest.raises(TransactionsUnavailable) as e:
        w._new_instance()
    assert f"did not complete in {waited} s" in str(e.value) and "refuses" not in str(e.value)
    assert producer.calls == 1  # the one call waited the whole time: none after the deadline


def test_a_broker_that_refuses_the_api_is_said_so(workload):
    w, producer = workload(KafkaError(KafkaError.UNSUPPORTED_VERSION, "InitProducerId not supported"))
    with pytest.raises(TransactionsUnavailable) as e:
        w._new_instance()
    assert str(e.value).startswith("the broker refuses transactions") and producer.calls == 1
