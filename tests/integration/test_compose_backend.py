"""The compose backend's own code, run here without Docker: the Docker SDK client and the
`docker compose` CLI are replaced by stand-ins whose "containers" are real Tansu brokers, behind
a real Toxiproxy-API proxy (on loopback: the embedded one refuses wildcard listeners, and the
wildcard addresses the Toxiproxy container reports are matched in tests/unit/test_metadata.py).
What this cannot show (the apache/kafka image, real failover) is tests/compose/'s job."""

from pathlib import Path

import psutil
import pytest

from harness import ports
from harness.exits import InfraError
from harness.cluster.brokers import BrokerProcess, tansu_command
from harness.cluster.compose import ComposeCluster
from harness.cluster.toxiproxy import ToxiproxyServer
from harness.spec import ComposeClusterSpec
from tests.specs import cluster_spec
from harness.cluster.topic import create_topic

ROOT = Path(__file__).resolve().parents[2]


class FakeContainer:
    """The slice of docker.models.containers.Container the backend uses, over a local broker."""

    def __init__(self, name: str, broker: BrokerProcess):
        self.name, self.broker = name, broker
        self.attrs = {"Config": {"Image": "apache/kafka:4.1.0"}}

    def reload(self):  # what the engine's healthcheck would say, and the first process (the broker's, as a JVM)
        self.attrs["State"] = {"Health": {"Status": "healthy" if self.status == "running" else "unhealthy"},
                               "Pid": self.broker.proc.pid if self.broker.proc else 0}

    @property
    def status(self):
        return "running" if self.broker.alive() else "exited"

    def start(self):
        self.broker.start()

    def stop(self, timeout=10):
        self.broker.stop()

    def kill(self, signal=None):
        {None: self.broker.kill, "SIGSTOP": self.broker.pause, "SIGCONT": self.broker.resume}[signal]()

    def top(self, ps_args=None):  # as the engine's `ps` shows the broker's process (comm: java in a real one)
        state = "T" if psutil.Process(self.broker.proc.pid).status() == psutil.STATUS_STOPPED else "S"
        return {"Titles": ["PID", "STAT", "COMMAND"], "Processes": [[str(self.broker.proc.pid), state, "java"]]}


class FakeDocker:
    def __init__(self, containers: dict[str, FakeContainer]):
        self.by_service = containers
        self.containers = self
        self.queries = []

    def ping(self):
        return True

    def list(self, all=False, filters=None):
        self.queries.append(filters)
        service = next((f.split("=", 1)[1] for f in filters["label"] if f.startswith("com.docker.compose.service=")),
                       None)
        if service is None:  # the whole project
            return list(self.by_service.values())
        return [self.by_service[service]] if service in self.by_service else []


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    server = ToxiproxyServer(tmp_path / "logs" / "toxiproxy.log")
    toxi = server.start()
    port, proxy_port = ports.free_port(), ports.free_port()
    toxi.create_proxy("broker-0", upstream=f"127.0.0.1:{port}", listen=f"127.0.0.1:{proxy_port}")
    broker = BrokerProcess(0, tansu_command(0, port, f"127.0.0.1:{proxy_port}"), port, tmp_path / "broker.log")
    docker = FakeDocker({"kafka-1": FakeContainer("kafka-chaos-kafka-1-1", broker),
                         "toxiproxy": FakeContainer("kafka-chaos-toxiproxy-1", server)})
    compose_calls = []
    already_up = []

    def fake_compose(self, *args, timeout=300):
        compose_calls.append(args)
        if args == ("ps", "-q") and already_up:
            if already_up[0] == "healthy" and not broker.alive():
                broker.start()  # someone's cluster, up and healthy; "stale": what a killed run left, its broker dead
            return "abc123\n"
        if args == ("up", "-d") and not broker.alive():
            broker.start()
        if args[0] == "down":
            already_up.clear()
        return ""

    monkeypatch.setattr(ComposeCluster, "_compose", fake_compose)
    yield server, docker, compose_calls, already_up, proxy_port
    broker.stop()
    server.stop()


def compose_spec(server) -> ComposeClusterSpec:
    return cluster_spec(backend="compose", broker="kafka", brokers=1, services=["kafka-1"],
                       compose_file=str(ROOT / "compose" / "docker-compose.yml"),
                       toxiproxy_url=f"http://127.0.0.1:{server.port}")


def test_up_preflight_faults_and_down(tmp_path, stand_in):
    server, docker, calls, _, proxy_port = stand_in
    cluster = ComposeCluster(compose_spec(server), tmp_path / "run", docker_client=docker)
    cluster.up()
    try:
        assert calls[:2] == [("ps", "-q"), ("up", "-d")]  # then the wait on healthchecks is the harness's (v1 has no --wait)
        assert {"com.docker.compose.project=kafka-chaos", "com.docker.compose.service=kafka-1"} <= {
            label for q in docker.queries for label in q["label"]}
        # The proxy's address became the address clients use, and the preflight proved it (the wildcard
        # addresses the Toxiproxy container reports are matched in tests/unit/test_metadata.py).
        assert cluster.bootstrap == f"127.0.0.1:{proxy_port}" and cluster.endpoints == [cluster.bootstrap]
        assert cluster.description.startswith("compose · apache/kafka:4.1.0 × 1")
        create_topic(cluster.client, "t", 2, 1)
        assert cluster.leader_of("t", 1) == 0
        cluster.toxiproxy().add_toxic("broker-0", "slow", "latency", attributes={"latency": 10})
        cluster.pause_broker(0)
        stopped = psutil.Process(docker.by_service["kafka-1"].broker.proc.pid).status
        assert stopped() == psutil.STATUS_STOPPED
        cluster.settle("t", 2)  # continues it and removes every toxic
        assert stopped() != psutil.STATUS_STOPPED and cluster.toxiproxy().toxics("broker-0") == []
        cluster.kill_broker(0)
        cluster.check_alive()  # down on purpose: fine
        cluster.start_broker(0)
        cluster.check_alive()
        docker.by_service["kafka-1"].kill()  # outside the schedule
        with pytest.raises(InfraError, match="broker 0 died outside the fault schedule"):
            cluster.check_alive()
    finally:
        cluster.down()
    assert calls[-1] == ("down", "--volumes", "--remove-orphans")  # it brought the cluster up, so it takes it down
    assert ("logs", "--no-color", "--timestamps") in calls and (tmp_path / "run" / "logs" / "compose.log").exists()


def test_a_cluster_found_running_is_left_running_and_healed(tmp_path, stand_in):
    server, docker, calls, already_up, _ = stand_in
    already_up.append("healthy")
    cluster = ComposeCluster(compose_spec(server), tmp_path / "run", docker_client=docker)
    cluster.up()
    cluster.toxiproxy().set_enabled("broker-0", False)
    cluster.kill_broker(0)
    cluster.down()
    assert not any(c[0] == "down" for c in calls)
    assert docker.by_service["kafka-1"].status == "running"  # restarted: left as it was found
    assert server.alive()


def test_what_a_killed_run_left_behind_is_taken_down_before_a_fresh_start(tmp_path, stand_in):
    server, docker, calls, already_up, _ = stand_in
    already_up.append("stale")
    cluster = ComposeCluster(compose_spec(server), tmp_path / "run", docker_client=docker)
    cluster.up()
    cluster.down()
    assert calls[:3] == [("ps", "-q"), ("down", "--volumes", "--remove-orphans"), ("up", "-d")]
    assert calls[-1] == ("down", "--volumes", "--remove-orphans")  # started here, so taken down


def test_no_docker_engine_is_an_infrastructure_error(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", f"tcp://127.0.0.1:{ports.free_port()}")  # nothing listens there
    spec = cluster_spec(backend="compose", broker="kafka", brokers=3,
                       compose_file=str(ROOT / "compose" / "docker-compose.yml"))
    cluster = ComposeCluster(spec, tmp_path / "run")
    with pytest.raises(InfraError, match="could not start the compose cluster"):
        cluster.up()
