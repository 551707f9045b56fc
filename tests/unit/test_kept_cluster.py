"""One cluster kept for a series (harness/cluster/kept.py), over stand-in clusters (the real ProxiedCluster
state machine, fake brokers, a fake Toxiproxy and a fake admin client): started once, healed and checked
between runs, rebuilt when unhealthy (the reason said), an external one never rebuilt; and the series'
aggregate.json and page that list the rebuilds. Time is a counter: a 60 s wait takes none."""

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness import repeat
from harness.cluster.base import DOWN, PAUSED, RUNNING, ProxiedCluster
from harness.cluster.kept import KeptCluster, topics_of
from harness.exits import InfraError
from harness.procs import RUN_ENV, tag_run
from harness.report import write_aggregate_report
from harness.runfolder import SeriesFolder
from harness.spec import ExternalClusterSpec, LocalClusterSpec
from tests.unit.test_aggregate import run
from tests.unit.test_repeat import SPEC, fake_runs


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


class Future:
    def __init__(self, value=None, calls=None, what=None):
        self.value, self.calls, self.what = value, calls, what

    def result(self, timeout=None):
        if self.calls is not None:
            self.calls.append(self.what)
        return self.value


class Admin:
    """The admin calls the kept cluster makes: metadata, ends under both isolation levels, deletes, settings."""

    def __init__(self, cluster):
        self.cluster = cluster

    def list_topics(self, topic=None, timeout=None):
        c = self.cluster
        parts = {name: {p: SimpleNamespace(id=p, leader=0, replicas=[0], isrs=[] if (name, p) in c.under else [0])
                        for p in range(n)} for name, n in c.topics.items()}
        return SimpleNamespace(brokers={i: None for i in range(c.registered)},
                               topics={name: SimpleNamespace(error=None, partitions=ps) for name, ps in parts.items()})

    def list_offsets(self, request, isolation_level=None, request_timeout=None):
        committed = "COMMITTED" in str(isolation_level) and "UNCOMMITTED" not in str(isolation_level)
        return {tp: Future(SimpleNamespace(offset=self.cluster.lso.get((tp.topic, tp.partition), 10)
                                           if committed else 10)) for tp in request}

    def delete_topics(self, topics, operation_timeout=None):
        return {t: Future(None, self.cluster.calls, ("delete", t)) for t in topics}

    def incremental_alter_configs(self, resources):
        self.cluster.calls.append(("config", {e.name: e.value for e in resources[0].incremental_configs}))
        return {resources[0]: Future()}


class Toxi:
    def __init__(self, calls):
        self.calls, self.alive = calls, True

    def reset(self):
        self.calls.append(("reset",))

    def set_enabled(self, proxy, enabled):
        self.calls.append(("enabled", proxy, enabled))

    def answers(self):
        return self.alive


class Broker:
    def __init__(self, index, calls):
        self.index, self.calls, self.up, self.log_path = index, calls, True, f"broker-{index}.log"

    def start(self):
        self.calls.append(("start", self.index))
        self.up = True

    def kill(self):
        self.calls.append(("kill", self.index))
        self.up = False

    stop = kill

    def pause(self):
        self.calls.append(("pause", self.index))

    def resume(self):
        self.calls.append(("resume", self.index))

    def alive(self):
        return self.up


class StandIn(ProxiedCluster):
    """A started cluster of `brokers` fake brokers; `registered`, `under`, `lso` say what its metadata shows."""

    made: list["StandIn"] = []

    def __init__(self, spec, run_dir: Path):
        super().__init__(spec, run_dir)
        self.calls, self.started, self.stopped = [], False, 0
        self.registered, self.under, self.lso = spec.brokers, set(), {}
        self.topics = {"kc-a-000001": 3}
        StandIn.made.append(self)

    @property
    def description(self):
        return "stand-in"

    def up(self):
        self.started = True
        self.tag = os.environ.get(RUN_ENV)
        self.toxi = Toxi(self.calls)
        self.brokers = [Broker(i, self.calls) for i in range(self.spec.brokers)]
        self.states = [RUNNING] * len(self.brokers)
        self._admin = Admin(self)

    def _stop(self):
        self.stopped += 1

    def _proxy_alive(self):
        return self.toxi.alive


@pytest.fixture
def kept(tmp_path):
    StandIn.made = []
    clock = Clock()
    return KeptCluster(LocalClusterSpec(broker="kafka", brokers=3), tmp_path, make=StandIn, sleep=clock.sleep,
                       clock=clock)


def test_get_starts_one_cluster_in_a_folder_of_its_own_and_keeps_it(kept, tmp_path, monkeypatch):
    monkeypatch.setenv(RUN_ENV, "before")
    tag_run(tmp_path / "run")  # a run calls get() after tagging its processes with its folder
    first = kept.get()
    assert first.tag == str(first.files.path.resolve())  # the cluster's processes carry its folder
    assert os.environ[RUN_ENV] == str((tmp_path / "run").resolve())  # what the run starts next, the run's
    assert kept.get() is first and kept.starts == 1 and len(StandIn.made) == 1 and first.started
    assert first.files.path.parent == tmp_path and first.files.path.name.startswith("cluster-")
    assert first.files.logs.is_dir() and "cluster up" in kept.seconds


def test_restore_heals_every_fault_resumes_and_starts_brokers_and_keeps_a_healthy_cluster(kept):
    c = kept.get()
    c.cut(["broker-1"])
    c.states[1], c.states[2] = PAUSED, DOWN
    c.brokers[2].up = False
    c._restarted = True
    assert kept.restore(["kc-a-000001"]) is None
    assert ("reset",) in c.calls and ("resume", 1) in c.calls and ("start", 2) in c.calls
    assert c.states == [RUNNING] * 3 and not c._cuts and c.stopped == 0
    assert kept.get() is c and kept.rebuilds == [] and not any(x[0] == "delete" for x in c.calls)


def test_a_passed_runs_topics_are_deleted_a_failed_runs_kept(kept):
    c = kept.get()
    assert kept.restore(["kc-a-000001", "kc-a-000001-out"], delete=True) is None
    assert [x for x in c.calls if x[0] == "delete"] == [("delete", "kc-a-000001"), ("delete", "kc-a-000001-out")]


def test_a_variants_broker_settings_are_put_back(kept):
    c = kept.get()
    c.set_broker_config({"log.flush.interval.messages": "1", "unclean.leader.election.enable": None})
    c.calls.clear()
    assert kept.restore([]) is None
    assert [x for x in c.calls if x[0] == "config"] == [("config", {"log.flush.interval.messages": None})] * 3
    c.calls.clear()
    assert kept.restore([]) is None and not [x for x in c.calls if x[0] == "config"]  # once


@pytest.mark.parametrize("harm, reason", [
    (lambda c: setattr(c.brokers[0], "up", False), "rebuilt: broker 0 died outside the fault schedule; see broker-0.log"),
    (lambda c: setattr(c.toxi, "alive", False), "rebuilt: the Toxiproxy server stopped answering"),
    (lambda c: setattr(c, "registered", 2), "rebuilt: 2 of 3 brokers registered after 60 s"),
    (lambda c: c.under.add(("kc-a-000001", 1)), "rebuilt: topic kc-a-000001: partition 1 has ISR [] of replicas [0] "
                                                "after 60 s"),
    (lambda c: c.lso.update({("kc-a-000001", 2): 7}), "rebuilt: a transaction left open on kc-a-000001 partition 2 "
                                                      "(last stable offset 7 < high watermark 10) after 15 s"),
])
def test_an_unhealthy_cluster_is_taken_down_and_the_next_get_starts_a_fresh_one(kept, harm, reason):
    first = kept.get()
    assert kept.restore(["kc-a-000001"]) is None
    harm(first)
    got = kept.restore(["kc-a-000001"], delete=True)
    assert got.startswith(reason)
    assert kept.rebuilds == [{"after_run": 2, "reason": got}] and first.stopped == 1
    assert not any(x[0] == "delete" for x in first.calls)  # an unhealthy cluster's topics are evidence
    second = kept.get()
    assert second is not first and kept.starts == 2 and second.files.path != first.files.path
    assert kept.restore(["kc-a-000001"]) is None and len(kept.rebuilds) == 1


def test_a_broker_that_registers_again_within_the_bound_is_no_rebuild(kept):
    c = kept.get()
    c.registered = 2
    real = kept._sleep
    kept._sleep = lambda s: (real(s), setattr(c, "registered", 3))
    assert kept.restore([]) is None and kept.rebuilds == []


def test_an_external_cluster_is_never_rebuilt(tmp_path):
    StandIn.made = []
    clock = Clock()
    spec = ExternalClusterSpec(backend="external", bootstrap_servers="k:9092", brokers=3)
    kept = KeptCluster(spec, tmp_path, make=StandIn, sleep=clock.sleep, clock=clock)
    c = kept.get()
    c.registered = 1
    with pytest.raises(InfraError, match="the external cluster is not healthy after the run: 1 of 3 brokers"):
        kept.restore([])
    assert len(StandIn.made) == 1 and kept.rebuilds == [] and c.stopped == 0


def test_close_stops_it_once_and_is_safe_twice(kept):
    c = kept.get()
    kept.close()
    kept.close()
    assert c.stopped == 1 and kept.cluster is None
    assert kept.restore(["x"]) is None  # nothing to restore


def test_a_start_that_fails_is_tried_again_by_the_next_get(kept, monkeypatch):
    monkeypatch.setattr(StandIn, "up", lambda self: (_ for _ in ()).throw(InfraError("could not start")))
    with pytest.raises(InfraError):
        kept.get()
    assert kept.cluster is None and kept.restore([]) is None
    monkeypatch.undo()
    assert kept.get().started and kept.starts == 1


def test_topics_of_a_summary():
    s = {"variants": {"a": {"topic": "kc-a-1"}, "b": {"topic": "kc-b-1", "consumer": {"output": "kc-b-1-out"}},
                      "c": {"topic": "kc-c-1", "consumer": {"output": None}}}}
    assert topics_of(s) == ["kc-a-1", "kc-b-1", "kc-b-1-out", "kc-c-1"]
    assert topics_of(None) == [] and topics_of({}) == []


def test_the_series_lists_its_rebuilds_in_aggregate_json_and_its_runs_table(tmp_path):
    series = repeat.Series(SPEC, tmp_path, 3, first_seed=7)
    series.cluster = SimpleNamespace(rebuilds=[{"after_run": 2, "reason": "rebuilt: broker 0 died outside the fault "
                                                                          "schedule"}],
                                     seconds={"cluster up": 0.4, "restoring the cluster": 0.1})
    doc = series.execute(fake_runs(tmp_path, {0: run("x0", 0), 1: run("x0", 0), 2: run("x0", 0)}))
    stored = SeriesFolder(series.folder.path).read_aggregate()
    assert stored["rebuilds"] == [{"after_run": 2, "reason": "rebuilt: broker 0 died outside the fault schedule"}]
    assert stored["cluster_seconds"] == {"cluster up": 0.4, "restoring the cluster": 0.1} and doc == stored
    page = write_aggregate_report(series.folder).read_text()
    assert '<td class="l" data-rebuilt="2">rebuilt: broker 0 died outside the fault schedule</td>' in page
    assert 'id="kept-cluster"' in page and "1 time(s) it was not" in page


def test_a_series_whose_cluster_cannot_be_restored_stops_with_exit_3(tmp_path):
    series = repeat.Series(SPEC, tmp_path, 3, first_seed=7)
    runs = fake_runs(tmp_path, {0: run("x0", 0), 1: run("x0", 0), 2: run("x0", 0)})

    def run_one(index, seed, schedule):
        out = runs(index, seed, schedule)
        series.stopped = "the external cluster is not healthy after the run: 1 of 3 brokers registered"
        return out

    doc = series.execute(run_one)
    assert len(doc["runs"]) == 1 and doc["status"] == "incomplete" and doc["complete"] is False
    assert doc["stopped"].startswith("the external cluster") and int(series.exit_code) == 3
    assert "the series stopped: the external cluster" in write_aggregate_report(series.folder).read_text()
