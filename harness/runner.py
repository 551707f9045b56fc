"""One experiment run: cluster up, each variant under the same fault schedule, final read, analysis, report."""

from __future__ import annotations

import concurrent.futures
import logging
import os
import signal
import sys
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

import yaml
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from . import summary as summary_mod
from .cluster import Cluster, InfraError, make_cluster
from .faults.nemesis import FaultJournal, Nemesis
from .faults.schedule import PlannedFault, plan
from .report.render import render, render_index
from .spec import LOSES_MEMORY_LOG, ExperimentSpec
from .workload.producer import DeliveryLog, produce
from .workload.topic import create_topic

RUN_ENV = "KAFKA_CHAOS_RUN"


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived; `code` is the exit code to use (130 or 143)."""

    def __init__(self, code: int):
        super().__init__(f"interrupted (exit {code})")
        self.code = code


_signalled: list[int] = []  # exit code of the first SIGINT/SIGTERM received, if any


def handle_signals() -> None:
    """The first SIGINT/SIGTERM raises Interrupted; the second only warns, so clean-up (healing faults,
    stopping brokers or containers, writing the summary) is not cut short; the third quits at once."""

    def handler(signum, frame):
        _signalled.append(130 if signum == signal.SIGINT else 143)
        if len(_signalled) == 1:
            raise Interrupted(_signalled[0])
        if len(_signalled) == 2:
            sys.stderr.write("\nstill cleaning up (stopping what the run started, writing summary.json); "
                             "interrupt again to quit at once\n")
            return
        os._exit(_signalled[0])

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)


def interrupt_code(e: BaseException) -> int | None:
    """The exit code if `e` stems from a signal, else None.

    A signal that lands while C code runs a Python callback (librdkafka, dict views) can surface
    wrapped, e.g. as SystemError caused by Interrupted, so the recorded signal wins over the type.
    """
    if _signalled:
        return _signalled[0]
    while e is not None:
        if isinstance(e, Interrupted):
            return e.code
        if isinstance(e, KeyboardInterrupt):
            return 130
        e = e.__cause__ or e.__context__
    return None


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def new_run_dir(out_dir: Path, experiment: str) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    run_dir = out_dir / f"{stamp}-{experiment}-{uuid.uuid4().hex[:6]}"
    run_dir.mkdir(parents=True)
    return run_dir


def _client_logger(path: Path) -> logging.Logger:
    """librdkafka's log lines go to a file in the run folder, not to the terminal."""
    logger = logging.getLogger(f"kafka-chaos.{path}")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    logger.addHandler(handler)
    return logger


def warnings_for(spec: ExperimentSpec, schedule: list[PlannedFault]) -> list[str]:
    """What the user must know to read the numbers right, said before the run starts."""
    out = []
    kinds = {f.kind for f in schedule}
    if spec.cluster.broker == "tansu" and kinds & set(LOSES_MEMORY_LOG):
        out.append(
            f"{', '.join(sorted(kinds & set(LOSES_MEMORY_LOG)))} on Tansu: its memory storage lives in the broker "
            "process, so a killed or restarted broker comes back empty. Every record written before is counted "
            "as lost (that is the truth about this broker), and an idempotent producer then gets "
            "UnknownProducerId and times out until it is recreated. Use Apache Kafka to test failover.")
    return out


class Watchdog:
    """Checks every half second that the cluster's processes are alive; stops the workload if one died."""

    def __init__(self, cluster: Cluster, stop: threading.Event):
        self.cluster, self.workload_stop = cluster, stop
        self.error = ""
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="watchdog", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(0.5):
            try:
                self.cluster.check_alive()
            except InfraError as e:
                self.error = str(e)
                self.workload_stop.set()
                return

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


class Run:
    def __init__(self, spec: ExperimentSpec, out_dir: Path, seed: int, console: Console,
                 spark_master: str | None = None, schedule: list[PlannedFault] | None = None):
        self.spec = spec
        self.seed = seed
        self.console = console
        self.spark_master = spark_master
        self.run_dir = new_run_dir(out_dir, spec.name)
        self.run_id = self.run_dir.name
        self.schedule: list[PlannedFault] = schedule if schedule is not None else plan(spec, seed)
        self.warnings = warnings_for(spec, self.schedule)
        self.metrics: dict[str, dict] = {}
        self.produced: dict[str, dict] = {}
        self.stop = threading.Event()
        self.started_at = _now()
        self.cluster: Cluster | None = None

    def execute(self) -> dict:
        """Run everything; always leaves a summary.json (status complete, interrupted or error)."""
        (self.run_dir / "logs").mkdir()
        # Inherited by every process the run starts (brokers, proxy, Spark), so they can be found by it.
        os.environ[RUN_ENV] = str(self.run_dir.resolve())
        spec_doc = {**self.spec.public_dict(), "seed": self.seed}
        (self.run_dir / "spec.yaml").write_text(yaml.safe_dump(spec_doc, sort_keys=False))
        status, reason = "complete", ""
        spark = spark_future = None
        pool = concurrent.futures.ThreadPoolExecutor(1)
        try:
            spark_future = pool.submit(self._start_spark)  # overlaps the JVM start with cluster start-up
            self.cluster = make_cluster(self.spec.cluster, self.run_dir)
            self.cluster.up()
            spark = spark_future.result()
            for variant in self.spec.variants:
                self._run_variant(spark, variant)
            self._analyze(spark)
        except BaseException as e:
            code = interrupt_code(e)
            if code is not None:
                status, reason = "interrupted", "the run was interrupted before it finished"
                raise Interrupted(code) from e
            status, reason = "error", str(e) or type(e).__name__
            raise
        finally:
            self.stop.set()
            if self.cluster is not None:
                self.cluster.down()
            if spark is None and spark_future is not None and spark_future.cancel() is False:
                try:  # a JVM still starting must not outlive the run
                    spark = spark_future.result()
                except Exception:
                    spark = None
            if spark is not None:
                try:
                    spark.stop()
                except Exception:  # the JVM may already be gone (e.g. Ctrl-C reached it too)
                    pass
            pool.shutdown(wait=False)
            self.summary = self._write_summary(status, reason)
        return self.summary

    def _start_spark(self):
        from .analysis.job import spark_session

        return spark_session(self.spark_master)

    def _run_variant(self, spark, variant) -> None:
        from .analysis.job import save_log

        spec, cluster = self.spec, self.cluster
        vdir = self.run_dir / variant.name
        vdir.mkdir()
        topic = f"kc-{variant.name}-{self.run_id[-6:]}"
        create_topic(cluster.client, topic, spec.topic.partitions, spec.topic.replication_factor,
                     config=spec.topic.config)
        nemesis = Nemesis(cluster, self.schedule, variant.name, FaultJournal(self.run_dir / "faults.jsonl"), topic)
        with self._progress() as progress:
            task = progress.add_task(f"{variant.name}: producing", total=spec.workload.messages)
            nemesis.start()
            watchdog = Watchdog(cluster, self.stop)
            log = DeliveryLog(vdir / "acks.parquet")
            t0 = time.monotonic()
            try:
                produce(
                    cluster.client, topic, spec.topic.partitions, spec.workload.messages,
                    spec.producer_config(variant), log, rate=spec.workload.rate,
                    flush_timeout=spec.workload.flush_timeout, stop=self.stop,
                    on_progress=lambda n: progress.update(task, completed=n),
                    logger=_client_logger(self.run_dir / "logs" / f"producer-{variant.name}.log"),
                    before_flush=nemesis.stop,
                )
            finally:  # whatever happened, keep what was recorded
                watchdog.stop()
                nemesis.stop()
                self.warnings.extend(nemesis.warnings)  # faults applied late or held short
                self.produced[variant.name] = {"sent": log.sent, **log.counts,
                                               "produce_seconds": round(time.monotonic() - t0, 2)}
            if watchdog.error:
                raise InfraError(f"{variant.name}: {watchdog.error}")
            if not summary_mod.accounting_holds(self.produced[variant.name]):
                raise InfraError(f"{variant.name}: delivery accounting broken: {self.produced[variant.name]}")
            if nemesis.errors:
                raise InfraError(f"{variant.name}: faults could not be applied: {'; '.join(nemesis.errors[:3])}")
            cluster.check_alive()
            progress.update(task, description=f"{variant.name}: healing")
            cluster.settle(topic, spec.topic.partitions)
            progress.update(task, description=f"{variant.name}: reading back")
            save_log(spark, cluster.client, topic, spec.topic.partitions, vdir / "log.parquet")
            progress.update(task, description=f"{variant.name}: done")

    def _analyze(self, spark) -> None:
        from .analysis.job import analyze_variant

        with self.console.status("analysing with Spark"):
            for variant in self.spec.variants:
                self.metrics[variant.name] = analyze_variant(spark, self.run_dir / variant.name)

    def _progress(self) -> Progress:
        return Progress(TextColumn("{task.description:<34}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=self.console)

    def _write_summary(self, status: str, reason: str) -> dict:
        extra = {"seed": self.seed, "warnings": self.warnings, "cluster": self.cluster.description if self.cluster else "",
                 "started_at": self.started_at, "ended_at": _now(), "reason": reason,
                 "faults_planned": len(self.schedule)}
        # Variants that were produced but not analysed (interrupted) still show their delivery counts.
        variants = {name: {**produced, **self.metrics.get(name, {})} for name, produced in self.produced.items()}
        s = summary_mod.build(self.run_id, self.spec.name, status, variants, self.spec.expectations, extra)
        summary_mod.write(self.run_dir / "summary.json", s)
        render(self.run_dir)
        render_index(self.run_dir.parent)
        return s
