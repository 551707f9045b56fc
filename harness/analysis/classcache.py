"""A class-data-sharing archive for Spark's driver JVM: each Spark start after the first is faster.

This is Java's own AppCDS, not a harness invention; the harness only decides where the archive
lives and when it is written. The first Spark start on a machine runs with
-XX:ArchiveClassesAtExit, and when that JVM exits (stop_session waits for it) the archive is moved
into the user's cache folder in one rename. Later starts map it with -XX:SharedArchiveFile.

Measured on 2 cores (pyspark 4, Java 17): SparkSession start 4.2 -> 2.4 s and the first job
2.7 -> 1.8 s, so every run, analyze and series saves ~3 s. Writing it costs the first start
~10 s once, and the file takes ~150 MB.

The file is named after the java binary (path, size, time) and Spark's jars, so a new JDK or a new
pyspark writes a new one; a JVM that finds it does not match ignores it. A damaged archive makes
the JVM fail at start: spark_session then deletes it and starts without it. It is a cache: it may
be deleted at any time. KAFKA_CHAOS_CLASS_CACHE=off turns it off.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

OFF = "KAFKA_CHAOS_CLASS_CACHE"
QUIET = "-Xlog:cds=off,cds+dynamic=off"  # CDS lists every class it skips; none of it is for the user
WRITE_TIMEOUT = 120.0  # seconds the JVM may take to exit while writing the archive


def _java() -> Path | None:
    """The java that Spark's launcher runs: $JAVA_HOME/bin/java, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(os.path.realpath(found)) if found and os.path.exists(found) else None


def _jars() -> Path:
    import pyspark

    home = os.environ.get("SPARK_HOME")
    return Path(home) / "jars" if home else Path(pyspark.__file__).parent / "jars"


def cache_folder() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "kafka-chaos"


class ClassCache:
    """The archive for this java and these jars. java_options() says how the next JVM uses it: reads
    it, or writes it at exit (then finish() must run once the session is stopped)."""

    def __init__(self, folder: Path, java: Path, jars: Path):
        st = java.stat()
        jar_names = sorted(p.name for p in jars.glob("*.jar")) if jars.is_dir() else []
        key = hashlib.sha256(repr((str(java), st.st_size, st.st_mtime_ns, str(jars), jar_names)).encode())
        self.path = folder / f"spark-{key.hexdigest()[:16]}.jsa"
        self.writing: Path | None = None  # the archive the JVM writes at exit, until finish()

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
            crash = self.path.parent / "jvm-crash-%p.log"
            return f"-Xshare:on -XX:SharedArchiveFile={self.path} -XX:ErrorFile={crash} {QUIET}"
        self.writing = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        return f"-XX:ArchiveClassesAtExit={self.writing} {QUIET}"

    def discard(self) -> None:
        """The JVM failed to start with the archive (damaged): delete it; the next start writes it again."""
        self.path.unlink(missing_ok=True)

    def finish(self, jvm: subprocess.Popen | None) -> None:
        """After the session is stopped: let the JVM exit (it writes the archive as it does) and keep
        the archive if it exited cleanly, in one rename (a reader never sees half a file)."""
        if self.writing is None:
            return
        tmp, self.writing = self.writing, None
        try:
            if jvm is not None and jvm.poll() is None:
                if jvm.stdin is not None:
                    jvm.stdin.close()  # Spark's gateway exits when its stdin ends
                try:
                    jvm.wait(WRITE_TIMEOUT)
                except BaseException:  # too slow, or the user insists on quitting: no JVM outlives us
                    jvm.kill()
                    jvm.wait()
                    if not isinstance(sys.exc_info()[1], subprocess.TimeoutExpired):
                        raise
            if jvm is not None and jvm.returncode == 0 and tmp.exists() and tmp.stat().st_size > 0:
                os.replace(tmp, self.path)
        finally:
            tmp.unlink(missing_ok=True)

    def _remove_orphans(self) -> None:
        """Half-written archives of processes that are gone (killed while writing)."""
        for tmp in self.path.parent.glob(".spark-*.jsa.*.tmp"):
            try:
                os.kill(int(tmp.name.rsplit(".", 2)[-2]), 0)
            except ProcessLookupError:
                tmp.unlink(missing_ok=True)
            except (ValueError, OSError):
                pass
