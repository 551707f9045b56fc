"""Tests here run the Compose cluster for real: they need a Docker engine and the images.

    python -m pytest -m compose -n 0          (CI: .ci/run prepares the engine and images first)

They skip, saying why, only when no engine answers or no images exist and nothing to build them from is at hand.
Images: apache/kafka:4.1.0 and ghcr.io/shopify/toxiproxy:2.12.0 when both are present (pulled), else the local
kafka-chaos/ ones compose/build-images.sh makes; when neither is there the images are built from $KAFKA_HOME
and the toxiproxy-server on PATH. They run one at a time (-n 0): the Compose file binds fixed host ports.
"""

import os
import subprocess
from pathlib import Path

import pytest

from harness.cluster.toxiproxy import find_toxiproxy_server

# testcontainers' reaper (Ryuk) is an image from a registry; its containers are removed by their `with` blocks.
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
ROOT = Path(__file__).resolve().parents[2]
REGISTRY = ["apache/kafka:4.1.0", "ghcr.io/shopify/toxiproxy:2.12.0"]
LOCAL = ["kafka-chaos/kafka:4.1.0", "kafka-chaos/toxiproxy:2.12.0"]


def docker_engine():
    """(client, None) when an engine answers, else (None, why not)."""
    try:
        import docker

        client = docker.from_env(timeout=10)
        client.ping()
        return client, None
    except Exception as e:  # no socket, no permission, daemon down: all mean "not available"
        return None, f"{type(e).__name__}: {e}"


def images(client) -> str | None:
    """Makes the Compose file's images available (sets KAFKA_CHAOS_IMAGES for local ones); None, or why not."""
    def present(names):
        return all(client.images.list(name=n) for n in names)

    if os.environ.get("KAFKA_CHAOS_IMAGES") != "kafka-chaos" and present(REGISTRY):
        return None
    if not present(LOCAL):
        home, toxi = os.environ.get("KAFKA_HOME"), find_toxiproxy_server()
        if not home or not toxi:
            return "no images, and no KAFKA_HOME and toxiproxy-server to build them from (compose/build-images.sh)"
        env = {**os.environ, "KAFKA_DIST": home, "TOXIPROXY_BIN": str(Path(toxi).parent)}
        r = subprocess.run(["bash", str(ROOT / "compose" / "build-images.sh")], env=env, capture_output=True,
                           text=True, timeout=900)
        assert r.returncode == 0, f"compose/build-images.sh failed: {r.stdout[-2000:]}{r.stderr[-2000:]}"
    os.environ["KAFKA_CHAOS_IMAGES"] = "kafka-chaos"  # the runs' Compose CLI inherits it
    return None


def pytest_collection_modifyitems(config, items):
    here = [i for i in items if "tests/compose/" in str(i.fspath).replace("\\", "/")]
    if not here:
        return
    _, why = docker_engine()
    for item in here:
        item.add_marker(pytest.mark.compose)
        if why:
            item.add_marker(pytest.mark.skip(reason=f"Docker engine or images not available ({why[:160]})"))


@pytest.fixture(scope="session", autouse=True)
def docker_client():
    """The engine, with the Compose file's images ready (built here when absent and buildable)."""
    client, why = docker_engine()
    assert client is not None, why
    missing = images(client)
    if missing:
        pytest.skip(f"Compose images not available: {missing}")
    clear_stale(client)
    return client


def clear_stale(client, project: str = "kafka-chaos") -> None:
    """Removes what an earlier session that never got to its `down` (killed, or its engine stopped under it) left of
    the project: stopped containers, then the project's networks and volumes; the tests then start from an empty
    engine, as each asserts. A running container of the project is someone's cluster: the tests stop, naming it."""
    label = f"com.docker.compose.project={project}"
    containers = client.containers.list(all=True, filters={"label": label})
    running = [c.name for c in containers if c.status in ("running", "paused", "restarting")]
    if running:
        pytest.exit(f"the Compose project {project!r} is up ({', '.join(running)}): take it down first "
                    f"(docker-compose -p {project} down -v); the Compose tests bind its ports", returncode=3)
    for c in containers:
        print(f"removing {c.name} ({c.status}), left by an earlier session")
        c.remove(v=True, force=True)
    for n in client.networks.list(filters={"label": label}):
        n.remove()
    for v in client.volumes.list(filters={"label": label}):
        v.remove(force=True)


def leftovers(client, project: str = "kafka-chaos") -> dict[str, list[str]]:
    """What a Compose project left in the engine: containers, networks, volumes."""
    label = f"com.docker.compose.project={project}"
    return {"containers": [c.name for c in client.containers.list(all=True, filters={"label": label})],
            "networks": [n.name for n in client.networks.list(filters={"label": label})],
            "volumes": [v.name for v in client.volumes.list(filters={"label": label})]}
