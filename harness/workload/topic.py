"""Topic creation for a variant."""

from __future__ import annotations

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic


def create_topic(client: dict, name: str, partitions: int, replication_factor: int, timeout: float = 30) -> None:
    """client: librdkafka connection settings (bootstrap.servers, security)."""
    admin = AdminClient(client)
    futures = admin.create_topics([NewTopic(name, partitions, replication_factor)], operation_timeout=timeout)
    try:
        futures[name].result(timeout)
    except KafkaException as e:
        raise RuntimeError(f"could not create topic {name}: {e.args[0].str()}") from e
    md = admin.list_topics(name, timeout=timeout)
    if len(md.topics[name].partitions) != partitions:
        raise RuntimeError(f"topic {name} has {len(md.topics[name].partitions)} partitions, expected {partitions}")


def restore_topic(client: dict, name: str, partitions: int, timeout: float = 30) -> None:
    """Make `name` exist with `partitions` partitions again (after a broker lost its storage)."""
    admin = AdminClient(client)
    md = admin.list_topics(timeout=timeout)
    existing = md.topics.get(name)
    if existing is None or existing.error is not None:
        create_topic(client, name, partitions, 1, timeout)
    elif len(existing.partitions) < partitions:
        admin.create_partitions([NewPartitions(name, partitions)])[name].result(timeout)
