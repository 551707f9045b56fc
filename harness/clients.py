"""The client implementations the client axis knows, as data: a variant's `client: {NAME: VERSION}`.

    confluent-kafka   librdkafka through confluent-kafka (the harness's own produce loop, workload/clientproc.py)
    kafka-python      the pure-Python client (KafkaProducer), a child speaking the foreign protocol
    aiokafka          the asyncio client (AIOKafkaProducer), the same protocol
    kafka-clients     Apache Kafka's Java client (KafkaProducer), from KAFKA_HOME's jars, the same protocol; a
                      consumer group's members run it too (KafkaConsumer, workload/java/ChaosMember.java)

Every foreign implementation (all but confluent-kafka) runs in a child process that speaks one line protocol
(workload/foreignproc.py); the run writes its delivery log from the child's lines, so acks.parquet and every
metric are the same whatever the client. This module is pure: names, the settings the harness owns in each
implementation's own spelling, and which error names prove a send was never written (outcomes: rejected; any
other error is unknown). An error's name is its exception class's simple name, as the implementation raises
it (kafka-python `KafkaTimeoutError`, aiokafka `RequestTimedOutError`, Java `TimeoutException`); a send the
client refused before transmitting anything (its send() raised) is rejected whatever its name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

CONFLUENT_KAFKA = "confluent-kafka"


@dataclass(frozen=True)
class Implementation:
    name: str  # the key under `client:`
    language: str  # python | java
    idempotence: str  # its setting that turns idempotence on (for the docs and the examples)
    transactional: str  # its setting that makes the producer transactional
    owned: dict[str, str] = field(default_factory=dict)  # settings the harness sets, and why
    definite: dict[str, str] = field(default_factory=dict)  # error name -> why it proves nothing was written
    transactions: bool = False  # its child runs the transactional workload (foreignproc.py)
    # Its own consumer group members (a consumer section): the strategies they run, and the member settings the
    # harness sets beyond spec.CONSUMER_OWNED. None: the group runs the harness's own members (librdkafka).
    member_strategies: tuple[str, ...] | None = None
    member_owned: dict[str, str] = field(default_factory=dict)

    def rejected(self, error: str) -> bool:
        """An error a delivery callback gave: rejected when it proves the record was never written."""
        return error in self.definite


_PYTHON_OWNED = {
    "bootstrap_servers": "the cluster's; use cluster.bootstrap_servers (backend external)",
    "key_serializer": "the harness sends bytes: no key, the value as an ASCII decimal",
    "value_serializer": "the harness sends bytes: no key, the value as an ASCII decimal",
    "partitioner": "the harness names each send's partition",
}
# Shared by kafka-python and aiokafka where both name a Kafka error alike.
_BROKER_DEFINITE = {
    "MessageSizeTooLargeError": "the record is over max_request_size (client) or message.max.bytes (broker); "
                                "not retried",
    "RecordListTooLargeError": "the broker refuses a request over its size limit; not retried",
    "InvalidTimestampError": "the broker refuses the record's timestamp; not retried",
    "InvalidRequiredAcksError": "the broker refuses the acks setting; nothing is written",
    "UnsupportedForMessageFormatError": "the topic's message format cannot hold the record",
    "TopicAuthorizationFailedError": "the producer may not write to the topic",
    "ClusterAuthorizationFailedError": "the producer may not use idempotence on this cluster",
}

KAFKA_PYTHON = Implementation(
    "kafka-python", "python", "enable_idempotence", "transactional_id", dict(_PYTHON_OWNED),
    {**_BROKER_DEFINITE,
     "InvalidRecordError": "the broker's validation refused the record (e.g. no key on a compacted topic)",
     "UnsupportedCompressionTypeError": "the topic refuses the producer's compression"},
    transactions=True)

AIOKAFKA = Implementation(
    "aiokafka", "python", "enable_idempotence", "transactional_id", dict(_PYTHON_OWNED),
    {**_BROKER_DEFINITE,
     "RecordTooLargeError": "the client refused a record over max_request_size before sending it"},
    transactions=True)

KAFKA_CLIENTS = Implementation(
    "kafka-clients", "java", "enable.idempotence", "transactional.id",
    {"bootstrap.servers": "the cluster's; use cluster.bootstrap_servers (backend external)",
     "key.serializer": "the harness sends bytes: no key, the value as an ASCII decimal",
     "value.serializer": "the harness sends bytes: no key, the value as an ASCII decimal",
     "partitioner.class": "the harness names each send's partition"},
    {"RecordTooLargeException": "the record is over max.request.size or the broker's message.max.bytes; not retried",
     "RecordBatchTooLargeException": "the broker refuses a batch over its size limit; not retried",
     "InvalidRecordException": "the broker's validation refused the record (e.g. no key on a compacted topic)",
     "InvalidTimestampException": "the broker refuses the record's timestamp; not retried",
     "InvalidRequiredAcksException": "the broker refuses the acks setting; nothing is written",
     "UnsupportedForMessageFormatException": "the topic's message format cannot hold the record",
     "UnsupportedCompressionTypeException": "the topic refuses the producer's compression",
     "TopicAuthorizationException": "the producer may not write to the topic",
     "ClusterAuthorizationException": "the producer may not use idempotence on this cluster",
     "SerializationException": "the client could not serialise the record; nothing was transmitted"},
    transactions=True,
    # workload/java/ChaosMember.java (idempotent-sink reads the sink back through its relay's answers)
    member_strategies=("commit-after", "commit-before", "auto-commit", "transactional", "idempotent-sink"),
    member_owned={"key.deserializer": "the members read bytes: the value as an ASCII decimal",
                  "value.deserializer": "the members read bytes: the value as an ASCII decimal",
                  "max.poll.records": "use the consumer section's batch field (records per poll)"})

FOREIGN: dict[str, Implementation] = {i.name: i for i in (KAFKA_PYTHON, AIOKAFKA, KAFKA_CLIENTS)}
LIBRARIES = (CONFLUENT_KAFKA, *FOREIGN)


def library_words() -> str:
    return ", ".join(LIBRARIES)
