"""The JVM class cache's file handling, with stand-in JVMs (no Java started): where the archive lives, when
a JVM reads or writes it, and that only a cleanly finished archive is kept."""

import os
import subprocess
import sys

import pytest

from harness.engine import classcache
from harness.engine.classcache import ClassCache


@pytest.fixture
def java(tmp_path, monkeypatch):
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    binary = home / "bin" / "java"
    binary.write_text("#!/bin/sh\n")
    monkeypatch.setenv("JAVA_HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(classcache.OFF, raising=False)
    return binary


def dump_of(content: bytes | None):
    """A stand-in for the JVM's dynamic_dump: writes `content` to the path it is given (None: fails)."""

    def dump(path):
        if content is None:
            raise RuntimeError("VM.cds: dump failed")
        path.write_bytes(content)

    return dump


def test_first_jvm_records_then_writes_the_archive_and_the_next_reads_it(java, tmp_path):
    cache = ClassCache.for_this_machine()
    assert cache.path.parent == tmp_path / "cache" / "kafka-chaos"
    options = cache.java_options()
    assert "-XX:+RecordDynamicDumpInfo" in options and "SharedArchiveFile" not in options and cache.writing
    seen = []
    cache.write(lambda path: (seen.append(path), dump_of(b"x" * 1000)(path)))
    assert seen[0].parent == cache.path.parent and seen[0] != cache.path  # written beside it, then renamed
    assert cache.path.read_bytes() == b"x" * 1000 and not cache.writing
    assert [p.name for p in cache.path.parent.iterdir()] == [cache.path.name]  # no temporary file left

    again = ClassCache.for_this_machine()
    assert again.path == cache.path
    options = again.java_options()
    assert f"-Xshare:on -XX:SharedArchiveFile={cache.path}" in options and not again.writing
    again.write(dump_of(None))  # a reading JVM writes nothing
    assert cache.path.read_bytes() == b"x" * 1000


@pytest.mark.parametrize("content", [None, b""])
def test_a_failed_dump_keeps_nothing(java, content):
    cache = ClassCache.for_this_machine()
    cache.java_options()
    cache.write(dump_of(content))
    assert list(cache.path.parent.iterdir()) == []


def test_a_new_java_or_new_jars_use_another_archive(java, tmp_path, monkeypatch):
    first = ClassCache.for_this_machine().path
    os.utime(java, ns=(1, 1))  # the JDK was upgraded in place
    second = ClassCache.for_this_machine().path
    jars = tmp_path / "spark" / "jars"
    jars.mkdir(parents=True)
    (jars / "spark-core.jar").write_bytes(b"")
    monkeypatch.setenv("SPARK_HOME", str(tmp_path / "spark"))
    third = ClassCache.for_this_machine().path
    assert len({first, second, third}) == 3


def test_a_damaged_archive_is_discarded(java):
    cache = ClassCache.for_this_machine()
    cache.path.write_bytes(b"half")
    assert "SharedArchiveFile" in cache.java_options()
    cache.discard()
    assert not cache.path.exists() and "RecordDynamicDumpInfo" in cache.java_options()


def test_half_written_archives_of_dead_processes_are_removed(java):
    folder = ClassCache.for_this_machine().path.parent
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    orphan = folder / f".spark-0123.jsa.{dead.stdout.strip()}.tmp"
    alive = folder / f".spark-0123.jsa.{os.getpid()}.tmp"
    orphan.write_bytes(b"x")
    alive.write_bytes(b"x")
    ClassCache.for_this_machine()
    assert not orphan.exists() and alive.exists()


@pytest.mark.parametrize("setting", ["off", "0"])
def test_turned_off_or_no_java_or_no_writable_folder_means_no_cache(java, monkeypatch, tmp_path, setting):
    monkeypatch.setenv(classcache.OFF, setting)
    assert ClassCache.for_this_machine() is None
    monkeypatch.delenv(classcache.OFF)
    monkeypatch.setenv("XDG_CACHE_HOME", str(java))  # a file, not a folder: cannot be created
    assert ClassCache.for_this_machine() is None
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    assert ClassCache.for_this_machine() is None


def test_only_the_archives_used_last_are_kept(java):
    cache = ClassCache.for_this_machine()
    folder = cache.path.parent
    for age, name in enumerate(["spark-a.jsa", "spark-b.jsa", "spark-c.jsa", "spark-d.jsa"]):
        (folder / name).write_bytes(b"x")
        os.utime(folder / name, (1_000_000 - age * 1000, 1_000_000 - age * 1000))  # a is the newest
    cache.java_options()
    cache.write(dump_of(b"new"))
    assert sorted(p.name for p in folder.iterdir()) == sorted([cache.path.name, "spark-a.jsa", "spark-b.jsa"])
