"""A local cluster's start hands each node the ports harness/ports.py reserved, without starting anything: the
proxy server, kafka-storage.sh and the node processes are stand-ins. (d51453e named its lists of ports `ports`,
which shadowed the module inside the functions that call ports.free_port(): every local run, Tansu or Kafka,
failed at once with "NameError: cannot access free variable 'ports'".)"""

import subprocess

import pytest

from harness.cluster import local
from harness.cluster.brokers import BrokerProcess
from harness.cluster.kraft import NodePorts
from harness.spec import LocalClusterSpec


class FakeProxies:
    def __init__(self):
        self.upstreams = []

    def start(self):
        return self

    def create_proxy(self, name, upstream):
        self.upstreams.append(upstream)
        return f"127.0.0.1:{30000 + len(self.upstreams)}"

    def stop(self):
        pass


@pytest.fixture
def started(tmp_path, monkeypatch):
    home = tmp_path / "kafka"
    (home / "bin").mkdir(parents=True)
    formats = []

    def storage(cmd, **kw):
        formats.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(local.subprocess, "run", storage)
    monkeypatch.setattr(BrokerProcess, "launch", lambda self: None)
    monkeypatch.setattr(BrokerProcess, "wait_ready", lambda self: None)
    seen = []
    real = local.LocalKafkaCluster._peer_routes
    monkeypatch.setattr(local.LocalKafkaCluster, "_peer_routes",
                        lambda self, nodes: seen.extend(nodes) or real(self, nodes))
    (tmp_path / "run" / "logs").mkdir(parents=True)  # as RunFolder.create makes it
    cluster = local.LocalKafkaCluster(LocalClusterSpec(broker="kafka", brokers=3, kafka_home=str(home)),
                                      tmp_path / "run")
    cluster.server = proxies = FakeProxies()
    bootstrap = cluster._start()
    return cluster, proxies, bootstrap, formats, seen


def test_each_kafka_node_gets_the_reserved_client_port_its_proxy_forwards_to(started):
    cluster, proxies, bootstrap, formats, nodes = started
    assert bootstrap == "127.0.0.1:30001,127.0.0.1:30002,127.0.0.1:30003"  # the client proxies come first
    assert len(formats) == 3 and all("format" in cmd for cmd in formats)
    assert [f"127.0.0.1:{b.port}" for b in cluster.brokers] == proxies.upstreams[:3]
    assert len(proxies.upstreams) == 3 + 3 * 2 * 2  # then one per (src, dst) pair for replication and controller
    assert all(isinstance(n, NodePorts) for n in nodes) and [n.client for n in nodes] == [b.port for b in cluster.brokers]
    every = [p for n in nodes for p in (n.client, *n.controller, *n.replication)]
    assert len(set(every)) == len(every) == 3 * (1 + 3 + 3)  # client, one controller and one replication port a peer
    # each (src, dst) proxy ends at dst's own listener for src's traffic
    for kind in ("replication", "controller"):
        assert {f"127.0.0.1:{getattr(nodes[d], kind)[s]}" for s in range(3) for d in range(3) if s != d} <= \
            set(proxies.upstreams[3:])
