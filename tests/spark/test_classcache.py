"""Spark's JVM with the class cache, for real: a damaged archive does not stop Spark (it is deleted and
written again), and the next JVM starts from the new archive. In a child process with its own cache
folder, so the tests' shared Spark session is not involved."""

import os
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent("""
    import sys

    import psutil
    from harness.analysis.classcache import ClassCache
    from harness.analysis.spark import spark_session, stop_session

    def java_options():
        return [a for p in psutil.Process().children(recursive=True) if p.name() == "java"
                for a in p.cmdline() if "Archive" in a]

    archive = ClassCache.for_this_machine().path
    archive.write_bytes(open(sys.argv[1], "rb").read())  # a truncated archive
    spark = spark_session("local[1]")
    print("first", java_options(), spark.range(5).count(), flush=True)
    stop_session(spark)
    print("written", archive.stat().st_size, flush=True)
    spark = spark_session("local[1]")
    print("second", java_options(), spark.range(7).count(), flush=True)
    stop_session(spark)
""")


def test_a_damaged_archive_is_replaced_and_the_next_jvm_uses_the_new_one(tmp_path):
    (tmp_path / "planted").write_bytes(b"\x00" * 4096)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("KAFKA_CHAOS_CLASS_CACHE", None)
    r = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "planted")], capture_output=True, text=True, timeout=240, env=env,
                       cwd=tmp_path)
    lines = {line.split(" ", 1)[0]: line for line in r.stdout.splitlines() if line.split(" ", 1)[0] in
             ("first", "written", "second")}
    assert r.returncode == 0 and len(lines) == 3, r.stdout + r.stderr[-3000:]
    assert "ArchiveClassesAtExit" in lines["first"] and lines["first"].endswith(" 5")
    assert int(lines["written"].split()[1]) > 10_000_000  # a real archive, not the planted 4 KB
    assert "SharedArchiveFile" in lines["second"] and lines["second"].endswith(" 7")
    assert "did not start with its class cache" in r.stderr
    assert not list(tmp_path.glob("hs_err*")), "the JVM's crash report belongs in the cache folder"
