"""The Spark session's JVM: its output goes to the log it is given, and it ends with the session."""

import subprocess
import sys


def test_the_jvm_writes_to_its_log_and_ends_with_the_session(tmp_path):
    """In a fresh interpreter (no JVM of the test session's): nothing of the JVM's on stderr, and no child
    process left once the session stopped (pyspark alone leaves the JVM until the interpreter exits)."""
    log = tmp_path / "spark.log"
    probe = (
        "import psutil\n"
        "from pathlib import Path\n"
        "from harness.engine.session import spark_session, stop_session\n"
        f"s = spark_session('local[1]', Path({str(log)!r}))\n"
        "assert s.range(7).count() == 7\n"
        "java = [c for c in psutil.Process().children(recursive=True) if c.name() == 'java']\n"
        "stop_session(s, keep_classes=False)\n"
        "print(len(java), [c.pid for c in java if c.is_running() and c.status() != psutil.STATUS_ZOMBIE])\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[0] == "1 []", out.stdout  # one JVM while the session ran, none after
    assert "WARNING" not in out.stderr and log.exists(), out.stderr
