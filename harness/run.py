"""One run of an experiment, along the data flow:

    plan -> cluster up -> for each variant, same plan: topic, workload + nemesis, heal, read back
         -> analysis -> verdict -> summary.json

Progress goes to a Listener (the CLI draws it with rich; tests pass none). The exit code follows
from summary.json's verdict; the caller renders the report afterwards, so a rendering failure can
never change a verdict. `reanalyze` is the same ending for a stored run folder.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path

from . import procs, signals, summary as summary_mod, verdict
from .analysis.metrics import accounting_holds
from .cluster import Cluster, make_cluster
from .cluster.apiversions import CONSUMER_GROUP_HEARTBEAT, supported_apis
from .cluster.kraft import property_text
from .cluster.topic import create_topic
from .cluster.watchdog import Watchdog
from .engine.folder import analyze_folder
from .engine.inputs import check_inputs
from .engine.readback import final_read, save_log
from .exits import InfraError, exit_for_exception
from .faults.registry import KINDS
from .nemesis import Nemesis
from .schedule import PlannedFault, plan
from .logfile import FileLogger
from .runfolder import RunFolder
from .spec import ExperimentSpec, masked
from .status import COMPLETE, ERROR, INCOMPLETE, INTERRUPTED
from .workload.clientenv import ensure
from .workload.consumers import ConsumerGroup
from .workload.foreignenv import ensure as ensure_foreign
from .workload.producers import Sending, make_producer
from .workload.readback import lso_stall
from .workload.transactional import TransactionsUnavailable


class Listener:
    """What a run tells whoever watches it. Every method may be left as is (no-op)."""

    def phase(self, variant: str, what: str) -> None:  # producing, healing, reading back, analysing, done
        pass

    def sent(self, variant: str, count: int, total: int) -> None:
        pass

    def warning(self, text: str) -> None:
        pass


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def stopped_by_another(result, stopping: bool, planned: int) -> str:
    """Why the producer's workload cannot be judged when it says it was interrupted though the run never asked
    it to stop (`stopping`) and no error ended it: its process was stopped by something else (a SIGTERM from
    outside). Its sends stop early without a cause, and a run judged on them would pass on a fraction of its
    plan (it did, 2026-11-30: 5,000 of 100,000 sends, verdict pass). "" when nothing is wrong."""
    if result is None or not result.interrupted or stopping or result.error:
        return ""
    return (f"the producer stopped after {result.sent:,} of {planned:,} sends though the run did not ask it to "
            "(its process was signalled from outside the run?); see its client log")


def warnings_for(spec: ExperimentSpec, schedule: list[PlannedFault]) -> list[str]:
    """What the user must know to read the numbers right, said before the run starts."""
    out = []
    losing = sorted({f.kind for f in schedule if KINDS[f.kind].loses_memory_log})
    if spec.cluster.broker == "tansu" and losing:
        out.append(
            f"{', '.join(losing)} on Tansu: its memory storage lives in the broker "
            "process, so a killed or restarted broker comes back empty. Every record written before is counted "
            "as lost (that is the truth about this broker), and an idempotent producer then gets "
            "UnknownProducerId and times out until it is recreated. Use Apache Kafka to test failover.")
    aborting = [v.name for v in spec.variants if spec.transactional(v) or (
        (c := spec.consumer_spec(v)) is not None and c.strategy == "transactional")]
    if spec.cluster.broker == "tansu" and aborting:
        out.append(
            f"{', '.join(aborting)}: transactions on Tansu, which answers every Fetch with an empty list of aborted "
            "transactions (0.6.0), so a read_committed consumer reads the records of aborted transactions: each "
            "counts as aborted_reads (that is the truth about this broker). Use Apache Kafka to test transactions.")
    return out


class Run:
    def __init__(self, spec: ExperimentSpec, folder: RunFolder, seed: int, listener: Listener | None = None,
                 spark_master: str | None = None, schedule: list[PlannedFault] | None = None, spark=None,
                 cluster=None, keep_data: bool = False):
        self.spec, self.folder, self.seed = spec, folder, seed
        self.keep_data = keep_data  # keep the brokers' log folders whatever the verdict (run --keep-data)
        self.listener = listener or Listener()
        self.spark_master = spark_master
        self.shared_spark = spark  # engine.session.SharedSpark of a series; None: the run starts and stops its own
        # A started cluster a series keeps (cluster/kept.py), or what returns it (KeptCluster.get: a start that
        # fails is then this run's error, in its summary); the run neither starts nor stops it. None: its own.
        self.shared_cluster = cluster
        self.schedule = schedule if schedule is not None else plan(spec, seed)
        self.warnings = warnings_for(spec, self.schedule)
        self.produced: dict[str, dict] = {}  # variant -> delivery counts, produce_seconds, topic
        self.analysed: dict[str, dict] = {}  # variant -> metrics
        self.stop = threading.Event()
        self.started_at = _now()
        self.cluster: Cluster | None = None
        self.initial_features: dict[str, int] = {}  # features some variant sets: the cluster's own levels
        self.initial_config: dict[str, None] = {}  # broker settings some variant sets
        self.summary: dict | None = None
        # Where the run's time went (summary.json `seconds`: each stage's wall seconds, a variant's stages
        # under "variant: stage"), so that a series' overhead can be taken apart (bench/repeat.py).
        self.seconds: dict[str, float] = {}
        self._stage: tuple[str, float] | None = None
        self._spark = None  # SparkStarter or SharedSpark: started in the background
        self._spark_session = None  # its session, once waited for (_session)

    def _phase(self, variant: str, what: str) -> None:
        """Tell the listener, and start timing the stage (what follows until the next one)."""
        self._time(None if what == "done" else f"{variant}: {what}")
        self.listener.phase(variant, what)

    def _time(self, stage: str | None) -> None:
        now = time.monotonic()
        if self._stage is not None:
            name, since = self._stage
            self.seconds[name] = round(self.seconds.get(name, 0.0) + now - since, 2)
        self._stage = (stage, now) if stage else None

    def execute(self) -> dict:
        """Run everything; always leaves summary.json (status complete, interrupted or error).
        Raises what ended the run early (Interrupted, InfraError, ...) after the summary is written."""
        status, reason, failure = COMPLETE, "", None
        spark = None
        try:
            self.folder.write_spec({**self.spec.public_dict(), "seed": self.seed})
            procs.tag_run(self.folder.path)  # every process started from here on carries the run's folder
            self._time("starting Spark")
            spark = self.shared_spark or _spark(self.spark_master, self.folder.spark_log)
            self._time("cluster up")
            if self.shared_cluster is None:
                self.cluster = make_cluster(self.spec.cluster, self.folder.path)
                self.cluster.keep_data = True  # its data stays until the run is judged (_broker_data)
                self.cluster.up()
            else:
                self.cluster = self.shared_cluster() if callable(self.shared_cluster) else self.shared_cluster
            self._spark = spark  # waited for where it is first needed (_session)
            self._time("cluster set-up")
            named = sorted({name for v in self.spec.variants for name in v.features})
            if named:  # what a variant that does not name a feature gets: the level the cluster started with
                levels = self.cluster.feature_levels()
                self.initial_features = {name: levels.get(name) for name in named}
            # a broker setting that a variant does not name goes back to the brokers' own (None: deleted)
            self.initial_config = {key: None for v in self.spec.variants for key in v.broker_config}
            for variant in self.spec.variants:
                self._run_variant(variant)
                signals.check()  # one a library swallowed (py4j) still ends the run
            names = [v.name for v in self.spec.variants]
            self._time("analysis")
            self.analysed = analyze_folder(self._session(), self.folder, names, partitions=self.spec.topic.partitions,
                                           on_start=self._analysing)
            signals.check()
        except BaseException as e:
            failure = e
            _, message = exit_for_exception(e)
            if type(e).__module__.startswith(("py4j", "pyspark")):  # its text is asked of the JVM, stopped below
                failure = InfraError(message)
            status = INTERRUPTED if signals.interrupt_code(e) is not None else ERROR
            reason = "the run was interrupted before it finished" if status == INTERRUPTED else message
            if status == ERROR and not isinstance(e, InfraError):
                self.folder.error_log.write_text("".join(traceback.format_exception(e)))
                reason += f" (traceback in {self.folder.error_log})"
        with signals.deferred():  # a Ctrl-C now is recorded, not allowed to cut the clean-up short
            self.stop.set()
            if self.cluster is not None and self.shared_cluster is None:
                self._time("cluster down")
                self.cluster.down()
            self._time("stopping Spark")
            if spark is not None and self.shared_spark is None:
                spark.stop(keep_classes=status == COMPLETE)
            elif spark is not None and status != COMPLETE:
                spark.discard()  # the series' next run starts a fresh session
            self._time(None)
            self.summary, disk_full = self._write_summary(status, reason)
        failure = failure or disk_full
        if failure is not None:
            raise failure
        return self.summary

    def _analysing(self, variants: list[str]) -> None:
        """The variants' analysis starts (one Spark job for all): one stage, each variant's phase."""
        self._time("analysing")
        for name in variants:
            self.listener.phase(name, "analysing")

    def _session(self):
        """The Spark session, waited for where it is first needed (the first final read): its start, in the
        background since the run began, overlaps the cluster's start and the first variant's workload. Its
        wait is the stage "starting Spark"; the stage it interrupted goes on after it."""
        if self._spark_session is None:
            interrupted = self._stage[0] if self._stage else None
            self._time("starting Spark")
            self._spark_session = self._spark.get()
            self._time(interrupted)
        return self._spark_session

    def _run_variant(self, variant) -> None:
        self.group = None  # the variant's consumer group, stopped whatever happens
        # librdkafka's log lines (producer, transactional producer) go to the run folder; the file is
        # closed with the variant, however it ends (a --repeat series runs many in one process).
        with FileLogger(self.folder.client_log(variant.name)) as logger:
            try:
                self._variant(variant, logger)
            finally:
                if self.group is not None:
                    try:
                        self.group.stop()
                    finally:
                        self.group.close()  # its sink connection, when the variant ended before finish()

    def _variant(self, variant, logger: FileLogger) -> None:
        spec, cluster, name = self.spec, self.cluster, variant.name
        self._time(f"{name}: setting up")
        self.folder.variant_dir(name).mkdir()
        topic = f"kc-{name}-{self.folder.run_id[-6:]}"
        self.produced[name] = {"topic": topic}
        if self.initial_features:
            features = {**self.initial_features, **variant.features}
            cluster.set_features(features)
            self.produced[name]["features"] = features
        if self.initial_config:
            cluster.set_broker_config({**self.initial_config,
                                       **{k: property_text(v) for k, v in variant.broker_config.items()}})
            self.produced[name]["broker_config"] = masked(variant.broker_config)  # summary.json: no secret
        create_topic(cluster.client, topic, spec.topic.partitions, spec.topic.replication_factor,
                     config=spec.topic.config)
        nemesis = Nemesis(cluster, self.schedule, name, self.folder.append_faults, topic)
        group = self.group = self._consumer_group(variant, topic)
        after = group is not None and group.spec.when == "after"  # the faults then hit the group, not the producer
        if group is not None and not after:
            group.start()
            group.serve(nemesis.workload)
        self._phase(name, "producing")
        watchdog = Watchdog(cluster, self.stop)
        sending = Sending(cluster.client, topic, spec.topic.partitions, spec.workload.messages,
                          spec.producer_config(variant), self.folder.acks_path(name), self.folder.client_log(name),
                          spec.workload.rate, spec.workload.flush_timeout, self.stop,
                          lambda n: self.listener.sent(name, n, spec.workload.messages), logger,
                          None if after else nemesis.workload)
        producer = make_producer(sending, spec.client_library(variant), spec.transactional(variant),
                                 self.folder.transactions_path(name), spec.workload.transaction_size,
                                 spec.workload.abort_ratio, self.seed)
        # Before the final flush the faults still due are applied (at most a grace past their planned times),
        # then every fault is healed, so the flush can complete.
        before_flush = None if after else (lambda: nemesis.finish(self.stop))
        t0 = time.monotonic()
        result = None
        try:
            producer.prepare()  # a child's client is built (a JVM started) before the fault timeline starts
            if not after:
                nemesis.start()
            result = producer.run(before_flush)
            if after and not self.stop.is_set():
                self._faults_on_group(group, nemesis, name)
        except TransactionsUnavailable as e:
            raise InfraError(f"{name}: the transactional producer could not start ({e})") from None
        finally:  # whatever happened, keep what was recorded
            watchdog.stop()
            nemesis.stop()
            for warning in nemesis.warnings:  # faults applied late or held short
                self.warnings.append(warning)
                self.listener.warning(warning)
            self.produced[name].update(**producer.record(), produce_seconds=round(time.monotonic() - t0, 2))
        if result is not None and result.fatal:
            self.produced[name]["client_fatal"] = result.fatal
        replaced = self.produced[name].get("instances_replaced")
        if replaced:  # the transactional workload carried on, as an application must; said out loud
            warning = (f"{name}: the producer failed for good {sum(replaced.values())} time(s) ("
                       + ", ".join(f"{e} x{n}" for e, n in sorted(replaced.items()))
                       + "); each time the workload made a new instance and went on, and the final read decides "
                       "what its open transaction did")
            self.warnings.append(warning)
            self.listener.warning(warning)
        if result is not None and result.error:
            self.produced[name]["producer_error"] = result.error
            named = f"{result.fatal}: " if result.fatal and result.fatal not in result.error else ""
            warning = (f"{name}: the producer failed for good after {result.sent:,} of {spec.workload.messages:,} "
                       f"sends ({named}{result.error}); what it sent is analysed")
            self.warnings.append(warning)
            self.listener.warning(warning)
        if watchdog.error:
            raise InfraError(f"{name}: {watchdog.error}")
        outside = stopped_by_another(result, self.stop.is_set(), spec.workload.messages)
        if outside:
            raise InfraError(f"{name}: {outside}")
        if group is not None and group.error:
            raise InfraError(f"{name}: {group.error}")
        if not accounting_holds(self.produced[name]):
            raise InfraError(f"{name}: delivery accounting broken: {self.produced[name]}")
        if nemesis.errors:
            raise InfraError(f"{name}: faults could not be applied: {'; '.join(nemesis.errors[:3])}")
        cluster.check_alive()
        self._phase(name, "healing")
        cluster.settle(topic, spec.topic.partitions)
        self._phase(name, "reading back")
        self._final_read(name, topic, spec.transactional(variant))
        if spec.transactional(variant):  # what the broker kept of aborted and fenced transactions, for the report
            save_log(self._session(), cluster.client, topic, spec.topic.partitions, self.folder.uncommitted_log_path(name),
                     isolation="read_uncommitted")
        if group is not None:
            self._finish_group(group, name)
        self._phase(name, "done")

    def _final_read(self, name: str, topic: str, transactional: bool) -> None:
        """The variant's final read, and what it proved (read.json: each partition's range, its ends held
        still); a read whose ends kept moving is said out loud (its absent values are then unseen). A
        transactional variant's read_committed read cannot reach a partition's end while an open transaction
        holds its last stable offset back: then too its absent values are unseen, not lost."""
        partitions = self.spec.topic.partitions
        behind = {}
        if transactional:
            stall, behind = lso_stall(self.cluster.client, topic, partitions)
            self.produced[name]["lso_stall_s"] = stall  # at least this long, when some are still behind:
            if behind:
                self.produced[name]["lso_stalled"] = {str(p): list(ends) for p, ends in sorted(behind.items())}
        read = final_read(self._session(), self.cluster.client, topic, partitions, self.folder.log_path(name))
        if behind:
            read["complete"] = False
            warning = (f"{name}: the last stable offset stayed below the high watermark for {stall} s on partition(s) "
                       + ", ".join(f"{p} ({lso} < {hw})" for p, (lso, hw) in sorted(behind.items()))
                       + " after the workload: an open transaction (a hanging one, if it never ends) hides what "
                       "follows it from read_committed readers; acknowledged values there are unseen, not lost, "
                       "and the verdict unknown unless the experiment expects unseen values")
            self.warnings.append(warning)
            self.listener.warning(warning)
        found = self.folder.log_ends(name)  # a broker's listed end may lag what a fetch returned
        read["end"] = [max(end, found.get(p, 0)) for p, end in enumerate(read["end"])]
        self.folder.write_read(name, read)
        if not read["complete"] and not behind:
            warning = (f"{name}: the partitions' ends kept moving over {read['reads']} final reads; acknowledged "
                       "values not found at a partition's tail are unseen (lost or late), and the verdict unknown")
            self.warnings.append(warning)
            self.listener.warning(warning)

    # -- the consumer workload (workload/consumers.py) ----------------------------------------------
    def _consumer_group(self, variant, topic: str) -> ConsumerGroup | None:
        """The variant's consumer group (not started), and its output topic when it writes one."""
        group_spec = self.spec.consumer_spec(variant)
        if group_spec is None:
            return None
        if group_spec.group_protocol == "consumer":
            apis = supported_apis(self.cluster.client)
            if apis is not None and CONSUMER_GROUP_HEARTBEAT not in apis:  # librdkafka would wait silently
                raise InfraError(f"{variant.name}: the broker does not support group.protocol=consumer (KIP-848: "
                                 "no ConsumerGroupHeartbeat in its ApiVersions); use group.protocol: classic")
        output = None
        if group_spec.strategy == "transactional":
            output = f"{topic}-out"
            create_topic(self.cluster.client, output, self.spec.topic.partitions, self.spec.topic.replication_factor,
                         config=self.spec.topic.config)
        self.produced[variant.name]["consumer"] = {
            "strategy": group_spec.strategy, "members": group_spec.members,
            "group.protocol": group_spec.group_protocol, "when": group_spec.when, "output": output}
        version = self.spec.client_version(variant)  # the members run it too (prepared before the run)
        java = ()
        if self.spec.member_implementation(variant) is not None:  # the Java client's own members
            env = ensure_foreign(*self.spec.client_library(variant))
            java = env.member
            self.produced[variant.name]["consumer"]["client"] = f"{env.name} {env.version}"
        return ConsumerGroup(self.cluster.client, topic, self.spec.topic.partitions, group_spec,
                             self.folder.sink_path(variant.name), lambda m: self.folder.member_log(variant.name, m),
                             f"{topic}-group", self.stop, output=output,
                             environ=ensure(version).environ() if version else None, java=java)

    def _faults_on_group(self, group: ConsumerGroup, nemesis: Nemesis, name: str) -> None:
        """consumer.when after: the producer has sent everything; the group starts and the fault timeline
        runs on it to its end (the planning window, or the last fault's end if later)."""
        self._phase(name, "consuming")
        group.start()
        group.serve(nemesis.workload)
        nemesis.start()
        ends = [f.at + f.duration for f in self.schedule] + [self.spec.planning_window or 0.0]
        self.stop.wait(max(ends))
        nemesis.finish(self.stop)

    def _finish_group(self, group: ConsumerGroup, name: str) -> None:
        """The group consumes to the end of the log as read back, stops, and its positions (and a
        transactional group's output) go into its sink."""
        self._phase(name, "draining the consumer group")
        ends = self.folder.log_ends(name)
        if not group.drain(ends, group.spec.drain_timeout):
            warning = (f"{name}: the consumer group did not reach the end of the log within "
                       f"{group.spec.drain_timeout:g} s of the faults' end; what it did not process is unconsumed")
            self.warnings.append(warning)
            self.listener.warning(warning)
        group.stop()
        if group.error:
            raise InfraError(f"{name}: {group.error}")
        if group.hung:
            closing = [m for m, what in group.hung.items() if what == "close()"]
            calls = {m: what for m, what in group.hung.items() if what != "close()"}
            if closing:
                self.produced[name]["consumer"]["hung_on_close"] = closing
            if calls:
                self.produced[name]["consumer"]["hung_in_call"] = calls
            said = [f"consumer {m}'s client hung: {what}" for m, what in calls.items()]
            if closing:
                said.insert(0, f"consumer(s) {', '.join(closing)} processed their last batch, then their client's "
                               "close() did not return within 30 s")
            warning = (f"{name}: {'; '.join(said)}; killed (a hang of the client under test, not the run's: what "
                       "they processed is analysed)")
            self.warnings.append(warning)
            self.listener.warning(warning)
        group.finish(ends)

    def _write_summary(self, status: str, reason: str) -> tuple[dict, OSError | None]:
        """(the summary written, the full disk that left only a minimal one or None)."""
        facts = {"seed": self.seed, "warnings": self.warnings,
                 "cluster": self.cluster.description if self.cluster else "", "started_at": self.started_at,
                 "ended_at": _now(), "reason": reason, "faults_planned": len(self.schedule),
                 "seconds": dict(self.seconds)}
        if self.shared_cluster is not None and self.cluster is not None:  # its brokers' logs are not in logs/
            facts["cluster_logs"] = str(self.cluster.files.logs)
        if getattr(self.spec.cluster, "broker_config", None):
            facts["broker_config"] = masked(self.spec.cluster.broker_config)
        variants = {}
        for v in self.spec.variants:
            if v.name not in self.produced:
                continue
            analysed = self.analysed.get(v.name)
            incomplete = "" if analysed else "not analysed: the run ended before its analysis"
            variants[v.name] = summary_mod.variant_entry({**self.produced[v.name], **(analysed or {})},
                                                          self.spec.rules(v.name), v.allow, incomplete)
        s = summary_mod.build(self.folder.run_id, self.spec.name, status, variants, facts)
        s.update(self._broker_data(s["verdict"]))
        try:
            self.folder.write_summary(s)
        except OSError as e:
            if e.errno != errno.ENOSPC:
                raise
            # A full disk: keep whatever fits, the status and the reason first; the run ends in exit 3.
            full = OSError(errno.ENOSPC, "No space left on device", str(self.folder.path))
            kept = {k: s[k] for k in ("broker_data",) if k in s}
            s = summary_mod.build(self.folder.run_id, self.spec.name, ERROR, {},
                                  {"reason": f"no space left on the device holding {self.folder.path}", **kept})
            self.folder.write_summary(s)
            return s, full
        return s, None

    def _broker_data(self, run_verdict: str) -> dict:
        """The brokers' log folders (a local Kafka's kafka-data/), once the run is judged: kept when its verdict is
        fail or --keep-data asked, {"broker_data": {"path", "why", "bytes"}} for the summary; else ({}) removed
        when the cluster is the run's own. A cluster a series keeps (cluster/kept.py) is told to keep them when it
        stops; a passed run's topics are deleted from it, a failed run's stay (kept.py)."""
        folder = getattr(self.cluster, "data_folder", None)
        if folder is None or not folder.is_dir():
            return {}
        why = [x for x, yes in (("the verdict is fail", run_verdict == verdict.FAIL),
                                ("--keep-data", self.keep_data)) if yes]
        if not why:
            if self.shared_cluster is None:
                self.cluster.discard_data()
            return {}
        self.cluster.keep_data = True  # a series' cluster: kept when it stops, rebuilt or closed
        return {"broker_data": {"path": str(folder.resolve()), "why": " and ".join(why), "bytes": _bytes_in(folder)}}


def _bytes_in(folder: Path) -> int:
    """The bytes of the files under `folder` (links not followed); a file removed meanwhile (a live cluster's
    segment deleted) counts nothing."""
    total = 0
    for base, _, files in os.walk(folder):
        for name in files:
            try:
                st = os.lstat(os.path.join(base, name))
            except OSError:
                continue
            total += st.st_size if stat.S_ISREG(st.st_mode) else 0
    return total


def _spark(master: str | None, log: Path):
    from .engine.session import SparkStarter

    return SparkStarter(master, log)


def _mask_broker_config(facts: dict) -> None:
    """A kept broker_config with its secrets masked: a summary written before they were keeps them no more."""
    if isinstance(facts.get("broker_config"), dict):
        facts["broker_config"] = masked(facts["broker_config"])


# Facts only the live run knew; kept when a stored run is analysed again.
KEPT_RUN_FACTS = ("seed", "cluster", "broker_config", "started_at", "ended_at", "faults_planned", "warnings", "reason",
                  "seconds", "cluster_logs", "broker_data")
KEPT_VARIANT_FACTS = ("produce_seconds", "topic", "features", "broker_config", "instances_replaced", "lso_stall_s",
                      "lso_stalled", "producer_error",
                      "client_fatal", "transactions", "consumer", "client")


def reanalyze(folder: RunFolder, spec: ExperimentSpec | None, spark_master: str | None = None,
              partial: bool = False, listener: Listener | None = None, spark=None) -> dict:
    """The summary of a stored run from its Parquet files alone (what `kafka-chaos analyze` writes).

    Without a spec (only with partial) no expectation applies and nothing is allowed. Every file is
    checked before Spark starts (RunFolderError naming the first problem); a Spark session is
    started and stopped here unless one is given.
    """
    listener = listener or Listener()
    folder.refuse_links_outside()
    old = folder.read_summary() or {}
    names = [v.name for v in spec.variants] if spec else folder.variants()
    inputs = check_inputs(folder, names, partial, spec.topic.partitions if spec else None)
    from .engine.session import spark_session, stop_session

    if spark is None:
        folder.logs.mkdir(exist_ok=True)  # a folder of an older release may have none
    session = spark or spark_session(spark_master, folder.spark_log)
    done = False
    try:
        analysed = analyze_folder(session, folder, names, partial=partial, inputs=inputs,
                                  on_start=lambda names: [listener.phase(v, "analysing") for v in names])
        signals.check()  # one py4j swallowed: the stored summary is left as it was
        done = True
    finally:
        if spark is None:
            stop_session(session, keep_classes=done)
    variants = {}
    allow = {v.name: v.allow for v in spec.variants} if spec else {}
    for name, metrics in analysed.items():
        kept = {k: x for k, x in old.get("variants", {}).get(name, {}).items() if k in KEPT_VARIANT_FACTS}
        _mask_broker_config(kept)
        why = metrics.pop("incomplete", "")
        variants[name] = summary_mod.variant_entry({**kept, **metrics}, spec.rules(name) if spec else {},
                                                   allow.get(name, []), why)
    status = old.get("status", COMPLETE)
    if status not in (INTERRUPTED, ERROR):
        status = INCOMPLETE if any(v.get("incomplete") for v in variants.values()) else COMPLETE
    facts = {k: old[k] for k in KEPT_RUN_FACTS if k in old}
    _mask_broker_config(facts)
    s = summary_mod.build(old.get("run_id", folder.run_id), spec.name if spec else old.get("experiment", folder.run_id),
                          status, variants, facts)
    folder.write_summary(s)
    return s
