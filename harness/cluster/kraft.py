"""KRaft configuration for Apache Kafka nodes run from KAFKA_HOME (pure functions, no I/O).

Every node is broker and controller. Three listeners per node, all on 127.0.0.1:
CLIENT (advertised as the node's proxy, so clients cross Toxiproxy), INTERNAL (replication,
direct) and CONTROLLER (the quorum, direct), the same layout as compose/docker-compose.yml.
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass


@dataclass(frozen=True)
class NodePorts:
    client: int
    internal: int
    controller: int


def cluster_id(raw: bytes | None = None) -> str:
    """A Kafka cluster id: 16 bytes in URL-safe base64 without padding, as `kafka-storage.sh random-uuid` prints."""
    raw = raw if raw is not None else uuid.uuid4().bytes
    if len(raw) != 16:
        raise ValueError("a cluster id is 16 bytes")
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def node_id(index: int) -> int:
    """Kafka node ids start at 1, as in the Compose file; the harness numbers brokers from 0."""
    return index + 1


def node_properties(index: int, ports: list[NodePorts], advertised_client: str, data_dir: str) -> dict[str, str]:
    """server.properties of node `index` in a cluster of len(ports) nodes."""
    n = len(ports)
    me = ports[index]
    replication = min(3, n)
    min_isr = min(2, replication)
    voters = ",".join(f"{node_id(i)}@127.0.0.1:{p.controller}" for i, p in enumerate(ports))
    return {
        "process.roles": "broker,controller",
        "node.id": str(node_id(index)),
        "controller.quorum.voters": voters,
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "INTERNAL",
        "listeners": f"CLIENT://127.0.0.1:{me.client},INTERNAL://127.0.0.1:{me.internal},"
                     f"CONTROLLER://127.0.0.1:{me.controller}",
        # Clients are sent to this node's proxy, never to the node itself.
        "advertised.listeners": f"CLIENT://{advertised_client},INTERNAL://127.0.0.1:{me.internal}",
        "listener.security.protocol.map": "CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": data_dir,
        "num.partitions": "1",
        "default.replication.factor": str(replication),
        "min.insync.replicas": str(min_isr),
        "offsets.topic.replication.factor": str(replication),
        "transaction.state.log.replication.factor": str(replication),
        "transaction.state.log.min.isr": str(min_isr),
        "unclean.leader.election.enable": "false",
        "auto.create.topics.enable": "false",
        "group.initial.rebalance.delay.ms": "0",
    }


def render_properties(props: dict[str, str]) -> str:
    """Java properties text. Nothing generated here needs escaping; refuse rather than mis-escape."""
    for key, value in props.items():
        if any(c in key for c in "=: \\") or any(c in value for c in "\\\n"):
            raise ValueError(f"{key}={value!r} would need escaping in a properties file")
    return "".join(f"{k}={v}\n" for k, v in props.items())
