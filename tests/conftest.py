import time

import pytest

# Each folder is a tier (README, "Tests"): unit needs no JVM and no broker; spark starts a local
# Spark; integration starts its own brokers and proxy; kafka needs KAFKA_HOME; compose needs Docker.
TIERS = ("unit", "spark", "integration", "kafka", "compose")


# CI's tiers by the -m expression that selects them (README, "Tests"): each prints its wall time when it ends.
TIER_NAMES = {"not slow and not compose and not nightly": "default suite", "slow and not nightly": "real Kafka",
              "compose and not nightly": "Compose", "nightly and not compose": "nightly",
              "nightly and compose": "nightly Compose"}


def pytest_sessionstart(session):
    session.config.stash[_STARTED] = time.monotonic()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """One line naming the tier, its tests' outcomes and its wall time (xdist: the controller's, once)."""
    if hasattr(config, "workerinput") or _STARTED not in config.stash:
        return
    expr = config.getoption("markexpr") or ""
    counts = ", ".join(f"{len(terminalreporter.stats[k])} {k}" for k in ("passed", "failed", "error", "skipped")
                       if terminalreporter.stats.get(k))
    seconds = time.monotonic() - config.stash[_STARTED]
    terminalreporter.write_line(f"tier {TIER_NAMES.get(expr, expr or 'all')!r} (-m {expr!r}): {counts or 'nothing'} "
                                f"in {seconds / 60:.1f} min (exit {int(exitstatus)})", bold=True)


_STARTED = pytest.StashKey[float]()


def pytest_collection_modifyitems(config, items):
    for item in items:
        parts = item.path.parts
        for tier in TIERS:
            if tier in parts[parts.index("tests") + 1:parts.index("tests") + 2]:
                item.add_marker(getattr(pytest.mark, tier))


@pytest.fixture(scope="session")
def spark():
    from harness.engine.session import spark_session, stop_session

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
