"""What a delivery report says about a send: acked, rejected or unknown. The one table.

After Jepsen's definite / indefinite errors and librdkafka's documentation: an error is a
**rejection** only when it proves the record was never written — the broker refused the
request for a reason a retry cannot change (size, format, authorisation), or the client
refused it before transmitting anything. Everything else is **unknown**: timeouts, lost
connections, purges (librdkafka reports _PURGE_QUEUE also for a message that was sent and
waits to be retried), leader changes, idempotence errors. A delivery report carries the
error of the last attempt only, so a retriable error says nothing about earlier attempts.

The analysis checks this table on every run: a rejected value found in the log is counted
as `rejected_visible`, a fatal anomaly.
"""

from __future__ import annotations

from confluent_kafka import KafkaError

from ..formats import Outcome

# librdkafka error name -> why it proves the record was never written.
DEFINITE: dict[str, str] = {
    "MSG_SIZE_TOO_LARGE": "the broker refuses a batch over message.max.bytes; librdkafka does not retry it",
    "RECORD_LIST_TOO_LARGE": "the broker refuses a request over its size limit; not retried",
    "INVALID_RECORD": "the broker's validation refused the record (e.g. no key on a compacted topic)",
    "INVALID_TIMESTAMP": "the broker refuses the record's timestamp; not retried",
    "INVALID_REQUIRED_ACKS": "the broker refuses the acks setting; nothing is written",
    "UNSUPPORTED_FOR_MESSAGE_FORMAT": "the topic's message format cannot hold the record",
    "UNSUPPORTED_COMPRESSION_TYPE": "the topic refuses the producer's compression",
    "TOPIC_AUTHORIZATION_FAILED": "the producer may not write to the topic",
    "CLUSTER_AUTHORIZATION_FAILED": "the producer may not use idempotence or transactions on this cluster",
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED": "the producer may not use its transactional.id",
    "_INVALID_ARG": "the client refused the message before transmitting it",
    "_INVALID_TYPE": "the client refused the message before transmitting it",
    "_KEY_SERIALIZATION": "the client could not serialise the key; nothing was transmitted",
    "_VALUE_SERIALIZATION": "the client could not serialise the value; nothing was transmitted",
}


def outcome(err: KafkaError | None) -> Outcome:
    """acked, rejected or unknown for one delivery report's error (None: acked)."""
    if err is None:
        return Outcome.ACKED
    return Outcome.REJECTED if err.name() in DEFINITE else Outcome.UNKNOWN
