"""What a killed session left of the Compose project in the engine (stopped containers, its network) is removed
before the Compose tests start, so one killed CI run does not fail the next one's tests at setup."""

from tests.compose.conftest import LOCAL, REGISTRY, clear_stale, leftovers

NOTHING = {"containers": [], "networks": [], "volumes": []}


def test_a_stopped_project_left_behind_is_removed(docker_client):
    project = "kafka-chaos-stale-test"  # not the tests' own project: nothing of theirs is touched
    label = {"com.docker.compose.project": project}
    image = next(i for i in (docker_client.images.list(name=n) for n in (*LOCAL, *REGISTRY)) if i)[0]
    network = docker_client.networks.create(f"{project}_default", labels=label)
    docker_client.containers.create(image.id, name=f"{project}_kafka-1_1", labels=label, network=network.name,
                                    entrypoint=["true"])
    docker_client.volumes.create(f"{project}_data", labels=label)
    assert leftovers(docker_client, project) == {"containers": [f"{project}_kafka-1_1"],
                                                 "networks": [f"{project}_default"], "volumes": [f"{project}_data"]}
    clear_stale(docker_client, project)
    assert leftovers(docker_client, project) == NOTHING
