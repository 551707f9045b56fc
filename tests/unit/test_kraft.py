"""KRaft configs for KAFKA_HOME nodes, checked as the Compose file's wiring is (no Kafka needed)."""

import base64

import pytest

from harness.cluster.kraft import NodePorts, cluster_id, node_properties, render_properties

PORTS = [NodePorts(10001, 10011, 10021), NodePorts(10002, 10012, 10022), NodePorts(10003, 10013, 10023)]
PROXIES = ["127.0.0.1:20001", "127.0.0.1:20002", "127.0.0.1:20003"]


def listeners(value: str) -> dict[str, str]:
    return dict(item.split("://", 1) for item in value.split(","))


def nodes(ports=PORTS):
    return [node_properties(i, ports, PROXIES[i], f"/data/node-{i}") for i in range(len(ports))]


def test_three_nodes_one_quorum_distinct_ids_and_ports():
    props = nodes()
    assert [p["node.id"] for p in props] == ["1", "2", "3"]
    assert len({p["controller.quorum.voters"] for p in props}) == 1
    voters = dict(v.split("@") for v in props[0]["controller.quorum.voters"].split(","))
    assert voters == {"1": "127.0.0.1:10021", "2": "127.0.0.1:10022", "3": "127.0.0.1:10023"}
    bound = [addr for p in props for addr in listeners(p["listeners"]).values()]
    assert len(bound) == len(set(bound)) == 9 and all(a.startswith("127.0.0.1:") for a in bound)
    assert len({p["log.dirs"] for p in props}) == 3


def test_clients_are_sent_to_the_proxy_and_replication_stays_direct():
    for i, p in enumerate(nodes()):
        advertised, bound = listeners(p["advertised.listeners"]), listeners(p["listeners"])
        assert advertised["CLIENT"] == PROXIES[i]
        assert advertised["INTERNAL"] == bound["INTERNAL"]
        assert "CONTROLLER" not in advertised
        assert bound["CONTROLLER"] == f"127.0.0.1:{PORTS[i].controller}"
        assert p["inter.broker.listener.name"] == "INTERNAL" and p["controller.listener.names"] == "CONTROLLER"
        assert set(listeners(p["listener.security.protocol.map"].replace(":", "://"))) == set(bound)


@pytest.mark.parametrize("n, rf, isr", [(1, "1", "1"), (2, "2", "2"), (3, "3", "2"), (5, "3", "2")])
def test_replication_follows_the_cluster_size(n, rf, isr):
    ports = [NodePorts(100 + i, 200 + i, 300 + i) for i in range(n)]
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
