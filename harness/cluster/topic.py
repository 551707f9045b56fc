"""Topics for a variant: created, and waited for until every partition is led and fully replicated."""

from __future__ import annotations

import time

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from ..exits import InfraError
from ..offsets import admin_client


def create_topic(client: dict, name: str, partitions: int, replication_factor: int, timeout: float = 60,
                 config: dict | None = None) -> None:
    """Create the topic and return once every partition has a leader and a full ISR (InfraError after
    `timeout`). client: librdkafka connection settings (bootstrap.servers, security)."""

    admin = admin_client(client)
    conf = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in (config or {}).items()}
    deadline, retried = time.monotonic() + timeout, False
    while True:
        futures = admin.create_topics([NewTopic(name, partitions, replication_factor, config=conf)],
                                      operation_timeout=timeout)
        try:
            futures[name].result(timeout)
            break
        except KafkaException as e:
            error = e.args[0]
            if error.code() == KafkaError.TOPIC_ALREADY_EXISTS and retried:  # the first try's creation went through
                break
            # librdkafka (2.10+) re-bootstraps when every connection failed and fails what was in flight on the
            # brokers it drops (_DESTROY_BROKER, "Broker handle destroyed"): asked again, as any retriable error
            if not (error.retriable() or error.code() == KafkaError._DESTROY_BROKER) or time.monotonic() > deadline:
                raise InfraError(f"could not create topic {name}: {error.str()}") from e
            retried = True
            time.sleep(0.5)
    wait_until_replicated(client, name, partitions, timeout=timeout, what="after creation", admin=admin)


def replication_problem(md, topic: str, partitions: int, brokers: int | None = None) -> str | None:
    """Why `topic` is not yet fully led and replicated in this metadata, or None when it is."""
    if brokers is not None and len(md.brokers) < brokers:
        return f"{len(md.brokers)} of {brokers} brokers in the metadata"
    t = md.topics.get(topic)
    if t is None or t.error is not None:
        return f"topic not in the metadata ({t.error.str() if t is not None else 'unknown topic'})"
    if len(t.partitions) < partitions:  # more is fine: a restarted Tansu may auto-create the topic wider
        return f"{len(t.partitions)} of {partitions} partitions in the metadata"
    for p in sorted(t.partitions.values(), key=lambda p: p.id)[:partitions]:
        if p.leader < 0:
            return f"partition {p.id} has no leader"
        if sorted(p.isrs) != sorted(p.replicas):
            return f"partition {p.id} has ISR {sorted(p.isrs)} of replicas {sorted(p.replicas)}"
    return None


def wait_until_replicated(client: dict, topic: str, partitions: int, brokers: int | None = None,
                          timeout: float = 60, what: str = "", admin: AdminClient | None = None) -> None:
    """Poll the metadata until every partition has a leader and every replica in its ISR."""

    admin = admin or admin_client(client)
    deadline = time.monotonic() + timeout
    problem = "no metadata yet"
    while time.monotonic() < deadline:
        try:
            problem = replication_problem(admin.list_topics(topic, timeout=10), topic, partitions, brokers)
        except KafkaException as e:
            problem = f"no metadata: {e.args[0].str()}"
        if problem is None:
            return
        time.sleep(0.2)
    raise InfraError(f"topic {topic} not fully replicated {timeout:.0f} s {what}: {problem}")


def restore_topic(client: dict, name: str, partitions: int, timeout: float = 30) -> None:
    """Make `name` exist with `partitions` partitions again (after a broker lost its storage)."""
    admin = admin_client(client)
    md = admin.list_topics(timeout=timeout)
    existing = md.topics.get(name)
    if existing is None or existing.error is not None:
        create_topic(client, name, partitions, 1, timeout)
    elif len(existing.partitions) < partitions:
        admin.create_partitions([NewPartitions(name, partitions)])[name].result(timeout)
