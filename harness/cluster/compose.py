"""backend: compose — the Apache Kafka cluster of a Compose file, behind its Toxiproxy container.

`up -d` / `down` run through the Compose CLI (the Docker SDK has no Compose): `docker compose` (v2) where
it works, else `docker-compose` (v1, what Debian ships). v1 has no `up --wait`, so the wait for every
container's healthcheck is ours, through the Docker SDK, for both. Broker faults act on the containers
through the Docker SDK: kill + start, SIGSTOP/SIGCONT, stop + start. Broker i is service `services[i]`
(default kafka-<i+1>) behind proxy `proxies[i]` (default broker-<i>), as compose/docker-compose.yml lays
them out. A healthy cluster that was already up before the run is left up (only its faults are healed);
containers a crashed run left behind (stopped, unhealthy) are taken down and the cluster started afresh.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import time
from pathlib import Path

from docker.errors import DockerException
from requests.exceptions import RequestException

from .. import yamlfile
from ..exits import InfraError
from ..spec import ComposeClusterSpec
from .base import ProxiedCluster
from .metadata import reachable_address
from .toxiproxy import ToxiproxyClient, version_number

DEFAULT_TOXIPROXY = "http://127.0.0.1:8474"
DEFAULT_PROJECT = "kafka-chaos"
HEALTHY_WITHIN_S = 300
NO_IMAGES_HINT = ("without an image registry, build local images with compose/build-images.sh and "
                  "export KAFKA_CHAOS_IMAGES=kafka-chaos")


@functools.cache  # asked once a process: every Compose call of a run uses the same CLI
def compose_command() -> list[str] | None:
    """`docker compose` (v2) if it answers, else `docker-compose` (v1), else None."""
    if shutil.which("docker"):
        try:
            if subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=30).returncode == 0:
                return ["docker", "compose"]
        except subprocess.TimeoutExpired:
            pass
    return ["docker-compose"] if shutil.which("docker-compose") else None


def service_names(spec: ComposeClusterSpec) -> list[str]:
    return spec.services or [f"kafka-{i + 1}" for i in range(spec.brokers)]


def project_name(compose_file: Path) -> str:
    """The Compose project: the file's top-level `name` (Compose v2 only), else kafka-chaos; always passed
    with -p, so v1 and v2 name the same containers."""
    doc = yamlfile.load(compose_file)  # a mapping: Backend.problems checked it before the run
    return str(doc.get("name") or DEFAULT_PROJECT)


def health(container) -> str:
    """healthy / starting / unhealthy from the container's healthcheck; without one, its status."""
    state = container.attrs.get("State") or {}
    return (state.get("Health") or {}).get("Status") or container.status


STOP_CHECKS, STOP_CHECK_EVERY = 40, 0.05  # how long a pause waits to see the broker's JVM stopped: 2 s at most


class ContainerBroker:
    """A broker container; faults act on it through the Docker SDK."""

    def __init__(self, index: int, container, stop_timeout: int = 30):
        self.index, self.container, self.stop_timeout = index, container, stop_timeout
        self.log_path = f"docker logs {container.name}"

    def start(self) -> None:
        self.container.start()

    def stop(self) -> None:
        self.container.stop(timeout=self.stop_timeout)

    def kill(self) -> None:
        self.container.kill()

    def pause(self) -> None:
        """SIGSTOP to the container's first process, the broker's JVM (the image's entrypoint execs it), as the
        local backend pauses its brokers and Jepsen its nodes. Not `docker pause`: on this engine's cgroup v1
        freezer runc at times could not freeze a broker just started ("unable to freeze"), and once, in CI, the
        engine hung four minutes on the unpause, its API with it. Returns once the engine's host shows that
        process stopped. InfraError when the first process is no JVM, or does not stop (continued again): the
        fault would not be the one journaled."""
        self.container.reload()
        first = str(self.container.attrs["State"]["Pid"])
        command, _ = self.process(first)
        if command != "java":
            raise InfraError(f"container {self.container.name}: its first process is {command!r}, not the broker's "
                             "JVM, so a pause (SIGSTOP to it) would not pause the broker; its image must exec java")
        self.container.kill(signal="SIGSTOP")
        state = ""
        for _ in range(STOP_CHECKS):
            _, state = self.process(first)
            if state.startswith("T"):
                return
            time.sleep(STOP_CHECK_EVERY)
        self.container.kill(signal="SIGCONT")
        raise InfraError(f"container {self.container.name}: its JVM did not stop on SIGSTOP (state {state!r} after "
                         f"{STOP_CHECKS * STOP_CHECK_EVERY:g} s); continued again")

    def resume(self) -> None:
        self.container.reload()
        if self.container.status == "running":
            self.container.kill(signal="SIGCONT")

    def process(self, pid: str) -> tuple[str, str]:
        """(command name, ps STAT: R, S, T for stopped, ...) of the container's process pid (as the engine's host
        numbers it); ("", "") when the container has no such process."""
        top = self.container.top(ps_args="-o pid,stat,comm")
        at = {name: top["Titles"].index(name) for name in ("PID", "STAT", "COMMAND")}
        return next(((p[at["COMMAND"]], p[at["STAT"]]) for p in top["Processes"] or [] if p[at["PID"]] == pid),
                    ("", ""))

    def alive(self) -> bool:
        """Running (a paused broker's container too). InfraError when the engine does not answer: the watchdog
        asks every half second, and an engine hung for minutes (once in CI, on the unpause that healed a paused
        broker) must stop the run with that reason, not end the watchdog's thread with a traceback."""
        try:
            self.container.reload()
        except (DockerException, RequestException) as e:
            raise InfraError(f"the Docker engine did not answer about container {self.container.name}: "
                             f"{type(e).__name__}: {e}") from None
        return self.container.status == "running"


class ComposeCluster(ProxiedCluster):
    start_errors = ProxiedCluster.start_errors + (DockerException,)

    def __init__(self, spec: ComposeClusterSpec, run_dir: Path, docker_client=None):
        super().__init__(spec, run_dir)
        self.file = spec.compose_path
        self.project = ""
        self.docker = docker_client  # injected by tests; else docker.from_env() at start
        self.started_here = False
        self.image, self.toxi_version = "apache/kafka", "-"  # learnt at start, kept for the report

    @classmethod
    def problems(cls, spec: ComposeClusterSpec) -> list[str]:
        if not spec.compose_path.is_file():
            return [f"cluster.compose_file: {spec.compose_path} not found (a relative path starts at the experiment "
                    "file's folder; leave it out to use the Compose file shipped with the harness)"]
        try:
            doc = yamlfile.load(spec.compose_path)
        except (OSError, ValueError) as e:  # YamlError, UnicodeDecodeError
            return [f"cluster.compose_file: {spec.compose_path}: not a readable Compose file ({e})"]
        services = doc.get("services") if isinstance(doc, dict) else None
        if not isinstance(services, dict):
            return [f"cluster.compose_file: {spec.compose_path}: not a Compose file (no services mapping)"]
        missing = [s for s in service_names(spec) if s not in services]
        if missing:
            return [f"cluster.services: {spec.compose_path} has no service {missing[0]!r} "
                    f"(it has: {', '.join(sorted(services))})"]
        return []

    @property
    def description(self) -> str:
        return f"compose · {self.image} × {self.spec.brokers} · proxy: toxiproxy {self.toxi_version}"

    def _compose(self, *args: str, timeout: float = 300) -> str:
        base = compose_command()
        if base is None:
            raise RuntimeError("neither `docker compose` (v2) nor `docker-compose` (v1) is installed")
        cmd = [*base, "-p", self.project, "-f", str(self.file), *args]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except FileNotFoundError:
            raise RuntimeError(f"{cmd[0]} is not installed") from None
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"`{' '.join(cmd)}` did not finish in {timeout:.0f}s") from None
        if done.returncode != 0:
            raise RuntimeError(f"`{' '.join(cmd)}` failed: {done.stderr.strip()[-800:]}")
        return done.stdout

    def _start(self) -> str:
        import docker

        self.project = project_name(self.file)
        try:
            if self.docker is None:
                self.docker = docker.from_env()
            self.docker.ping()
        except Exception as e:  # no socket, no permission, daemon down
            raise RuntimeError(f"no Docker engine answers (DOCKER_HOST={os.environ.get('DOCKER_HOST', 'unset')}; "
                               f"is the daemon running?): {e}") from e
        self.started_here = True
        if self._compose("ps", "-q").strip():
            if all(health(c) in ("healthy", "running") for c in self._containers()):
                self.started_here = False  # a cluster someone brought up: used, then left as found
            else:  # what a killed run left behind: its names would block ours
                self._compose("down", "--volumes", "--remove-orphans")
        try:
            self._compose("up", "-d")
        except RuntimeError as e:
            raise RuntimeError(f"{e} ({NO_IMAGES_HINT})") from None
        self._wait_healthy()
        for i, service in enumerate(service_names(self.spec)):
            found = self._containers(service)
            if len(found) != 1:
                raise RuntimeError(f"expected one container of service {service} in project {self.project}, "
                                   f"found {len(found)}")
            self.brokers.append(ContainerBroker(i, found[0]))
        self.image = self.brokers[0].container.attrs.get("Config", {}).get("Image", self.image)
        self.toxi = ToxiproxyClient.from_url(self.spec.toxiproxy_url or DEFAULT_TOXIPROXY)
        self.toxi_version = version_number(self.toxi.version())
        self.proxy_listens = [self.toxi.attach(self.proxy_name(i)) for i in range(self.spec.brokers)]
        return self.spec.bootstrap_servers or ",".join(reachable_address(l, self.toxi.host)
                                                       for l in self.proxy_listens)

    def _containers(self, service: str | None = None) -> list:
        labels = [f"com.docker.compose.project={self.project}"]
        if service:
            labels.append(f"com.docker.compose.service={service}")
        return self.docker.containers.list(all=True, filters={"label": labels})

    def _wait_healthy(self, within_s: float = HEALTHY_WITHIN_S) -> None:
        """Every container of the project (all exist once `up -d` returns) healthy, or running without a
        healthcheck."""
        deadline = time.monotonic() + within_s
        while True:
            waiting = []
            for c in self._containers():
                c.reload()
                state = health(c)
                if state in ("unhealthy", "exited", "dead"):
                    raise RuntimeError(f"container {c.name} is {state} (see logs/compose.log)")
                if state not in ("healthy", "running"):
                    waiting.append(c.name)
            if not waiting:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"not healthy within {within_s:.0f}s: {', '.join(waiting)} (see logs/compose.log)")
            time.sleep(1)

    def _stop(self) -> None:
        if self.docker is None or not self.project:
            return
        try:
            self.files.logs.mkdir(parents=True, exist_ok=True)
            self.files.compose_log.write_text(self._compose("logs", "--no-color", "--timestamps"))
        except (RuntimeError, OSError):
            pass
        if self.started_here:
            try:
                self._compose("down", "--volumes", "--remove-orphans")
            except RuntimeError as e:  # the engine (or the CLI) failed us: infrastructure, said as such
                raise InfraError(f"the Compose cluster could not be taken down: {e}") from None
        else:  # leave a cluster we found running as we found it: healed, every broker up
            if self.toxi is not None and self.toxi.answers():
                self.toxi.reset()
            for b in self.brokers:
                if not b.alive():
                    b.start()
                b.resume()
        self.project = ""
