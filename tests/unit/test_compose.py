"""The Compose file's wiring, checked without Docker."""

import json
from pathlib import Path

import pytest
import yaml

from harness.cluster.base import peer_proxy_names

COMPOSE = Path(__file__).resolve().parents[2] / "compose"


def load():
    doc = yaml.safe_load((COMPOSE / "docker-compose.yml").read_text())
    return doc["services"], json.loads((COMPOSE / "toxiproxy.json").read_text())


def listeners(value: str) -> dict[str, str]:
    return dict(item.split("://", 1) for item in value.split(","))


def test_three_kraft_brokers_one_cluster_full_quorum():
    services, _ = load()
    brokers = {name: s for name, s in services.items() if name.startswith("kafka-")}
    assert len(brokers) == 3
    envs = [s["environment"] for s in brokers.values()]
    assert sorted(e["KAFKA_NODE_ID"] for e in envs) == [1, 2, 3]
    assert len({e["CLUSTER_ID"] for e in envs}) == 1
    for name, s in brokers.items():
        e = s["environment"]
        assert e["KAFKA_PROCESS_ROLES"] == "broker,controller"
        voters = dict(v.split("@") for v in e["KAFKA_CONTROLLER_QUORUM_VOTERS"].split(","))
        own = f"CONTROLLER_{e['KAFKA_NODE_ID']}"
        assert sorted(voters) == ["1", "2", "3"]
        assert voters[str(e["KAFKA_NODE_ID"])] == f"{name}:" + listeners(e["KAFKA_LISTENERS"])[own][1:]
        names = e["KAFKA_CONTROLLER_LISTENER_NAMES"].split(",")
        assert names[0] == own and sorted(names) == ["CONTROLLER_1", "CONTROLLER_2", "CONTROLLER_3"]
        assert (e["KAFKA_DEFAULT_REPLICATION_FACTOR"], e["KAFKA_MIN_INSYNC_REPLICAS"]) == (3, 2)
        # one variable switches to the images compose/build-images.sh makes; unset, the registry's
        assert s["image"] == "${KAFKA_CHAOS_IMAGES:-apache}/kafka:4.1.0" and s["healthcheck"]["test"]
    assert services["toxiproxy"]["image"] == "${KAFKA_CHAOS_IMAGES:-ghcr.io/shopify}/toxiproxy:2.12.0"
    assert "name" not in yaml.safe_load((COMPOSE / "docker-compose.yml").read_text())  # docker-compose v1 refuses it


def test_every_client_address_is_a_proxy_whose_upstream_is_that_broker():
    services, proxies = load()
    published = {}
    for mapping in services["toxiproxy"]["ports"]:
        host_ip, host_port, container_port = mapping.split(":")
        assert host_ip == "127.0.0.1"
        published[container_port] = f"{host_ip}:{host_port}"
    ports = [m.split(":")[1] for s in services.values() for m in s.get("ports", [])]
    assert len(ports) == len(set(ports))  # unique host ports
    by_host_address = {published[p["listen"].rsplit(":", 1)[1]]: p for p in proxies
                       if p["listen"].rsplit(":", 1)[1] in published}
    for name in ("kafka-1", "kafka-2", "kafka-3"):
        e = services[name]["environment"]
        advertised = listeners(e["KAFKA_ADVERTISED_LISTENERS"])["CLIENT"]
        proxy = by_host_address[advertised]  # the advertised client address is a proxy's address
        client_port = listeners(e["KAFKA_LISTENERS"])["CLIENT"].rsplit(":", 1)[1]
        assert proxy["upstream"] == f"{name}:{client_port}"  # ... that forwards to this broker's client listener
        assert proxy["name"] == f"broker-{e['KAFKA_NODE_ID'] - 1}"
        assert e["KAFKA_INTER_BROKER_LISTENER_NAME"] == f"INTERNAL_{e['KAFKA_NODE_ID']}"


def test_healthchecks_make_up_wait_meaningful():
    services, _ = load()
    assert all(s.get("healthcheck") for s in services.values())


def test_every_peer_link_crosses_its_own_proxy_so_isolate_can_cut_it():
    """Node s reaches node d's controller through controller-(s-1)-(d-1), which ends at d's listener CONTROLLER_s,
    and fetches from node d through replication-(s-1)-(d-1), which ends at d's listener INTERNAL_s; nothing between
    brokers is direct. Both for the addresses in s's own settings (its voters) and for those d advertises for s's
    listener names, which a KRaft follower takes from the leader (BeginQuorumEpoch) and a broker from metadata."""
    services, proxies = load()
    by_address = {f"toxiproxy:{p['listen'].rsplit(':', 1)[1]}": p for p in proxies}
    env = {n: services[f"kafka-{n}"]["environment"] for n in (1, 2, 3)}
    for s in (1, 2, 3):
        voters = dict(v.split("@") for v in env[s]["KAFKA_CONTROLLER_QUORUM_VOTERS"].split(","))
        fetch = env[s]["KAFKA_INTER_BROKER_LISTENER_NAME"]
        control = env[s]["KAFKA_CONTROLLER_LISTENER_NAMES"].split(",")[0]
        for d in (1, 2, 3):
            if s == d:
                continue
            for address in (voters[str(d)], listeners(env[d]["KAFKA_ADVERTISED_LISTENERS"])[control]):
                controller = by_address[address]
                assert controller["name"] == f"controller-{s - 1}-{d - 1}"
                assert controller["upstream"] == f"kafka-{d}:" + listeners(env[d]["KAFKA_LISTENERS"])[control][1:]
            replication = by_address[listeners(env[d]["KAFKA_ADVERTISED_LISTENERS"])[fetch]]
            assert replication["name"] == f"replication-{s - 1}-{d - 1}"
            assert replication["upstream"] == f"kafka-{d}:" + listeners(env[d]["KAFKA_LISTENERS"])[fetch][1:]
    peers = {p["name"] for p in proxies if not p["name"].startswith("broker-")}
    assert peers == {name for b in range(3) for name in peer_proxy_names(b, 3)}  # what isolate disables
    published = {m.split(":")[2] for m in services["toxiproxy"]["ports"]}
    assert not any(p["listen"].rsplit(":", 1)[1] in published for p in proxies if p["name"] in peers)
    assert all(services[f"kafka-{n}"]["depends_on"]["toxiproxy"]["condition"] == "service_healthy" for n in (1, 2, 3))


def test_the_image_script_refuses_bad_input_before_touching_anything(tmp_path):
    import os
    import subprocess

    script = COMPOSE / "build-images.sh"
    kafka = tmp_path / "kafka"
    (kafka / "bin").mkdir(parents=True)
    (kafka / "bin" / "kafka-server-start.sh").write_text("#!/bin/sh\n")
    (kafka / "bin" / "kafka-server-start.sh").chmod(0o755)
    for env, named in (({}, "KAFKA_DIST is not set"),
                       ({"KAFKA_DIST": str(tmp_path / "nope")}, "no bin/kafka-server-start.sh"),
                       ({"KAFKA_DIST": str(kafka)}, "TOXIPROXY_BIN is not set"),
                       ({"KAFKA_DIST": str(kafka), "TOXIPROXY_BIN": str(tmp_path)}, "no executable toxiproxy-server")):
        base = {k: v for k, v in os.environ.items() if k not in ("KAFKA_DIST", "TOXIPROXY_BIN")}
        r = subprocess.run(["bash", str(script)], env={**base, **env}, capture_output=True, text=True, timeout=30)
        assert (r.returncode, r.stdout) == (2, ""), r
        assert named in r.stderr, r.stderr


@pytest.mark.parametrize("content, says", [("just a string\n", "no services mapping"), ("services: [a, b]\n",
                                                                                       "no services mapping"),
                                            ("a: [\n", "not a readable Compose file")])
def test_a_compose_file_that_is_not_one_is_bad_input(tmp_path, content, says):
    """A Compose file named by an experiment (or a run folder's spec) that is not a mapping of services: a
    problem naming the field, never an AttributeError."""
    from harness.cluster.compose import ComposeCluster
    from harness.spec import ComposeClusterSpec

    path = tmp_path / "compose.yml"
    path.write_text(content)
    [problem] = ComposeCluster.problems(ComposeClusterSpec(backend="compose", broker="kafka", compose_file=str(path)))
    assert problem.startswith("cluster.compose_file: ") and says in problem


def test_a_pause_is_sigstop_to_the_jvm_and_returns_once_the_engine_shows_it_stopped(monkeypatch):
    """A pause signals the container's first process (no cgroup freezer) and returns once it is stopped; another
    java in the container (a healthcheck's tool) does not count. A first process that is no JVM, or that does not
    stop (continued again), is infrastructure, said as such."""
    from harness.cluster import compose
    from harness.exits import InfraError

    class Container:
        name, status = "kafka-3", "running"

        def __init__(self, stops_after: int | None, first: str = "java"):
            self.stops_after, self.first, self.signals, self.asked = stops_after, first, [], 0
            self.attrs = {"State": {"Pid": 9}}

        def kill(self, signal=None):
            self.signals.append(signal)

        def reload(self):
            pass

        def top(self, ps_args=None):
            assert ps_args == "-o pid,stat,comm"
            stopped = "SIGSTOP" in self.signals and self.stops_after is not None and self.asked >= self.stops_after
            self.asked += "SIGSTOP" in self.signals
            return {"Titles": ["PID", "STAT", "COMMAND"],
                    "Processes": [["9", "Tsl" if stopped else "Ssl", self.first], ["31", "Sl", "java"]]}

    waits = []
    monkeypatch.setattr(compose.time, "sleep", waits.append)
    c = Container(stops_after=2)
    broker = compose.ContainerBroker(2, c)
    broker.pause()
    assert c.signals == ["SIGSTOP"] and c.asked == 3 and waits == [compose.STOP_CHECK_EVERY] * 2
    broker.resume()
    assert c.signals == ["SIGSTOP", "SIGCONT"]
    never = Container(stops_after=None)
    with pytest.raises(InfraError, match=r"kafka-3: its JVM did not stop on SIGSTOP \(state 'Ssl' after 2 s\)"):
        compose.ContainerBroker(2, never).pause()
    assert never.asked == compose.STOP_CHECKS and never.signals == ["SIGSTOP", "SIGCONT"]  # undone
    shell = Container(stops_after=0, first="bash")
    with pytest.raises(InfraError, match="its first process is 'bash', not the broker's JVM"):
        compose.ContainerBroker(2, shell).pause()
    assert shell.signals == []  # nothing sent
    gone = Container(stops_after=0)
    gone.status = "exited"
    compose.ContainerBroker(2, gone).resume()  # killed while paused: nothing to continue
    assert gone.signals == []


def test_an_engine_that_does_not_answer_is_infrastructure_not_a_traceback():
    """The watchdog asks each broker container whether it is alive; an engine hung past the SDK's timeout (once in
    CI: 4 minutes, on the unpause that healed a paused broker) is an InfraError naming the container and the cause,
    which the watchdog turns into the run's reason; a container that answers is alive while running (a paused
    broker's too: a pause is a SIGSTOP)."""
    from requests.exceptions import ReadTimeout

    from harness.cluster import compose
    from harness.exits import InfraError

    class Container:
        name, status = "kafka-2", "running"

        def __init__(self, error=None):
            self.error = error

        def reload(self):
            if self.error:
                raise self.error

    assert compose.ContainerBroker(1, Container()).alive()
    hung = Container(ReadTimeout("UnixHTTPConnectionPool(host='localhost', port=None): Read timed out."))
    with pytest.raises(InfraError, match="did not answer about container kafka-2: ReadTimeout: .*Read timed out"):
        compose.ContainerBroker(1, hung).alive()
