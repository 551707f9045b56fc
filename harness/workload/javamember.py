"""What a consumer group member of the Java client (workload/java/ChaosMember.java) is given: its KafkaConsumer
settings, in Java property names, the harness's own (spec.CONSUMER_OWNED, clients.KAFKA_CLIENTS.member_owned) with
the experiment's `consumer.config` over them, as workload/member.consumer_config does for librdkafka's members.

The member is started by workload/consumers.py with its task as JSON in $KAFKA_CHAOS_MEMBER (member.py's, plus
`settings`: these), and writes the sink through its stdout (workload/memberlines.py); an idempotent-sink member
reads what it asks of the sink on its stdin.
"""

from __future__ import annotations

BYTES = "org.apache.kafka.common.serialization.ByteArrayDeserializer"


def member_settings(bootstrap: str, group: str, member: str, strategy: str, protocol: str, batch: int,
                    config: dict) -> dict:
    """A Java member's consumer settings (property name -> value, as text or JSON scalars)."""
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "client.id": member, "auto.offset.reset": "earliest",
            "enable.auto.commit": strategy == "auto-commit", "isolation.level": "read_committed",
            "group.protocol": protocol, "key.deserializer": BYTES, "value.deserializer": BYTES,
            "max.poll.records": batch}
    if protocol == "classic":  # KIP-848 moves the session to the broker; the Java client refuses these there
        conf.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 1500})
    return {**conf, **config}
