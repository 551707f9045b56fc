import pytest

# Each folder is a tier (README, "Tests"): unit needs no JVM and no broker; spark starts a local
# Spark; integration starts its own brokers and proxy; kafka needs KAFKA_HOME; compose needs Docker.
TIERS = ("unit", "spark", "integration", "kafka", "compose")


def pytest_collection_modifyitems(config, items):
    for item in items:
        parts = item.path.parts
        for tier in TIERS:
            if tier in parts[parts.index("tests") + 1:parts.index("tests") + 2]:
                item.add_marker(getattr(pytest.mark, tier))


@pytest.fixture(scope="session")
def spark():
    from harness.analysis.spark import spark_session, stop_session

    session = spark_session("local[2]")
    yield session
    stop_session(session)


@pytest.fixture(scope="session", autouse=True)
def nothing_left_running(tmp_path_factory):
    """After the whole session, no process started by a test's run may remain."""
    import psutil

    base = str(tmp_path_factory.getbasetemp().resolve())
    yield
    leftovers = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        try:
            if p.environ().get("KAFKA_CHAOS_RUN", "").startswith(base):
                leftovers.append((p.info["pid"], p.info["cmdline"]))
        except psutil.Error:
            pass
    assert not leftovers, f"processes left running by tests: {leftovers}"
