"""Topic creation (harness/cluster/topic.py) over a stand-in admin client: a request librdkafka failed because it
dropped its broker handles (a re-bootstrap) is asked again; a refusal is not. No broker."""

from concurrent.futures import Future

import pytest
from confluent_kafka import KafkaError, KafkaException

from harness.cluster import topic
from harness.exits import InfraError


class Admin:
    def __init__(self, errors):
        self.errors, self.asked = list(errors), 0

    def create_topics(self, topics, operation_timeout):
        self.asked += 1
        f = Future()
        code = self.errors.pop(0) if self.errors else None
        if code is None:
            f.set_result(None)
        else:
            f.set_exception(KafkaException(KafkaError(code)))
        return {topics[0].topic: f}


def create(monkeypatch, errors):
    admin = Admin(errors)
    monkeypatch.setattr(topic, "admin_client", lambda client: admin)
    monkeypatch.setattr(topic, "wait_until_replicated", lambda *a, **k: None)
    monkeypatch.setattr(topic.time, "sleep", lambda s: None)
    topic.create_topic({}, "t", 3, 1, timeout=60)
    return admin.asked


def test_a_request_failed_by_dropped_broker_handles_is_asked_again(monkeypatch):
    assert create(monkeypatch, [KafkaError._DESTROY_BROKER]) == 2
    # the first try's creation went through before its answer was lost: the topic exists, which is what was asked
    assert create(monkeypatch, [KafkaError._DESTROY_BROKER, KafkaError.TOPIC_ALREADY_EXISTS]) == 2


def test_a_refusal_is_not_asked_again(monkeypatch):
    with pytest.raises(InfraError, match="could not create topic t: "):
        create(monkeypatch, [KafkaError.INVALID_REPLICATION_FACTOR])
    with pytest.raises(InfraError, match="could not create topic t: "):  # already there before we asked
        create(monkeypatch, [KafkaError.TOPIC_ALREADY_EXISTS])
