"""--repeat 2 end to end on the embedded default: two ordinary run folders, one series folder with
aggregate.json (intervals), its page, one JUnit suite per run, and the runs index listing the series; one
cluster for the whole series, rebuilt when a broker died between runs; and a series in the test's own process,
which must not keep a descriptor of a finished run."""

import json
import xml.etree.ElementTree as ET

import pytest
import yaml

from tests.integration.test_quickstart import SMALL, kafka_chaos

TINY = {**SMALL, "name": "tiny-repeat", "workload": {"messages": 8000, "rate": 8000},
        "faults": [{"kind": "lost-acks", "every": 0.4, "jitter": 0.1, "duration": 0.25, "start": 0.2}]}


def test_repeat_two_runs_writes_an_aggregate(tmp_path):
    exp = tmp_path / "tiny.yaml"
    exp.write_text(yaml.safe_dump(TINY))
    out = tmp_path / "reports"
    r = kafka_chaos("run", str(exp), "--out", str(out), "--repeat", "2", "--junit", str(tmp_path / "junit.xml"))
    assert r.returncode == 0, r.stdout + r.stderr
    series = [p for p in out.iterdir() if (p / "aggregate.json").exists()]
    runs = [p for p in out.iterdir() if (p / "summary.json").exists()]
    assert len(series) == 1 and len(runs) == 2
    assert f"aggregate: {series[0] / 'aggregate.json'}" in r.stdout
    doc = json.loads((series[0] / "aggregate.json").read_text())
    assert doc["status"] == "complete" and doc["seeds"] == [11, 12] and doc["verdicts"] == {"pass": 2}
    assert {x["run_id"] for x in doc["runs"]} == {p.name for p in runs}
    off = doc["variants"]["idempotence-off"]
    assert off["runs"] == 2 and off["acked"] == sum(json.loads((p / "summary.json").read_text())
                                                    ["variants"]["idempotence-off"]["acked"] for p in runs)
    dup = off["metrics"]["duplicates"]
    assert dup["runs_with"] == 2 and len(dup["ci95"]) == 2 and dup["ci95"][0] <= dup["rate_per_100k"] <= dup["ci95"][1]
    assert doc["variants"]["idempotence-on"]["metrics"]["duplicates"]["max"] == 0
    assert 'id="aggregate"' in (series[0] / "index.html").read_text()
    assert series[0].name in (out / "index.html").read_text()
    suites = ET.parse(tmp_path / "junit.xml").getroot().findall("testsuite")
    assert [s.get("name") for s in suites] == ["tiny-repeat #1 (seed 11)", "tiny-repeat #2 (seed 12)"]
    # one cluster for the series: its logs in the series folder, the runs' logs/ only their clients'
    clusters = list(series[0].glob("cluster-*"))
    assert len(clusters) == 1 and (clusters[0] / "logs" / "broker-0.log").exists() and doc["rebuilds"] == []
    for p in runs:
        assert json.loads((p / "summary.json").read_text())["cluster_logs"] == str(clusters[0] / "logs")
        assert not (p / "logs" / "broker-0.log").exists() and (p / "logs" / "producer-idempotence-off.log").exists()
    assert set(doc["cluster_seconds"]) == {"cluster up", "restoring the cluster", "cluster down"}


def test_ctrl_c_stops_the_series_and_keeps_the_aggregate_of_what_ran(tmp_path):
    import signal
    import subprocess
    import sys

    from tests.integration.test_interrupts import wait_for
    from tests.integration.test_quickstart import ROOT, processes_of

    exp = tmp_path / "tiny.yaml"
    exp.write_text(yaml.safe_dump({**TINY, "workload": {"messages": 16000, "rate": 8000}}))
    out = tmp_path / "reports"
    proc = subprocess.Popen([sys.executable, "-m", "harness", "run", str(exp), "--out", str(out), "--repeat", "3"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    second = wait_for(lambda: out.exists() and len([p for p in out.iterdir() if (p / "logs").exists()]) == 2 and
                      [p for p in out.iterdir() if (p / "faults.jsonl").exists() and
                       not (p / "summary.json").exists()], timeout=180, what="the second run producing")[0]
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, output
    series = [p for p in out.iterdir() if (p / "aggregate.json").exists()]
    doc = json.loads((series[0] / "aggregate.json").read_text())
    assert doc["status"] == "interrupted" and doc["complete"] is False and doc["requested"] == 3
    assert [r["status"] for r in doc["runs"]] == ["complete", "interrupted"] and doc["variants"]["idempotence-off"]["runs"] == 1
    assert json.loads((second / "summary.json").read_text())["status"] == "interrupted"
    assert "interrupted after 2 of 3 runs; the aggregate covers the 1 complete one(s)" in output
    assert processes_of(second) == []
    assert [processes_of(c) for c in series[0].glob("cluster-*")] == [[]]  # the series' kept cluster stopped too


KILL_BETWEEN_RUNS = """
import json, sys
from harness import cli
from harness.cluster import kept

pids, restore = [], kept.KeptCluster.restore
get = kept.KeptCluster.get

def counted_get(self):
    cluster = get(self)
    pids.append(cluster.brokers[0].proc.pid)
    return cluster

def killing_restore(self, topics, delete=False):
    if self.restores == 0:  # after run 1: its broker dies outside any fault schedule
        self.cluster.brokers[0].proc.kill()
        self.cluster.brokers[0].proc.wait()
    return restore(self, topics, delete)

kept.KeptCluster.get, kept.KeptCluster.restore = counted_get, killing_restore
try:
    cli.main(["run", sys.argv[1], "--out", sys.argv[2], "--repeat", "3"])
finally:
    print(json.dumps({"pids": pids}))
"""


def test_one_cluster_for_the_series_rebuilt_when_a_broker_died_between_runs(tmp_path):
    """The series keeps one cluster (the same broker process for every run); a broker killed after run 1 (outside
    the fault schedule) makes the series take it down, say why in yellow and in aggregate.json, and run 2 and 3
    on a fresh cluster, which then again serves both."""
    import subprocess
    import sys

    from tests.integration.test_quickstart import ROOT, processes_of

    exp = tmp_path / "tiny.yaml"
    exp.write_text(yaml.safe_dump(TINY))
    out = tmp_path / "reports"
    r = subprocess.run([sys.executable, "-c", KILL_BETWEEN_RUNS, str(exp), str(out)], cwd=ROOT, capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    pids = json.loads(r.stdout.strip().splitlines()[-1])["pids"]
    assert len(pids) == 3 and pids[0] != pids[1] == pids[2], pids  # run 1's cluster, then one for runs 2 and 3
    series = [p for p in out.iterdir() if (p / "aggregate.json").exists()][0]
    doc = json.loads((series / "aggregate.json").read_text())
    assert doc["status"] == "complete" and doc["verdicts"] == {"pass": 3}
    assert [b["after_run"] for b in doc["rebuilds"]] == [1], doc["rebuilds"]
    assert doc["rebuilds"][0]["reason"].startswith("rebuilt: broker 0 died outside the fault schedule")
    assert "run 1/3: the cluster was not healthy after it, rebuilt: broker 0 died outside the fault schedule" in r.stdout
    clusters = sorted(series.glob("cluster-*"), key=lambda c: c.stat().st_mtime_ns)
    assert len(clusters) == 2
    logs = [json.loads((out / run["run_id"] / "summary.json").read_text())["cluster_logs"] for run in doc["runs"]]
    assert logs[1] == logs[2] != logs[0] and {logs[0], logs[1]} == {str(c / "logs") for c in clusters}
    assert 'data-rebuilt="1">rebuilt: broker 0 died' in (series / "index.html").read_text()
    assert [processes_of(c) for c in clusters] == [[], []]


SERIES_IN_ONE_PROCESS = """
import json, os, sys
from pathlib import Path
from harness import cli
from harness.preflight import prepare
from harness.repeat import Series

exp, out = Path(sys.argv[1]), Path(sys.argv[2])
spec, _ = prepare(exp, None, None, None)
open_after = []

def run_one(index, seed, schedule):
    folder, summary, failure, _ = cli._run_once(spec, schedule, out, seed, None, None, None, brief=True)
    open_after.append(len(os.listdir("/proc/self/fd")))
    return folder, summary, failure

series = Series(spec, out, 4, first_seed=1)
series.execute(run_one)
print(json.dumps({"exit": int(series.exit_code), "open_after": open_after}))
"""


@pytest.mark.nightly  # a minute: a series of runs
def test_a_series_in_one_process_keeps_no_descriptor_of_a_finished_run(tmp_path):
    """Every run of a series runs in the harness's process: a log file, client or sink a run leaves
    open would pile up (3 descriptors a run did, until a long series ran out of them). The series runs
    in a process of its own, so its Spark JVM is not the one other tests of this worker share."""
    import subprocess
    import sys
    from pathlib import Path

    exp = tmp_path / "fd.yaml"
    exp.write_text(yaml.safe_dump({"name": "fd", "seed": 1, "topic": {"partitions": 1},
                                   "workload": {"messages": 50}, "variants": [{"name": "a"}]}))
    root = Path(__file__).resolve().parents[2]
    r = subprocess.run([sys.executable, "-c", SERIES_IN_ONE_PROCESS, str(exp), str(tmp_path / "reports")],
                       cwd=root, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    open_after = got["open_after"]
    assert got["exit"] == 0 and len(open_after) == 4, got
    # Run 1 starts what lives as long as the process (Spark's JVM and its connections), so runs 2 and 4
    # are compared. One descriptor of slack for a connection that comes and goes (py4j's pool); a leak of
    # one descriptor a run shows as 2.
    assert open_after[3] <= open_after[1] + 1, open_after
