"""The Spark session's lifetime: started (in the background, so a run overlaps it with the cluster's start),
shared by a series, stopped, and its JVM ended with it.

    spark = spark_session()
    ...
    stop_session(spark)

A start registers the final read's data source (readback.py) and warms the Python workers up; a stop keeps
the JVM's class archive (classcache.py) when this start was the one to write it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from .classcache import ClassCache


def spark_session(master: str | None = None, log: Path | None = None):
    """A local Spark session (master local[*] unless given), its Python workers started. Stop it with
    stop_session(), which also keeps the JVM's class cache (classcache.py) when this start wrote it.
    log: the file that takes the JVM's own output (a JDK's `Using incubator modules` warning, log4j's errors,
    a crash's stack), which would otherwise reach the user's terminal; None leaves it there (a notebook)."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    global _writer, _launcher
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # loopback only, and no hostname warning
    log4j = Path(__file__).with_name("log4j2.properties")
    java_options = f"-Dlog4j2.configurationFile={log4j.as_uri()}"
    # Only a JVM started here takes the options (not under spark-submit, nor a JVM already running).
    launching = SparkContext._gateway is None and "PYSPARK_GATEWAY_PORT" not in os.environ
    cache = ClassCache.for_this_machine() if launching else None
    if cache is not None:
        java_options += " " + cache.java_options()
    cores = os.cpu_count() or 2
    builder = (SparkSession.builder.appName("kafka-chaos-analysis")
               .config("spark.sql.shuffle.partitions", str(max(2, cores * 2)))
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.extraJavaOptions", java_options)
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MILLIS")
               .config("spark.driver.memory", os.environ.get("KAFKA_CHAOS_DRIVER_MEMORY", "2g"))
               .config("spark.python.worker.reuse", "true")
               .config("spark.sql.execution.arrow.maxRecordsPerBatch", "100000"))
    if master:
        builder = builder.master(master)
    elif "spark.master" not in SparkSession.builder._options and not os.environ.get("MASTER"):
        builder = builder.master("local[*]")
    try:
        if launching and log is not None:
            SparkContext._ensure_initialized(gateway=_launch(builder, log))
        spark = builder.getOrCreate()
    except Exception:
        if cache is None or cache.writing:
            raise
        cache.discard()  # a damaged archive stops the JVM at start: start again without it
        sys.stderr.write(f"Spark did not start with its class cache {cache.path}: deleted it, starting without\n")
        return spark_session(master, log)
    _writer = (spark, cache) if cache is not None and cache.writing else None
    if launching:
        _launcher = spark
    spark.sparkContext.setLogLevel("ERROR")
    from .readback import KafkaLogSource
    from .warmup import warm_up

    spark.dataSource.register(KafkaLogSource)
    warm_up(spark, cores)
    return spark


def _launch(builder, log: Path):
    """The JVM's gateway, as getOrCreate would launch it (spark-submit with the builder's settings), with the
    JVM's stdout and stderr appended to `log`."""
    from pyspark import SparkConf
    from pyspark.java_gateway import launch_gateway

    conf = SparkConf()
    for key, value in builder._options.items():
        conf.set(key, value)
    with open(log, "ab") as out:  # the JVM holds its own copy of the descriptor
        return launch_gateway(conf, popen_kwargs={"stdout": out, "stderr": out})


_writer: tuple | None = None  # (session, ClassCache) when that session's JVM is to write the archive
_launcher = None  # the session whose start launched the running JVM: its stop ends the JVM


def stop_session(spark, keep_classes: bool = True) -> None:
    """Stop the session. If its JVM was started to write the class cache and `keep_classes` (the work
    completed: not on an interrupt), it writes it now (~10 s, once per machine)."""
    global _writer, _launcher
    from pyspark import SparkContext

    spark.stop()
    if _writer is not None and _writer[0] is spark:
        cache, _writer = _writer[1], None
        if keep_classes:
            cache.write(lambda path: _dump_classes(SparkContext._gateway, path))
    if _launcher is spark:  # not a session that found a JVM running (a test's shared one, spark-submit's)
        _launcher = None
        _end_jvm()


def _end_jvm(wait: float = 30.0) -> None:
    """End the JVM this process launched, and wait for it: pyspark leaves it running until the Python process
    exits (it ends on its stdin's end of file, a moment later), so it would outlive the harness, and with its
    output on a log file nothing waits for it. The next session launches a new one."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if proc is None:  # spark-submit's
        return
    try:
        gateway.shutdown()
    except Exception:  # py4j: the JVM is gone already
        pass
    proc.stdin.close()
    try:
        proc.wait(wait)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    SparkContext._gateway = SparkContext._jvm = None


def _dump_classes(gateway, path: Path) -> None:
    """What `jcmd <pid> VM.cds dynamic_dump <path>` does, through the JVM's own DiagnosticCommand MBean (a
    JRE has no jcmd). Called by reflection on the public interface: py4j looks methods up on the
    server's class, which its module does not export."""
    jvm, cls = gateway.jvm, gateway.jvm.java.lang.Class

    def array(kind, items):
        a = gateway.new_array(kind, len(items))
        for i, item in enumerate(items):
            a[i] = item
        return a

    invoke = cls.forName("javax.management.MBeanServerConnection").getMethod("invoke", array(cls, [
        cls.forName("javax.management.ObjectName"), cls.forName("java.lang.String"),
        cls.forName("[Ljava.lang.Object;"), cls.forName("[Ljava.lang.String;")]))
    command = array(jvm.java.lang.String, ["dynamic_dump", str(path)])
    system = jvm.java.lang.System
    stdout = system.out
    system.setOut(jvm.java.io.PrintStream(jvm.java.io.OutputStream.nullOutputStream()))  # its "Dynamic dump to file"
    try:
        invoke.invoke(jvm.java.lang.management.ManagementFactory.getPlatformMBeanServer(), array(jvm.java.lang.Object, [
            jvm.javax.management.ObjectName("com.sun.management:type=DiagnosticCommand"), "vmCds",
            array(jvm.java.lang.Object, [command]), array(jvm.java.lang.String, ["[Ljava.lang.String;"])]))
    finally:
        system.setOut(stdout)


def import_spark() -> None:
    """Import pyspark and the modules of ours that import it, on the calling thread. Two threads importing
    pyspark.sql at once (the starter's thread in spark_session, the run's in the final read's module) can meet
    a partially initialised module: `ImportError: cannot import name 'SQLContext' from partially initialized
    module 'pyspark.sql'` (shrink's first try, 4 of 10 calls on a busy machine). Once imported, later
    imports are lookups."""
    import pyspark.sql  # noqa: F401

    from . import readback, warmup  # noqa: F401  (pyspark.sql.datasource)


NICE = 19  # added to the nice value of the Spark JVM's start (SparkStarter)


def _lowly(start, *args):
    """start(*args) on this thread at a lower CPU priority, which the JVM it launches and the Python workers
    that JVM forks inherit (a nice value belongs to a thread on Linux, and a child takes its parent thread's),
    then their priority set back. A run waits for Spark only at its first final read, so the start (JVM,
    warm-up) overlaps the first variant's workload: on 2 cores, at equal priority, that variant's faults came
    late by 20 ms on average and 94 ms at most (against 3-5 ms); niced, by 4-5 ms and 11 ms. Kept niced after
    the start, the final reads of a series ran 60 % longer while anything else ran on the machine. A user
    who may not lower a nice value (not root) keeps a niced Spark: slower only under contention."""
    me = threading.get_native_id()
    usual = os.getpriority(os.PRIO_PROCESS, me)
    try:
        os.nice(NICE)
    except OSError:  # not allowed here: started at the usual priority
        pass
    try:
        return start(*args)
    finally:
        from pyspark import SparkContext

        proc = getattr(SparkContext._gateway, "proc", None)
        for pid in ([proc.pid] if proc is not None else []):
            _set_priority([pid, *_descendants(pid)], usual)
        _set_priority([me], usual, threads=False)


def _descendants(pid: int) -> list[int]:
    """Every process below pid (its children, theirs, ...), from /proc. psutil does this too, but it is only a
    test dependency: the harness itself needs none (pyproject.toml)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])  # the name in (...) may hold spaces
            except (OSError, ValueError, IndexError):
                continue  # gone meanwhile
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _set_priority(pids: list[int], value: int, threads: bool = True) -> None:
    """Each process's threads (or the thread ids themselves) to nice value `value`, where allowed."""
    for pid in pids:
        try:
            ids = [int(t) for t in os.listdir(f"/proc/{pid}/task")] if threads else [pid]
        except OSError:  # gone meanwhile
            continue
        for tid in ids:
            try:
                os.setpriority(os.PRIO_PROCESS, tid, value)
            except OSError:  # gone, or not allowed (lowering a nice value needs privilege)
                pass


class SparkStarter:
    """Starts Spark on a thread (a JVM takes seconds), so the run overlaps it with the cluster's start."""

    def __init__(self, master: str | None = None, log: Path | None = None):
        import concurrent.futures

        import_spark()
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="spark-start")
        self._future = self._pool.submit(_lowly, spark_session, master, log)

    def get(self):
        return self._future.result()

    def stop(self, keep_classes: bool = True) -> None:
        """Stop the session, waiting for it if it is still starting: no JVM outlives the run."""
        if not self._future.cancel():
            try:
                stop_session(self._future.result(), keep_classes)
            except Exception:  # it failed to start, or the JVM is gone already (Ctrl-C reached it too)
                pass
        self._pool.shutdown(wait=False)


class SharedSpark:
    """One Spark session for many runs (a --repeat series, shrink's tries): a JVM start (seconds) paid once.
    Started at once in the background, like SparkStarter; a run that did not complete discards it (the next
    run starts a fresh one), so a session a failure may have left broken is never reused."""

    def __init__(self, master: str | None = None, log: Path | None = None):
        self.master, self.log = master, log
        self._starter: SparkStarter | None = SparkStarter(master, log)

    def get(self):
        if self._starter is None:
            self._starter = SparkStarter(self.master, self.log)
        return self._starter.get()

    def discard(self, keep_classes: bool = False) -> None:
        if self._starter is not None:
            self._starter.stop(keep_classes)
            self._starter = None

    def stop(self, keep_classes: bool = True) -> None:
        self.discard(keep_classes)
