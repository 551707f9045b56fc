"""The delivery-outcome table, for every error code a delivery report can carry."""

import pytest
from confluent_kafka import KafkaError

from harness.formats import Outcome
from harness.workload.outcomes import DEFINITE, outcome

CODES = {name: getattr(KafkaError, name) for name in dir(KafkaError)
         if isinstance(getattr(KafkaError, name), int) and name.lstrip("_")[:1].isupper()}


def test_acked_without_error():
    assert outcome(None) == Outcome.ACKED


@pytest.mark.parametrize("name", sorted(CODES))
def test_every_error_code_is_rejected_only_when_the_table_proves_it(name):
    err = KafkaError(CODES[name])
    assert err.name() == name
    assert outcome(err) == (Outcome.REJECTED if name in DEFINITE else Outcome.UNKNOWN)


@pytest.mark.parametrize("name", [
    "_MSG_TIMED_OUT", "_TIMED_OUT", "REQUEST_TIMED_OUT", "_TRANSPORT", "NETWORK_EXCEPTION", "_ALL_BROKERS_DOWN",
    "_PURGE_QUEUE", "_PURGE_INFLIGHT", "NOT_LEADER_FOR_PARTITION", "NOT_ENOUGH_REPLICAS",
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND", "OUT_OF_ORDER_SEQUENCE_NUMBER", "DUPLICATE_SEQUENCE_NUMBER",
    "UNKNOWN_PRODUCER_ID", "_FATAL", "_UNKNOWN_TOPIC", "_UNKNOWN_PARTITION", "UNKNOWN_TOPIC_OR_PART",
    "INVALID_MSG", "KAFKA_STORAGE_ERROR", "_DESTROY"])
def test_timed_out_disconnected_purged_or_retriable_sends_are_unknown(name):
    assert outcome(KafkaError(CODES[name])) == Outcome.UNKNOWN


def test_the_table_names_only_real_error_codes_each_with_a_reason():
    assert set(DEFINITE) <= set(CODES)
    assert all(reason.strip() for reason in DEFINITE.values())
