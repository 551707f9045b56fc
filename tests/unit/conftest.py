import signal
import sys

import psutil
import pytest


def _jvm() -> bool:
    pyspark = sys.modules.get("pyspark")
    return bool(pyspark and pyspark.SparkContext._gateway is not None) or any(
        "java" in p.name() for p in psutil.Process().children(recursive=True))


@pytest.fixture(scope="module", autouse=True)
def no_jvm_in_the_unit_tier(request):
    """tests/unit starts no JVM (Spark) and no broker: that is what makes it the fast tier."""
    before = _jvm()
    yield
    assert before or not _jvm(), f"{request.module.__name__} started a JVM"


@pytest.fixture
def signal_handlers_restored():
    """A command run in-process (CliRunner) installs the harness's Ctrl-C policy; keep pytest's own for the
    rest of the session. Modules that run commands use it for every test (pytestmark)."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    for s, handler in saved.items():
        signal.signal(s, handler)
