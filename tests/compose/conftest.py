"""Tests here need a Docker engine with the compose plugin; without one they skip, saying so."""

import pytest


def docker_engine() -> str | None:
    """None when an engine answers, else why not."""
    try:
        import docker

        docker.from_env(timeout=5).ping()
        return None
    except Exception as e:  # no socket, no permission, daemon down: all mean "not available"
        return f"{type(e).__name__}: {e}"


def pytest_collection_modifyitems(config, items):
    here = [i for i in items if "tests/compose/" in str(i.fspath).replace("\\", "/")]
    if not here:
        return
    why = docker_engine()
    if why:
        skip = pytest.mark.skip(reason=f"Docker engine not available ({why[:120]})")
        for item in here:
            item.add_marker(skip)
