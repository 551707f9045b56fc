"""KRaft configuration for Apache Kafka nodes run from KAFKA_HOME (pure functions, no I/O).

Every node is broker and controller, all listeners on 127.0.0.1 (on its namespace's address with network
namespaces, where `routes` name its peers' addresses across the bridge):
- CLIENT, advertised as the node's client proxy, so clients cross Toxiproxy;
- CONTROLLER, the quorum and the brokers' heartbeats;
- INTERNAL_<k> for k = 1..N: the replication listener on which node k's fetches arrive. Node k
  replicates through INTERNAL_<k> (its inter.broker.listener.name), so every (follower, leader)
  pair has its own listener, and each can be advertised as its own proxy.
`routes` gives, per (kind, src, dst), the address src uses to reach dst: the proxies
`replication-src-dst` and `controller-src-dst` (base.peer_proxy_names), which `isolate`
disables. Advertised listeners are global (every broker sees the same addresses for a
peer), which is why replication needs one listener per follower; the quorum voters are
per node, so node src's voters simply name its own proxies. Without a route, direct.
The same layout as compose/docker-compose.yml.
"""

from __future__ import annotations

import base64
import re
import uuid
from dataclasses import dataclass

from ..spec import BROKER_OWNED_WHY, SECRET_KEY, broker_owned


@dataclass(frozen=True)
class NodePorts:
    client: int
    controller: tuple[int, ...]  # controller[k]: the port node k's controller traffic arrives on (CONTROLLER_<k+1>)
    replication: tuple[int, ...]  # replication[k]: the port node k's fetches arrive on (listener INTERNAL_<k+1>)


def cluster_id(raw: bytes | None = None) -> str:
    """A Kafka cluster id: 16 bytes in URL-safe base64 without padding, as `kafka-storage.sh random-uuid` prints.

    A random one never starts with "-" (Kafka's Uuid.randomUuid draws again too): `kafka-storage.sh format
    --cluster-id -x...` reads it as an option and fails, which stopped 1 run in 64 with exit 3."""
    if raw is None:
        while (cid := cluster_id(uuid.uuid4().bytes)).startswith("-"):
            pass
        return cid
    if len(raw) != 16:
        raise ValueError("a cluster id is 16 bytes")
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def node_id(index: int) -> int:
    """Kafka node ids start at 1, as in the Compose file; the harness numbers brokers from 0."""
    return index + 1


def replication_listener(follower: int) -> str:
    return f"INTERNAL_{node_id(follower)}"


def controller_listener(src: int) -> str:
    """The controller listener node src's controller traffic (votes, quorum fetches, its broker's requests to
    the active controller) arrives on at every node: one per peer, like replication_listener, because a KRaft
    follower fetches from the address the leader advertises for the follower's own controller listener name
    (BeginQuorumEpoch's leader endpoints), not from its voters setting. With one CONTROLLER listener every
    follower reached the leader directly, past the proxies, and `isolate` of the active controller cut nothing
    the quorum needed (no election in 230 s; Kafka 4.1.0, 2026-11-27)."""
    return f"CONTROLLER_{node_id(src)}"


def property_text(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def node_properties(index: int, ports: list[NodePorts], advertised_client: str, data_dir: str,
                    routes: dict[tuple[str, int, int], str] | None = None,
                    extra: dict | None = None, host: str = "127.0.0.1") -> dict[str, str]:
    """server.properties of node `index` in a cluster of len(ports) nodes.

    routes[("replication" | "controller", src, dst)]: where node src reaches node dst (default: directly).
    extra: the user's properties (cluster.broker_config), over the defaults below; never a spec.BROKER_OWNED one
    (the experiment file's validation refuses them).
    host: the address the node listens on (its namespace's, with network namespaces)."""
    extra = extra or {}
    owned = [key for key in extra if broker_owned(key)]
    if owned:
        raise ValueError(f"{owned[0]}: {BROKER_OWNED_WHY}")
    routes = routes or {}
    n = len(ports)
    me = ports[index]
    replication = min(3, n)
    min_isr = min(2, replication)

    def controller(dst: int) -> str:  # where this node reaches node dst's controller
        return routes.get(("controller", index, dst), f"127.0.0.1:{ports[dst].controller[index]}")

    def controlled_by(src: int) -> str:  # where node src reaches this node's controller
        return routes.get(("controller", src, index), f"127.0.0.1:{me.controller[src]}")

    def fetched_by(src: int) -> str:  # where node src fetches from this node
        return routes.get(("replication", src, index), f"127.0.0.1:{me.replication[src]}")

    internal = [replication_listener(k) for k in range(n)]
    controllers = [controller_listener(k) for k in range(n)]
    return {
        "process.roles": "broker,controller",
        "node.id": str(node_id(index)),
        "controller.quorum.voters": ",".join(f"{node_id(j)}@{controller(j)}" for j in range(n)),
        # The first is the one this node connects with, so the one whose address it takes from the leader.
        "controller.listener.names": ",".join([controllers[index], *(c for c in controllers if c != controllers[index])]),
        "inter.broker.listener.name": replication_listener(index),
        "listeners": ",".join([f"CLIENT://{host}:{me.client}"]
                              + [f"{name}://{host}:{me.controller[k]}" for k, name in enumerate(controllers)]
                              + [f"{name}://{host}:{me.replication[k]}" for k, name in enumerate(internal)]),
        # Clients are sent to this node's proxy, never to the node itself; peers to their own route.
        "advertised.listeners": ",".join([f"CLIENT://{advertised_client}"]
                                         + [f"{name}://{controlled_by(k)}" for k, name in enumerate(controllers)]
                                         + [f"{name}://{fetched_by(k)}" for k, name in enumerate(internal)]),
        "listener.security.protocol.map": ",".join(f"{name}:PLAINTEXT"
                                                   for name in ["CLIENT", *controllers, *internal]),
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
        **{key: property_text(value) for key, value in extra.items()},
    }


def feature_levels(describe: str) -> dict[str, int]:
    """`kafka-features.sh describe`'s finalized levels ("Feature: NAME\t...\tFinalizedVersionLevel: N\t...");
    a level that is not a number (metadata.version's 4.1-IV1) is left out: variants cannot set it."""
    out = {}
    for line in describe.splitlines():
        fields = dict(part.split(": ", 1) for part in line.strip().split("\t") if ": " in part)
        level = fields.get("FinalizedVersionLevel", "")
        if "Feature" in fields and level.isdigit():
            out[fields["Feature"]] = int(level)
    return out


# The config provider through which a node reads its secret settings from its environment (Kafka's own
# EnvVarConfigProvider, Kafka 3.5 and later), so that the properties file, kept in the run folder, holds none.
SECRET_PROVIDER = "kafkachaos"
PROVIDER_REF = re.compile(r"\$\{[A-Za-z0-9_.-]+:[^}]*\}")  # ${file:/etc/kafka/secrets:ks}: where a secret is


def secrets_from_environment(props: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(props with the value of every secret-named property (spec.SECRET_KEY) replaced by a reference,
    ${kafkachaos:KAFKA_CHAOS_SECRET_<n>}, that the node resolves from its environment; that environment).
    A provider the user configured (config.providers) is kept beside this one, and a value that is a reference
    to it is left as it is (Kafka resolves a reference once: moved into the environment it would stay text)."""
    names = [key for key in props if SECRET_KEY.search(key) and not PROVIDER_REF.fullmatch(props[key])]
    if not names:
        return props, {}
    env = {f"KAFKA_CHAOS_SECRET_{i}": props[key] for i, key in enumerate(names)}
    out = {**props, **{key: f"${{{SECRET_PROVIDER}:KAFKA_CHAOS_SECRET_{i}}}" for i, key in enumerate(names)}}
    out["config.providers"] = ",".join(filter(None, [props.get("config.providers"), SECRET_PROVIDER]))
    out[f"config.providers.{SECRET_PROVIDER}.class"] = "org.apache.kafka.common.config.provider.EnvVarConfigProvider"
    return out, env


def render_properties(props: dict[str, str]) -> str:
    """Java properties text. Nothing generated here needs escaping; refuse rather than mis-escape."""
    for key, value in props.items():
        if any(c in key for c in "=: \\") or any(c in value for c in "\\\n"):
            raise ValueError(f"{key}={value!r} would need escaping in a properties file")
    return "".join(f"{k}={v}\n" for k, v in props.items())
