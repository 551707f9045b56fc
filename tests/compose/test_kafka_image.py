"""The Kafka image the Compose file runs keeps apache/kafka's contract: KAFKA_* variables become broker settings
and the KRaft storage is formatted on the first start only, so a restarted container keeps its log. One
throwaway single-node container through testcontainers (what it is for); the cluster itself is Compose's."""

import os
import re

import docker.errors
import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from testcontainers.core.container import DockerContainer
from testcontainers.core.wait_strategies import LogMessageWaitStrategy

from harness import ports

STARTED = "Kafka Server started"


def started(times: int) -> LogMessageWaitStrategy:
    return LogMessageWaitStrategy(re.compile("(?s)" + ".*".join([STARTED] * times))).with_startup_timeout(120)


def kafka_image() -> str:
    """The image compose/docker-compose.yml names, as KAFKA_CHAOS_IMAGES resolves it."""
    return f"{os.environ.get('KAFKA_CHAOS_IMAGES') or 'apache'}/kafka:4.1.0"


def test_kafka_settings_from_the_environment_and_storage_formatted_once(docker_client):
    port = ports.free_port()
    env = {"CLUSTER_ID": "4L6g3nShT-eMCtK--X86sw", "KAFKA_NODE_ID": "1", "KAFKA_PROCESS_ROLES": "broker,controller",
           "KAFKA_LISTENERS": "PLAINTEXT://:9092,CONTROLLER://:9093",
           "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://127.0.0.1:{port}",
           "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
           "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
           "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@localhost:9093", "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
           # 512 MiB, as the local brokers' (cluster/local.py): with 256 the log cleaner's 128 MiB dedupe buffer
           # sometimes found no room at start (OutOfMemoryError, exit 1: 1 start in 8 here; 512: 0 in 12)
           "KAFKA_LOG_RETENTION_MS": "123456789", "KAFKA_HEAP_OPTS": "-Xmx512m"}
    container = DockerContainer(kafka_image()).waiting_for(started(1))
    container.ports[9092] = ("127.0.0.1", port)  # published on loopback only (with_bind_ports takes no address)
    for key, value in env.items():
        container.with_env(key, value)
    with container:
        client = {"bootstrap.servers": f"127.0.0.1:{port}"}
        admin = AdminClient(client)
        broker = ConfigResource(ConfigResource.Type.BROKER, "1")
        assert admin.describe_configs([broker])[broker].result(timeout=30)["log.retention.ms"].value == "123456789"
        admin.create_topics([NewTopic("t", 1, 1)])["t"].result(timeout=30)
        producer = Producer(client)
        for i in range(100):
            producer.produce("t", str(i).encode())
        assert producer.flush(30) == 0

        wrapped = container.get_wrapped_container()
        wrapped.restart(timeout=30)
        started(2).wait_until_ready(container)
        consumer = Consumer({**client, "group.id": "g", "auto.offset.reset": "earliest"})
        consumer.subscribe(["t"])
        got = []
        while len(got) < 100:
            m = consumer.poll(30)
            assert m is not None, f"only {len(got)} of 100 records back after the restart"
            got.append(int(m.value()))
        consumer.close()
        assert got == list(range(100))  # the log survived: the restart did not format the storage again
        logs = wrapped.logs().decode()
        assert logs.count("Formatting metadata directory") == 1, logs[-2000:]
    with pytest.raises(docker.errors.NotFound):  # testcontainers removed it
        docker_client.containers.get(wrapped.id)
