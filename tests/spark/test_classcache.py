"""Spark's JVM with the class cache, for real: a damaged archive does not stop Spark (it is deleted and
written again), and the next JVM starts from the new archive. In child processes with their own cache
folder, so the tests' shared Spark session is not involved."""

import os
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent("""
    import sys

    import psutil
    from harness.engine.classcache import ClassCache
    from harness.engine.session import spark_session, stop_session

    archive = ClassCache.for_this_machine().path
    if sys.argv[1] != "-":
        archive.write_bytes(open(sys.argv[1], "rb").read())  # a damaged archive
    spark = spark_session("local[1]")
    options = [a for p in psutil.Process().children(recursive=True) if p.name() == "java"
               for a in p.cmdline() if "Archive" in a or "DumpInfo" in a]
    print("options", *options, flush=True)
    print("count", spark.range(5).count(), flush=True)
    stop_session(spark)
    print("archive", archive.stat().st_size if archive.exists() else 0, flush=True)
""")


def spark_with_cache(tmp_path, planted: str) -> tuple[dict, str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("KAFKA_CHAOS_CLASS_CACHE", None)
    r = subprocess.run([sys.executable, "-c", CHILD, planted], capture_output=True, text=True, timeout=240,
                       env=env, cwd=tmp_path)
    said = {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in r.stdout.splitlines()
            if line.split(" ", 1)[0] in ("options", "count", "archive")}
    assert r.returncode == 0 and len(said) == 3, r.stdout + r.stderr[-3000:]
    return said, r.stderr


@pytest.mark.nightly  # a minute: three JVMs
def test_a_damaged_archive_is_replaced_and_the_next_jvm_uses_the_new_one(tmp_path):
    (tmp_path / "planted").write_bytes(b"\x00" * 4096)
    first, err = spark_with_cache(tmp_path, str(tmp_path / "planted"))
    assert "did not start with its class cache" in err and "Xshare" not in first["options"]
    assert "-XX:+RecordDynamicDumpInfo" in first["options"] and first["count"] == "5"
    assert int(first["archive"]) > 10_000_000  # a real archive, not the planted 4 KB
    second, _ = spark_with_cache(tmp_path, "-")
    assert "-Xshare:on" in second["options"] and "-XX:SharedArchiveFile=" in second["options"]
    assert second["count"] == "5" and second["archive"] == first["archive"]  # read, not written again
    assert not list(tmp_path.glob("hs_err*")), "the JVM's crash report belongs in the cache folder"
