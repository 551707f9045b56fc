"""One cluster kept for many runs (a --repeat series, shrink's tries, an exploration), as SharedSpark keeps
one Spark session: a cluster start (a second on Tansu, tens of seconds for Kafka nodes) paid once.

    kept = KeptCluster(spec.cluster, series_folder.path)
    run = Run(..., cluster=kept.get)         # or kept.get(): starts it the first time (InfraError as up())
    reason = kept.restore(topics_of(summary), delete=summary["verdict"] == "pass")
    kept.close()                             # in a finally: nothing left running

Each run gets a topic of its own (kc-<variant>-<run id>). After a run, `restore` heals every fault, resumes
paused and starts stopped brokers, puts back the broker settings and feature levels variants changed
(base.ProxiedCluster.reset_settings), then checks that the cluster is healthy: every process alive, every
broker registered in the metadata, no partition of any topic under-replicated or leaderless, no transaction left
open on the run's topics (each partition's last stable offset equal to its high watermark). A healthy cluster is
kept (restore returns None), and a passed run's topics are deleted, so a long series keeps a small cluster (a
failed run's are kept: their log segments are evidence). An unhealthy one is taken down and a fresh one is started
by the next `get()`; restore returns the reason, "rebuilt: broker 0 died outside the fault schedule; see ...",
and `rebuilds` lists every one. An external cluster (backend external) is never rebuilt: an unhealthy one is
InfraError.

The cluster lives in a folder of its own, `<folder>/cluster-<6 hex>/` (a new one for each rebuild: its logs/
holds the broker, proxy and admin logs, a local Kafka's kafka-data/ its data until it stops, or after when a run
on it failed or asked --keep-data: run.py sets the cluster's keep_data); a run's summary
names it as `cluster_logs`, since its own logs/ then holds only the clients'. The processes it starts carry that
folder in KAFKA_CHAOS_RUN (procs.tagged; a broker a fault restarts carries the run's), and die with the harness like
a run's (procs.py).

Every experiment can share a cluster across runs: a variant's `features` and `broker_config` are put back after
each run (and a run reads the levels it falls back to from the restored cluster); a killed Tansu broker comes back
empty, which only loses earlier runs' topics; a Compose cluster is shared like any other. What cannot be put back
(a broker that will not start, a transaction a run left hanging on purpose) is what the health check sees, and
the cluster is rebuilt: a series never runs on a cluster another run left broken.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Callable

from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import OffsetSpec

from .. import procs
from ..exits import InfraError, one_line
from . import Cluster, ClusterSpec, make_cluster
from .topic import replication_problem

HEALTHY_WITHIN_S = 60  # brokers registered and partitions replicated again after healing
SETTLED_WITHIN_S = 15  # an open transaction ended (the final read already waited as long for it)


def topics_of(summary: dict | None) -> list[str]:
    """The topics a run created, from its summary: each variant's topic and its consumer group's output."""
    out = []
    for v in ((summary or {}).get("variants") or {}).values():
        if isinstance(v, dict) and isinstance(v.get("topic"), str):
            out.append(v["topic"])
        output = (v.get("consumer") or {}).get("output") if isinstance(v, dict) else None
        if isinstance(output, str):
            out.append(output)
    return out


class KeptCluster:
    def __init__(self, spec: ClusterSpec, folder: Path, make: Callable[[ClusterSpec, Path], Cluster] = make_cluster,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic):
        self.spec, self.folder = spec, Path(folder)
        self._make, self._sleep, self._clock = make, sleep, clock
        self.cluster: Cluster | None = None
        self.starts = 0  # clusters started (1 + the rebuilds that were started again)
        self.restores = 0  # restore calls: a rebuild's `after_run`
        self.rebuilds: list[dict] = []  # {"after_run": the restore's number from 1, "reason": why}
        self.seconds: dict[str, float] = {}  # wall seconds spent starting, restoring and stopping clusters

    @property
    def external(self) -> bool:
        return self.spec.backend == "external"

    def get(self) -> Cluster:
        """The kept cluster, started the first time (and after a rebuild); InfraError when it cannot start
        (then the next get() tries again)."""
        if self.cluster is None:
            t = self._clock()
            files = self.folder / f"cluster-{uuid.uuid4().hex[:6]}"
            (files / "logs").mkdir(parents=True)
            cluster = self._make(self.spec, files)
            try:
                with procs.tagged(files):  # its processes carry its folder; what the run starts, the run's
                    cluster.up()  # takes itself down when it fails
            finally:
                self._add("cluster up", t)
            self.cluster = cluster
            self.starts += 1
        return self.cluster

    def restore(self, topics: list[str], delete: bool = False) -> str | None:
        """After a run on the kept cluster: heal, put back, check (module docstring). None when the cluster is
        healthy and kept; else the reason it was taken down, "rebuilt: ..." (the next get() starts a fresh
        one); InfraError for an external cluster that is not healthy. delete: remove `topics` from a healthy
        cluster (the caller's run passed)."""
        self.restores += 1
        if self.cluster is None:  # never started, or its start failed: nothing to restore
            return None
        t = self._clock()
        try:
            problem = self._restore(self.cluster, topics)
            if problem is None and delete:
                self._delete(self.cluster, topics)
        finally:
            self._add("restoring the cluster", t)
        if problem is None:
            return None
        if self.external:
            raise InfraError(f"the external cluster is not healthy after the run: {problem}")
        reason = f"rebuilt: {problem}"
        self.rebuilds.append({"after_run": self.restores, "reason": reason})
        self._down()
        return reason

    def close(self) -> None:
        """Stop the kept cluster; safe to call twice."""
        self._down()

    # -- inside ----------------------------------------------------------------------------------------
    def _down(self) -> None:
        cluster, self.cluster = self.cluster, None
        if cluster is not None:
            t = self._clock()
            try:
                cluster.down()
            finally:
                self._add("cluster down", t)

    def _add(self, stage: str, since: float) -> None:
        self.seconds[stage] = round(self.seconds.get(stage, 0.0) + self._clock() - since, 2)

    def _restore(self, cluster: Cluster, topics: list[str]) -> str | None:
        """Heal and put back, then the first health problem found within the bounds, or None."""
        try:
            cluster.check_alive()  # a process that died outside the schedule: nothing to heal
            cluster.heal_all()
            cluster.reset_settings()
        except InfraError as e:
            return str(e)
        except Exception as e:  # a broker that would not start again, a proxy that does not answer
            return f"healing failed: {one_line(e)}"
        problem = self._wait(lambda: self._unhealthy(cluster), HEALTHY_WITHIN_S)
        if problem is None:
            problem = self._wait(lambda: self._open_transaction(cluster, topics), SETTLED_WITHIN_S)
        return problem

    def _wait(self, check: Callable[[], str | None], within: float) -> str | None:
        """check() until it finds nothing (None), or its last problem once `within` seconds have passed."""
        deadline = self._clock() + within
        while True:
            problem = check()
            if problem is None:
                return None
            if self._clock() >= deadline:
                return f"{problem} after {within:.0f} s"
            self._sleep(0.2)

    def _unhealthy(self, cluster: Cluster) -> str | None:
        try:
            cluster.check_alive()
            md = cluster.metadata(timeout=10)
        except InfraError as e:
            return str(e)
        if len(md.brokers) < cluster.broker_count:
            return f"{len(md.brokers)} of {cluster.broker_count} brokers registered"
        for name, t in sorted(md.topics.items()):
            if t.error is not None or name.startswith("__"):
                continue  # a topic being deleted; Kafka's own topics replicate on their own terms
            problem = replication_problem(md, name, len(t.partitions))
            if problem is not None:
                return f"topic {name}: {problem}"
        return None

    def _open_transaction(self, cluster: Cluster, topics: list[str]) -> str | None:
        """A partition of the run's topics whose last stable offset is below its high watermark, or None."""
        md = cluster.metadata(timeout=10)
        partitions = [TopicPartition(name, p) for name in topics if name in md.topics and md.topics[name].error is None
                      for p in sorted(md.topics[name].partitions)]
        if not partitions:
            return None
        admin = cluster.admin()
        try:
            asked = [admin.list_offsets({tp: OffsetSpec.latest() for tp in partitions}, isolation_level=level,
                                        request_timeout=10)
                     for level in (IsolationLevel.READ_COMMITTED, IsolationLevel.READ_UNCOMMITTED)]
            for tp in partitions:
                lso, hw = (futures[tp].result().offset for futures in asked)
                if lso < hw:
                    return (f"a transaction left open on {tp.topic} partition {tp.partition} (last stable offset "
                            f"{lso} < high watermark {hw})")
        except KafkaException as e:
            return f"no offsets of the run's topics: {e.args[0].str()}"
        return None

    def _delete(self, cluster: Cluster, topics: list[str]) -> None:
        """Delete a passed run's topics; one that cannot be deleted stays (it only takes room)."""
        if not topics:
            return
        try:
            for future in cluster.admin().delete_topics(topics, operation_timeout=30).values():
                future.result(timeout=30)
        except KafkaException:
            pass
