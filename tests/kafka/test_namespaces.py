"""Brokers in network namespaces (cluster.network: namespaces) on real Apache Kafka: packet loss,
duplication and reordering on leaders' links, a one-way isolation of a leader, and nothing left behind after a run, after
Ctrl-C's clean-up or after kill -9 of the harness and the next start. Root only; without root (or ip / nft)
they skip, saying so."""

import re
import shutil
import signal
import subprocess
import sys

import psutil
import pytest
import yaml

from harness.cluster.netns import problems
from tests.integration.test_interrupts import wait_for
from tests.integration.test_quickstart import ROOT, SMALL, accounting, run_dirs
from tests.kafka.test_experiments import ok, run

pytestmark = pytest.mark.skipif(bool(problems()), reason="; ".join(problems()) or "-")

SPACED = {"backend": "local", "broker": "kafka", "brokers": 3, "network": "namespaces"}
PACKETS = {
    "name": "packets", "seed": 5, "cluster": SPACED, "topic": {"partitions": 3, "replication_factor": 3},
    "workload": {"messages": 16000, "rate": 2000},
    "producer": {"acks": "all", "linger.ms": 5, "request.timeout.ms": 1500, "socket.timeout.ms": 1500},
    "variants": [{"name": "idempotence-on", "producer": {"enable.idempotence": True}}],
    "faults": [{"kind": "packet-loss", "at": 1, "duration": 2, "percent": 10, "target": {"leader-of": 0}},
               {"kind": "isolate", "at": 3.5, "duration": 2, "direction": "out", "target": {"leader-of": 1}},
               {"kind": "packet-duplicate", "at": 6, "duration": 1.5, "percent": 10, "target": {"leader-of": 2}},
               {"kind": "packet-reorder", "at": 1.5, "duration": 2, "percent": 25, "delay_ms": 20,
                "target": {"leader-of": 2}}],
    "expectations": {"idempotence-on": {"duplicates": 0, "lost": 0}},
}


def _out(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True).stdout if shutil.which(cmd[0]) else ""


def network_state():
    """What a run could leave in this machine's own namespace: namespaces, links, firewall tables."""
    namespaces = sorted(line.split()[0] for line in _out("ip", "netns", "list").splitlines() if line.startswith("kc"))
    links = sorted(line.split()[1] for line in _out("ip", "-o", "link", "show").splitlines()
                   if line.split()[1].startswith("kc"))
    iptables = [re.sub(r" \[\d+:\d+\]", "", line)  # the chains' packet counters move on
                for line in _out("iptables-save").splitlines() if not line.startswith("#")]
    return namespaces, links, _out("nft", "list", "ruleset"), iptables


def test_packet_faults_and_a_one_way_isolation_on_real_kafka_leave_nothing_behind(tmp_path):
    before = network_state()
    r, summary, faults = run(tmp_path, PACKETS)
    ok(r, summary)
    v = summary["variants"]["idempotence-on"]
    assert (v["duplicates"], v["lost"]) == (0, 0) and accounting(v), v
    assert sorted(f["kind"] for f in faults) == ["isolate", "packet-duplicate", "packet-loss", "packet-reorder"]
    assert all(f["outcome"] == "healed" for f in faults), faults
    [reorder] = [f for f in faults if f["kind"] == "packet-reorder"]
    [counts] = reorder["effect"].values()  # what the queue did: some packets overtook the held ones
    assert counts["held"] > 0 and counts["sent_at_once"] > 0, counts
    [run_dir] = list(run_dirs(tmp_path / "reports"))
    log = (run_dir / "logs" / "network.log").read_text()
    rid = run_dir.name.rsplit("-", 1)[1]
    assert "numgen random mod 10000 < 1000 drop" in log and "dup to" in log  # loss, duplication
    assert "NFQUEUE --queue-num 1" in log and "iptables -t mangle -D PREROUTING" in log  # reordering
    assert "chain cut_out" in log and "chain cut_in" not in log  # one way
    assert f"ip netns exec kc{rid}-b" in log and "nft delete table netdev kc_packet_loss_0 -> 0" in log
    assert network_state() == before


@pytest.mark.nightly  # two runs, one killed: minutes
def test_after_kill_9_the_next_start_removes_what_the_run_left(tmp_path):
    before = network_state()
    exp = tmp_path / "long.yaml"
    exp.write_text(yaml.safe_dump({**PACKETS, "workload": {"messages": 400000, "rate": 2000}}))
    out = tmp_path / "reports"
    proc = subprocess.Popen([sys.executable, "-m", "harness", "run", str(exp), "--out", str(out)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        run_dir = wait_for(lambda: next(run_dirs(out), None) if out.exists() else None, what="the run folder")
        rid = run_dir.name.rsplit("-", 1)[1]
        ours = [f"kc{rid}-b0", f"kc{rid}-b1", f"kc{rid}-b2", f"kc{rid}-br"]
        wait_for(lambda: (run_dir / "logs" / "broker-2.log").exists() and set(ours) <= set(network_state()[0]),
                 timeout=180, what="the brokers' namespaces")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    wait_for(lambda: not [p for p in psutil.process_iter(["cmdline"])
                          if str(run_dir) in " ".join(p.info["cmdline"] or [])], timeout=60,
             what="the brokers to die with the harness")
    assert set(ours) <= set(network_state()[0])  # a killed harness cleans nothing: the next start must
    small = tmp_path / "small.yaml"
    small.write_text(yaml.safe_dump({**SMALL, "faults": []}))
    again = subprocess.run([sys.executable, "-m", "harness", "run", str(small), "--out", str(tmp_path / "next")],
                           cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    assert f"removed the network namespaces and links of run {rid}" in again.stdout + again.stderr
    assert network_state() == before
