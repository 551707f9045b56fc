"""A class-data-sharing archive for Spark's driver JVM: each Spark start after the first is faster.

This is Java's own AppCDS, not a harness invention; the harness only decides where the archive
lives and when it is written. The first Spark start on a machine runs with
-XX:+RecordDynamicDumpInfo; when its session is stopped after a run that completed, the JVM writes
the archive on request (what `jcmd <pid> VM.cds dynamic_dump` does) and it is moved into the user's
cache folder in one rename. Later starts map it with -XX:SharedArchiveFile. Writing on request, not
at the JVM's exit (-XX:ArchiveClassesAtExit), keeps an interrupted or killed run from leaving a JVM
busy writing an archive after the harness is gone.

Measured on 2 cores (pyspark 4, Java 17): SparkSession start 4.2 -> 2.4 s and the first job
2.7 -> 1.8 s, so every run, analyze and series saves ~3 s. The first start pays ~15 s once, and the
file takes ~130-180 MB; the three archives used last are kept.

The file is named after the java binary (path, size, time) and Spark's jars, so a new JDK or a new
pyspark writes a new one. It is read with -Xshare:on, so a JVM that cannot use it (damaged, or not
its own) fails at start instead of ignoring it: spark_session then deletes it and starts without it,
and that start writes a new one. It is a cache: it may be deleted at any time;
KAFKA_CHAOS_CLASS_CACHE=off turns it off.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from ..cachedir import cache_folder

OFF = "KAFKA_CHAOS_CLASS_CACHE"
KEEP = 3  # archives kept (~130-180 MB each)
QUIET = "-Xlog:cds=off,cds+dynamic=off"  # CDS lists every class it skips; none of it is for the user


def _java() -> Path | None:
    """The java that Spark's launcher runs: $JAVA_HOME/bin/java, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(os.path.realpath(found)) if found and os.path.exists(found) else None


def _jars() -> Path:
    import pyspark

    home = os.environ.get("SPARK_HOME")
    return Path(home) / "jars" if home else Path(pyspark.__file__).parent / "jars"


class ClassCache:
    """The archive for this java and these jars. java_options() says how the next JVM uses it: reads it,
    or records what it loads so that write() can have it written."""

    def __init__(self, folder: Path, java: Path, jars: Path):
        st = java.stat()
        jar_names = sorted(p.name for p in jars.glob("*.jar")) if jars.is_dir() else []
        key = hashlib.sha256(repr((str(java), st.st_size, st.st_mtime_ns, str(jars), jar_names)).encode())
        self.path = folder / f"spark-{key.hexdigest()[:16]}.jsa"
        self.writing = False  # the JVM started records what write() needs

    @classmethod
    def for_this_machine(cls) -> "ClassCache | None":
        """None when turned off, with no java found, or when the cache folder cannot be written."""
        if os.environ.get(OFF, "").lower() in ("off", "0", "false", "no"):
            return None
        java = _java()
        if java is None:
            return None
        folder = cache_folder()
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            return None
        if not os.access(folder, os.W_OK):
            return None
        cache = cls(folder, java, _jars())
        cache._remove_orphans()
        return cache

    def java_options(self) -> str:
        if self.path.exists():  # a JVM that crashes on it writes its crash report here, not in the user's folder
            os.utime(self.path)  # used now: pruning keeps the archives used last
            crash = self.path.parent / "jvm-crash-%p.log"
            return f"-Xshare:on -XX:SharedArchiveFile={self.path} -XX:ErrorFile={crash} {QUIET}"
        self.writing = True
        return f"-XX:+RecordDynamicDumpInfo {QUIET}"

    def discard(self) -> None:
        """The JVM failed to start with the archive (damaged): delete it; the next start writes it again."""
        self.path.unlink(missing_ok=True)

    def write(self, dump: Callable[[Path], None]) -> None:
        """Have the running JVM write the archive (dump(path)), then keep it in one rename: a reader never
        sees half a file. A failed dump keeps nothing (the next start tries again)."""
        if not self.writing:
            return
        self.writing = False
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            dump(tmp)
            if tmp.exists() and tmp.stat().st_size > 0:
                os.replace(tmp, self.path)
                self._prune()
        except Exception:  # the cache only saves time; it never fails a run
            pass
        finally:
            tmp.unlink(missing_ok=True)

    def _prune(self) -> None:
        """Keep the KEEP archives used last: each virtualenv (its own jars folder) and JDK has its own, and
        a CI machine that makes a new one per clean clone would otherwise fill its disk."""
        archives = sorted(self.path.parent.glob("spark-*.jsa"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in archives[KEEP:]:
            old.unlink(missing_ok=True)

    def _remove_orphans(self) -> None:
        """Half-written archives of processes that are gone (killed while writing)."""
        for tmp in self.path.parent.glob(".spark-*.jsa.*.tmp"):
            try:
                os.kill(int(tmp.name.rsplit(".", 2)[-2]), 0)
            except ProcessLookupError:
                tmp.unlink(missing_ok=True)
            except (ValueError, OSError):
                pass
