import psutil
import pytest


@pytest.fixture(scope="session", autouse=True)
def no_jvm_in_the_unit_tier():
    """tests/unit starts no JVM (Spark) and no broker: that is what makes it the fast tier."""
    yield
    import sys

    pyspark = sys.modules.get("pyspark")
    assert pyspark is None or pyspark.SparkContext._gateway is None, "the unit tier started Spark's JVM"
    java = [p.cmdline() for p in psutil.Process().children(recursive=True) if "java" in p.name()]
    assert not java, f"the unit tier started a JVM: {java}"
