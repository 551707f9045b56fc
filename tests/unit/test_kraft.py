"""KRaft configs for KAFKA_HOME nodes, checked as the Compose file's wiring is (no Kafka needed)."""

import base64
import re

import pytest

from harness.cluster.kraft import NodePorts, cluster_id, node_properties, render_properties, secrets_from_environment

PORTS = [NodePorts(10001, (10011, 10012, 10013), (10101, 10102, 10103)),
         NodePorts(10002, (10021, 10022, 10023), (10201, 10202, 10203)),
         NodePorts(10003, (10031, 10032, 10033), (10301, 10302, 10303))]
PROXIES = ["127.0.0.1:20001", "127.0.0.1:20002", "127.0.0.1:20003"]
# (kind, src, dst) -> the proxy src uses to reach dst, as LocalKafkaCluster makes them
ROUTES = {(kind, s, d): f"127.0.0.1:3{k}{s}{d}0" for k, kind in enumerate(("replication", "controller"))
          for s in range(3) for d in range(3) if s != d}


def listeners(value: str) -> dict[str, str]:
    return dict(item.split("://", 1) for item in value.split(","))


def nodes(ports=PORTS, routes=ROUTES):
    return [node_properties(i, ports, PROXIES[i], f"/data/node-{i}", routes) for i in range(len(ports))]


def test_three_nodes_one_quorum_distinct_ids_and_ports():
    props = nodes()
    assert [p["node.id"] for p in props] == ["1", "2", "3"]
    for i, p in enumerate(props):  # each node names the same voters, reached through its own proxies
        voters = dict(v.split("@") for v in p["controller.quorum.voters"].split(","))
        assert voters == {str(j + 1): ROUTES[("controller", i, j)] if j != i else f"127.0.0.1:{PORTS[i].controller[i]}"
                          for j in range(3)}
    bound = [addr for p in props for addr in listeners(p["listeners"]).values()]
    assert len(bound) == len(set(bound)) == 21 and all(a.startswith("127.0.0.1:") for a in bound)
    assert len({p["log.dirs"] for p in props}) == 3


def test_clients_are_sent_to_the_proxy_and_each_follower_fetches_through_its_own_route():
    props = nodes()
    for i, p in enumerate(props):
        advertised, bound = listeners(p["advertised.listeners"]), listeners(p["listeners"])
        assert advertised["CLIENT"] == PROXIES[i]
        assert p["inter.broker.listener.name"] == f"INTERNAL_{i + 1}"
        assert p["controller.listener.names"].split(",")[0] == f"CONTROLLER_{i + 1}"  # the name it connects with
        assert set(p["controller.listener.names"].split(",")) == {"CONTROLLER_1", "CONTROLLER_2", "CONTROLLER_3"}
        for src in range(3):  # node src reaches node i's controller at the route (src -> i), ending at its listener
            name = f"CONTROLLER_{src + 1}"
            assert bound[name] == f"127.0.0.1:{PORTS[i].controller[src]}"
            assert advertised[name] == (ROUTES[("controller", src, i)] if src != i else bound[name])
        assert set(listeners(p["listener.security.protocol.map"].replace(":", "://"))) == set(bound)
        for src in range(3):  # node src fetches from node i at the route (src -> i), which ends at i's listener
            name = f"INTERNAL_{src + 1}"
            assert bound[name] == f"127.0.0.1:{PORTS[i].replication[src]}"
            assert advertised[name] == (ROUTES[("replication", src, i)] if src != i else bound[name])
    # A follower uses its own listener name at every leader, so it meets its own routes only: the partition
    # leader's advertised address for its replication fetches, the KRaft leader's for its quorum fetches (a
    # KRaft follower takes the leader's address from the leader, not from its voters setting).
    for src, p in enumerate(props):
        for kind, used in (("replication", p["inter.broker.listener.name"]),
                           ("controller", p["controller.listener.names"].split(",")[0])):
            assert {listeners(q["advertised.listeners"])[used] for d, q in enumerate(props) if d != src} == \
                {ROUTES[(kind, src, d)] for d in range(3) if d != src}


def test_without_routes_every_node_is_reached_directly():
    p = nodes(routes=None)[0]
    assert listeners(p["advertised.listeners"])["INTERNAL_2"] == "127.0.0.1:10102"
    assert "2@127.0.0.1:10021" in p["controller.quorum.voters"]  # node 2's listener for node 1's traffic


def test_in_namespaces_each_node_listens_on_its_own_address_and_peers_meet_there():
    hosts = ["10.200.7.1", "10.200.7.2", "10.200.7.3"]
    routes = {(kind, s, d): f"{hosts[d]}:{(PORTS[d].controller if kind == 'controller' else PORTS[d].replication)[s]}"
              for kind in ("replication", "controller") for s in range(3) for d in range(3)}  # as LocalKafkaCluster
    props = [node_properties(i, PORTS, PROXIES[i], f"/data/node-{i}", routes, host=hosts[i]) for i in range(3)]
    for i, p in enumerate(props):
        assert all(a.startswith(hosts[i] + ":") for a in listeners(p["listeners"]).values())
        assert listeners(p["advertised.listeners"])["CLIENT"] == PROXIES[i]  # clients still through the proxy
        voters = dict(v.split("@") for v in p["controller.quorum.voters"].split(","))
        assert voters == {str(j + 1): f"{hosts[j]}:{PORTS[j].controller[i]}" for j in range(3)}


@pytest.mark.parametrize("n, rf, isr", [(1, "1", "1"), (2, "2", "2"), (3, "3", "2"), (5, "3", "2")])
def test_replication_follows_the_cluster_size(n, rf, isr):
    ports = [NodePorts(100 + i, tuple(200 + 10 * i + k for k in range(n)), tuple(300 + 10 * i + k for k in range(n)))
             for i in range(n)]
    p = node_properties(0, ports, "127.0.0.1:1", "/d")
    assert (p["default.replication.factor"], p["min.insync.replicas"]) == (rf, isr)
    assert p["offsets.topic.replication.factor"] == rf and p["unclean.leader.election.enable"] == "false"


def test_cluster_id_is_kafkas_uuid_form():
    raw = bytes(range(16))
    cid = cluster_id(raw)
    assert len(cid) == 22 and "=" not in cid
    assert base64.urlsafe_b64decode(cid + "==") == raw
    assert cluster_id() != cluster_id()
    with pytest.raises(ValueError):
        cluster_id(b"short")


def test_properties_text_round_trips_and_refuses_what_needs_escaping():
    p = nodes()[1]
    text = render_properties(p)
    assert dict(line.split("=", 1) for line in text.splitlines()) == p
    with pytest.raises(ValueError, match="escaping"):
        render_properties({"log.dirs": "C:\\kafka"})


def test_a_random_cluster_id_never_starts_with_a_dash(monkeypatch):
    # kafka-storage.sh would read "-..." as an option (seen in CI: exit 3, "expected one argument")
    dash = b"\xf8" + bytes(15)  # encodes as "-A..."
    assert cluster_id(dash).startswith("-")
    draws = iter([dash, dash, bytes(16)])
    monkeypatch.setattr("harness.cluster.kraft.uuid.uuid4", lambda: type("U", (), {"bytes": next(draws)}))
    assert cluster_id() == cluster_id(bytes(16))


def test_the_users_broker_properties_come_last_and_the_layout_stays_the_harnesss():
    props = node_properties(0, PORTS, PROXIES[0], "/data/node-0", ROUTES,
                            {"min.insync.replicas": 1, "log.flush.interval.messages": 1, "x.enable": False})
    assert props["min.insync.replicas"] == "1" and props["log.flush.interval.messages"] == "1"
    assert props["x.enable"] == "false"  # as Kafka spells it
    # The experiment file's validation refuses them (spec.BROKER_OWNED); the configs never take one either.
    for key in ("log.dirs", "broker.id", "listener.name.client.ssl.keystore.location"):
        with pytest.raises(ValueError, match=f"^{re.escape(key)}: set by the harness"):
            node_properties(0, PORTS, PROXIES[0], "/data/node-0", ROUTES, {key: "x"})


def test_a_nodes_secret_settings_reach_it_through_its_environment_never_its_properties_file():
    props = node_properties(0, PORTS, PROXIES[0], "/data/node-0", ROUTES,
                            {"ssl.keystore.password": "hunter2-ks", "sasl.jaas.config": "x required password=hunter2-j;",
                             "config.providers": "file", "ssl.truststore.password": "${file:/etc/ts:pw}",
                             "log.flush.interval.messages": 1})
    hidden, env = secrets_from_environment(props)
    text = render_properties(hidden)
    assert "hunter2" not in text
    refs = {key: hidden[key] for key in ("ssl.keystore.password", "sasl.jaas.config")}
    assert {key: env[ref.removeprefix("${kafkachaos:").removesuffix("}")] for key, ref in refs.items()} == {
        "ssl.keystore.password": "hunter2-ks", "sasl.jaas.config": "x required password=hunter2-j;"}
    assert hidden["config.providers"] == "file,kafkachaos"  # the user's provider is kept
    assert hidden["config.providers.kafkachaos.class"] == "org.apache.kafka.common.config.provider.EnvVarConfigProvider"
    assert hidden["ssl.truststore.password"] == "${file:/etc/ts:pw}"  # a reference to the user's provider stays
    assert hidden["log.flush.interval.messages"] == "1"
    assert secrets_from_environment(nodes()[0]) == (nodes()[0], {})  # nothing secret: the properties as they are


# kafka-features.sh describe, as Kafka 4.1.0 printed it (a local 3-node cluster, after a downgrade of ELR)
DESCRIBE = """\
Feature: eligible.leader.replicas.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 0\tEpoch: 30
Feature: group.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 1\tEpoch: 30
Feature: kraft.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 0\tEpoch: 30
Feature: metadata.version\tSupportedMinVersion: 3.3-IV3\tSupportedMaxVersion: 4.1-IV1\tFinalizedVersionLevel: 4.1-IV1\tEpoch: 30
Feature: share.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 0\tEpoch: 30
Feature: transaction.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 2\tFinalizedVersionLevel: 2\tEpoch: 30
"""


def test_feature_levels_are_read_from_the_features_tool():
    from harness.cluster.kraft import feature_levels

    assert feature_levels(DESCRIBE) == {"eligible.leader.replicas.version": 0, "group.version": 1, "kraft.version": 0,
                                        "share.version": 0, "transaction.version": 2}  # metadata.version is no number
    assert feature_levels("") == {}
