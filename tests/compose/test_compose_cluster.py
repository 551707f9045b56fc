"""The Compose cluster for real: 3 Kafka brokers behind the Toxiproxy container, driven by the harness's own
compose backend (Compose CLI v1 or v2, Docker SDK for broker faults): up, the preflight through the Toxiproxy
container, kill/pause/restart of broker containers, isolate through the inter-broker proxies, and down with
nothing of the project left in the engine."""

import re
from pathlib import Path

import pytest
import requests
from confluent_kafka.admin import AdminClient

from harness.cluster.apiversions import kafka_answers
from harness.cluster.compose import ComposeCluster, compose_command
from tests.compose.conftest import leftovers
from tests.integration.test_interrupts import wait_for
from tests.specs import cluster_spec

PROXIES = ["127.0.0.1:29091", "127.0.0.1:29092", "127.0.0.1:29093"]


def state(proc: Path) -> str:
    """A process's state letter (R, S, T: stopped, ...) from its /proc status."""
    return next(line.split()[1] for line in (proc / "status").read_text().splitlines() if line.startswith("State:"))


def brokers_seen(via: str) -> list[int]:
    """Broker ids in the metadata one proxy's broker hands out (a fenced broker is left out)."""
    return sorted(AdminClient({"bootstrap.servers": via}).list_topics(timeout=30).brokers)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, docker_client):
    assert leftovers(docker_client) == {"containers": [], "networks": [], "volumes": []}, "something left running"
    c = ComposeCluster(cluster_spec(backend="compose", broker="kafka", brokers=3), tmp_path_factory.mktemp("run"),
                       docker_client=docker_client)
    c.up()  # includes the preflight: metadata names only the proxies, a disabled proxy cuts its broker off
    yield c
    c.down()
    assert leftovers(docker_client) == {"containers": [], "networks": [], "volumes": []}
    assert (c.files.compose_log).read_text().count("kafka-") > 10  # the containers' logs were kept


def test_up_and_the_preflight_through_the_toxiproxy_container(cluster):
    assert compose_command() is not None
    assert cluster.started_here  # nothing was up: the run owns the cluster and takes it down
    assert sorted(cluster.bootstrap.split(",")) == PROXIES
    assert cluster.description.startswith("compose · ") and "/kafka:4.1.0 × 3 · proxy: toxiproxy 2." in \
        cluster.description
    md = AdminClient({"bootstrap.servers": PROXIES[0]}).list_topics(timeout=30)
    assert sorted(f"{b.host}:{b.port}" for b in md.brokers.values()) == PROXIES


def test_broker_kill_pause_and_restart_act_on_the_containers(cluster):
    broker = cluster.brokers[2]
    cluster.kill_broker(2)
    broker.container.reload()
    assert broker.container.status == "exited"
    wait_for(lambda: brokers_seen(PROXIES[0]) == [1, 2], timeout=60, what="the controller to fence broker 3")
    cluster.start_broker(2)
    wait_for(lambda: brokers_seen(PROXIES[0]) == [1, 2, 3], timeout=120, what="broker 3 to come back")
    cluster.pause_broker(2)
    broker.container.reload()
    first = Path(f"/proc/{broker.container.attrs['State']['Pid']}")  # the container's first process, on this host
    assert (first / "comm").read_text().strip() == "java"  # the image execs the JVM: SIGSTOP stops the broker
    assert state(first) == "T" and broker.container.status == "running"
    cluster.resume_broker(2)
    wait_for(lambda: state(first) != "T", timeout=30, what="broker 3's JVM to run again after SIGCONT")
    cluster.stop_broker(2)  # graceful: the broker deregisters at once
    wait_for(lambda: brokers_seen(PROXIES[0]) == [1, 2], timeout=60, what="broker 3 to shut down")
    cluster.start_broker(2)
    wait_for(lambda: brokers_seen(PROXIES[0]) == [1, 2, 3], timeout=120, what="broker 3 to come back")
    cluster.check_alive()


def active_controller(cluster, via: int = 1) -> int | None:
    """The KRaft quorum leader's node id, as node `via`'s quorum tool reports it (asking its own controller
    listener, CONTROLLER_<via> on port 1908<via>); None when it cannot tell."""
    out = cluster.brokers[via - 1].container.exec_run(
        ["timeout", "40", "/opt/kafka/bin/kafka-metadata-quorum.sh", "--bootstrap-controller", f"localhost:1908{via}",
         "describe", "--status"]).output.decode()
    found = re.search(r"LeaderId:\s*(\d+)", out)
    return int(found.group(1)) if found else None


def test_isolate_cuts_a_broker_from_its_peers_through_the_inter_broker_proxies(cluster):
    # A broker that is not the quorum leader: fencing needs a working controller (the leader's isolation is the
    # next test's).
    leader = active_controller(cluster)
    node = next(n for n in (1, 2, 3) if n != leader)  # Kafka node ids; harness broker index = node - 1
    peers = [n for n in (1, 2, 3) if n != node]
    toxi = cluster.toxiproxy()

    def seen_by_its_peers():
        """The brokers in the metadata of its peers (its own view is stale while it is cut off, so its client
        proxy is closed while asking)."""
        toxi.set_enabled(f"broker-{node - 1}", False)
        try:
            return brokers_seen(PROXIES[peers[0] - 1])
        finally:
            toxi.set_enabled(f"broker-{node - 1}", True)

    cluster.isolate_broker(node - 1)
    try:
        api = f"http://{toxi.host}:{toxi.port}"
        assert all(not requests.get(f"{api}/proxies/{name}", timeout=10).json()["enabled"]
                   for name in cluster.peer_proxies(node - 1))
        # its heartbeats to the controller stop: the controller fences it (broker session timeout 9 s) ...
        wait_for(lambda: seen_by_its_peers() == peers, timeout=90, what=f"broker {node} to be fenced")
        assert kafka_answers("127.0.0.1", 29090 + node)  # ... while clients still reach it through its own proxy
    finally:
        cluster.rejoin_broker(node - 1)
    wait_for(lambda: seen_by_its_peers() == [1, 2, 3], timeout=120, what=f"broker {node} to rejoin")


def test_isolating_the_active_controller_makes_the_other_two_elect_a_new_one(cluster):
    # Before each node had a controller listener per peer, followers reached the leader directly (the address it
    # advertises, not their voters setting) and one CI run saw them keep the isolated leader for 90 s.
    leader = active_controller(cluster)
    assert leader is not None
    other = next(n for n in (1, 2, 3) if n != leader)
    cluster.isolate_broker(leader - 1)
    try:
        wait_for(lambda: active_controller(cluster, via=other) not in (leader, None), timeout=60,
                 what=f"nodes other than {leader} to elect a new KRaft leader")
    finally:
        cluster.rejoin_broker(leader - 1)
    wait_for(lambda: brokers_seen(PROXIES[0]) == [1, 2, 3], timeout=120, what=f"broker {leader} to rejoin")
